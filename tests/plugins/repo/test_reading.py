"""Reading a pinned repository through TaskContext and ContextReader, across commits."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from taskctx_repo import PinnedRepository

from taskctx import (
    ContextBudget,
    ContextReadIntent,
    ContextRef,
    PluginHost,
    PolicyError,
    TaskContext,
)
from taskctx.index import SyncReport
from taskctx.model import (
    CoverageOutcome,
    CoverageStatus,
    EnumerationRequest,
    OmissionReason,
    SourceDescriptor,
)
from tests.plugins.repo.conftest import (
    FILES,
    PinFactory,
    Project,
    commit_all,
    make_repo,
    png_bytes,
    write_files,
)

BINDING = "repo"


@pytest.fixture
def contexts(tmp_path: Path, reading_host: PluginHost) -> Iterator[list[TaskContext]]:
    """TaskContexts made by a test, their indexes closed at teardown."""
    made: list[TaskContext] = []
    yield made
    for context in made:
        context.index.close()


def new_context(
    contexts: list[TaskContext], host: PluginHost, repo: PinnedRepository, state: Path
) -> TaskContext:
    """A TaskContext with ``repo``'s source attached as ``repo``."""
    context = TaskContext("repo-task", host=host, state_dir=state)
    context.attach(repo.source(), binding_id=BINDING)
    contexts.append(context)
    return context


def sync_report(context: TaskContext) -> SyncReport:
    """What the context's last index sync of the ``repo`` binding did."""
    state = context.partition_state(context.bindings[BINDING])
    assert state.last_sync is not None
    return state.last_sync


def descriptors(repo: PinnedRepository) -> dict[str, SourceDescriptor]:
    """Every descriptor of ``repo``'s source, by path."""
    request = EnumerationRequest(page_size=10_000)
    page = asyncio.run(repo.source().async_enumerate_descriptors(request))
    return {d.path: d for d in page.descriptors}


def test_a_query_finds_the_pinned_content(
    project: Project,
    pin: PinFactory,
    reading_host: PluginHost,
    contexts: list[TaskContext],
    tmp_path: Path,
) -> None:
    """A ranked read delivers the matching file of the commit, with honest coverage."""
    repo = pin(project.path, project.first, ["docs/**", "src/**"], host=reading_host)
    context = new_context(contexts, reading_host, repo, tmp_path / "ctx")
    assert context.index_provider.name == "fts"
    package = context.reader("agent").read(ContextReadIntent(query="pip install upload-service"))
    assert package.blocks[0].ref.path == "docs/guide.md"
    block = package.blocks[0]
    assert block.source_kind == "pinned_repository"
    assert block.binding_id == BINDING
    assert "pip install upload-service" in block.content
    coverage = package.source_coverage[BINDING]
    assert coverage.outcome is CoverageOutcome.MATCHED
    assert coverage.considered is not None
    assert coverage.considered >= 1
    assert coverage.revision == repo.revision
    assert package.snapshot.sources[BINDING] == repo.revision


def test_unauthorised_files_are_never_found(
    project: Project,
    pin: PinFactory,
    reading_host: PluginHost,
    contexts: list[TaskContext],
    tmp_path: Path,
) -> None:
    """Content outside the globs matches nothing: it was never enumerated or indexed."""
    repo = pin(project.path, project.first, ["docs/**"], host=reading_host)
    context = new_context(contexts, reading_host, repo, tmp_path / "ctx")
    package = context.reader("agent").read(ContextReadIntent(query="do not read me"))
    assert all(not b.ref.path.startswith("secrets/") for b in package.blocks)
    assert "do not read me" not in package.render()
    explicit = ContextRef(binding=BINDING, path="secrets/token.txt")
    with pytest.raises(PolicyError):
        context.reader("agent").read(ContextReadIntent(explicit_refs=(explicit,)))


def test_a_query_that_matches_nothing_says_so(
    project: Project,
    pin: PinFactory,
    reading_host: PluginHost,
    contexts: list[TaskContext],
    tmp_path: Path,
) -> None:
    """No match is reported as no_match_in_scope, not as an empty success."""
    repo = pin(project.path, project.first, host=reading_host)
    context = new_context(contexts, reading_host, repo, tmp_path / "ctx")
    package = context.reader("agent").read(ContextReadIntent(query="zebra quantum marmalade"))
    assert package.blocks == ()
    coverage = package.source_coverage[BINDING]
    assert coverage.outcome is CoverageOutcome.NO_MATCH_IN_SCOPE
    assert coverage.considered == 0


def test_everything_fits_and_coverage_is_complete(
    project: Project,
    pin: PinFactory,
    reading_host: PluginHost,
    contexts: list[TaskContext],
    tmp_path: Path,
) -> None:
    """Without a query every authorised file is considered; in budget, all are delivered."""
    repo = pin(project.path, project.first, ["src/**"], host=reading_host)
    context = new_context(contexts, reading_host, repo, tmp_path / "ctx")
    package = context.reader("agent").read(ContextReadIntent())
    coverage = package.source_coverage[BINDING]
    assert [b.ref.path for b in package.blocks] == ["src/app.py", "src/empty.py", "src/pkg/util.py"]
    assert package.blocks[1].content == ""
    assert (coverage.considered, coverage.delivered, coverage.omitted) == (3, 3, 0)
    assert coverage.status is CoverageStatus.COMPLETE
    assert package.omissions == ()


def test_a_tight_budget_reports_what_was_left_out(
    project: Project,
    pin: PinFactory,
    reading_host: PluginHost,
    contexts: list[TaskContext],
    tmp_path: Path,
) -> None:
    """One block of budget: the rest are omissions, coverage partial, a next page exists."""
    repo = pin(project.path, project.first, ["docs/**", "*.md"], host=reading_host)
    context = new_context(contexts, reading_host, repo, tmp_path / "ctx")
    reader = context.reader("agent", budget=ContextBudget(max_chars=4000, max_blocks=1))
    package = reader.read(ContextReadIntent())
    coverage = package.source_coverage[BINDING]
    assert len(package.blocks) == 1
    assert coverage.status is CoverageStatus.PARTIAL
    assert coverage.considered == 3
    assert package.has_more
    following = reader.read_next(package.cursor)
    assert following.blocks[0].ref != package.blocks[0].ref


def test_scoped_explicit_refs_read_a_section(
    project: Project,
    pin: PinFactory,
    reading_host: PluginHost,
    contexts: list[TaskContext],
    tmp_path: Path,
) -> None:
    """An explicit ``section:`` ref delivers that heading's section, required and complete."""
    repo = pin(project.path, project.first, host=reading_host)
    context = new_context(contexts, reading_host, repo, tmp_path / "ctx")
    section = ContextRef(binding=BINDING, path="docs/guide.md", scope="section:Install")
    lines = ContextRef(binding=BINDING, path="notes.txt", scope="lines:2-3")
    package = context.reader("agent").read(ContextReadIntent(explicit_refs=(section, lines)))
    by_ref = {b.ref: b for b in package.blocks}
    assert by_ref[section].content.startswith("## Install")
    assert "The extras add retries." in by_ref[section].content
    assert "## Usage" not in by_ref[section].content
    assert by_ref[section].required
    assert by_ref[section].scope == "section:Install"
    assert by_ref[lines].content == "two\nthree\n"


def test_media_through_the_reader_is_reference_only(
    tmp_path: Path,
    pin: PinFactory,
    reading_host: PluginHost,
    contexts: list[TaskContext],
) -> None:
    """Explicit refs to an image, an archive and a binary become omissions, never text."""
    files: dict[str, str | bytes] = {
        "logo.png": png_bytes(),
        "bundle.zip": b"PK\x03\x04" + bytes(40),
        "blob.bin": bytes(range(256)),
        "notes.md": "# Notes\n\nThe logo is in logo.png.\n",
    }
    make_repo(tmp_path / "media", files)
    repo = pin(tmp_path / "media", host=reading_host)
    context = new_context(contexts, reading_host, repo, tmp_path / "ctx")
    paths = ("logo.png", "bundle.zip", "blob.bin")
    refs = tuple(ContextRef(binding=BINDING, path=p) for p in paths)
    package = context.reader("agent").read(ContextReadIntent(query="logo", explicit_refs=refs))
    for ref in refs:
        (omission,) = (o for o in package.omissions if o.ref == ref and o.required)
        assert omission.reason in {OmissionReason.REFERENCE_ONLY, OmissionReason.UNSUPPORTED_MEDIA}
    assert {b.ref.path for b in package.blocks} <= {"notes.md"}
    assert "\x89PNG" not in package.render()


def test_a_second_commit_reindexes_only_the_changed_file(
    project: Project,
    pin: PinFactory,
    reading_host: PluginHost,
    contexts: list[TaskContext],
    tmp_path: Path,
) -> None:
    """A new pin at the next commit, same binding and state: the sync updates one document."""
    first = pin(project.path, project.first, host=reading_host)
    context = new_context(contexts, reading_host, first, tmp_path / "ctx-1")
    context.reader("agent").read(ContextReadIntent(query="upload"))
    report = sync_report(context)
    assert (report.added, report.updated, report.removed) == (len(FILES), 0, 0)

    write_files(project.path, {"notes.txt": "the archive upload now retries five times\n"})
    second_commit = commit_all(project.path, "second")
    second = pin(project.path, second_commit, host=reading_host)
    assert second.identity == first.identity
    later = new_context(contexts, reading_host, second, tmp_path / "ctx-2")
    package = later.reader("agent").read(ContextReadIntent(query="retries five times"))
    report = sync_report(later)
    assert report.mode == "diff"
    assert (report.added, report.updated, report.removed) == (0, 1, 0)
    assert report.unchanged == len(FILES) - 1
    assert package.blocks[0].ref.path == "notes.txt"
    assert "five times" in package.blocks[0].content
    assert package.snapshot.sources[BINDING] == second.revision
    # the old text is gone from the index at the new commit
    old = later.reader("agent").read(ContextReadIntent(query="three four"))
    assert all(b.ref.path != "notes.txt" for b in old.blocks)


def test_unchanged_files_keep_their_content_versions(project: Project, pin: PinFactory) -> None:
    """Across two commits, only the changed file's descriptor differs."""
    before = descriptors(pin(project.path, project.first))
    write_files(project.path, {"docs/guide.md": "# Guide\n\nRewritten.\n", "added.txt": "new\n"})
    (project.path / "src" / "empty.py").unlink()
    after = descriptors(pin(project.path, commit_all(project.path, "second")))
    assert set(after) == set(before) - {"src/empty.py"} | {"added.txt"}
    for path in set(before) & set(after):
        changed = before[path].content_version != after[path].content_version
        assert changed is (path == "docs/guide.md"), path
        if not changed:
            assert before[path] == after[path]


def test_added_and_removed_files_are_synced(
    project: Project,
    pin: PinFactory,
    reading_host: PluginHost,
    contexts: list[TaskContext],
    tmp_path: Path,
) -> None:
    """A commit that adds one file and deletes another adds and removes one document each."""
    first = pin(project.path, project.first, host=reading_host)
    new_context(contexts, reading_host, first, tmp_path / "ctx-1").sync_index()
    write_files(project.path, {"docs/faq.md": "# FAQ\n\nWhy does the upload stall?\n"})
    (project.path / "notes.txt").unlink()
    second = pin(project.path, commit_all(project.path, "second"), host=reading_host)
    reports = new_context(contexts, reading_host, second, tmp_path / "ctx-2").sync_index()
    report = reports[BINDING]
    assert (report.added, report.updated, report.removed) == (1, 0, 1)
    assert report.unchanged == len(FILES) - 1


def test_going_back_to_the_first_commit_reuses_the_index(
    project: Project,
    pin: PinFactory,
    reading_host: PluginHost,
    contexts: list[TaskContext],
    tmp_path: Path,
) -> None:
    """A pin back at an earlier commit updates just the blobs that differ, in either direction."""
    first = pin(project.path, project.first, host=reading_host)
    new_context(contexts, reading_host, first, tmp_path / "ctx-1").sync_index()
    write_files(project.path, {"notes.txt": "changed\n"})
    second = pin(project.path, commit_all(project.path, "second"), host=reading_host)
    new_context(contexts, reading_host, second, tmp_path / "ctx-2").sync_index()
    back = pin(project.path, project.first, host=reading_host)
    report = new_context(contexts, reading_host, back, tmp_path / "ctx-3").sync_index()[BINDING]
    assert (report.added, report.updated, report.removed) == (0, 1, 0)
    assert back.cat.started == 1  # only the one blob's text was read again


def test_the_same_commit_in_a_new_process_reads_no_blob_to_sync(
    project: Project,
    pin: PinFactory,
    reading_host: PluginHost,
    contexts: list[TaskContext],
    tmp_path: Path,
) -> None:
    """A new PinnedRepository and TaskContext at an indexed commit index nothing again."""
    first = pin(project.path, project.first, host=reading_host)
    new_context(contexts, reading_host, first, tmp_path / "ctx-1").sync_index()
    again = pin(project.path, project.first, host=reading_host)
    report = new_context(contexts, reading_host, again, tmp_path / "ctx-2").sync_index()[BINDING]
    assert (report.added, report.updated, report.removed) == (0, 0, 0)
    assert report.unchanged == len(FILES)
    assert again.cat.started == 0


def test_a_file_name_that_is_not_utf8_does_not_break_the_binding(
    tmp_path: Path,
    pin: PinFactory,
    reading_host: PluginHost,
    contexts: list[TaskContext],
) -> None:
    """A Latin-1 file name in the tree leaves the other files readable."""
    root = tmp_path / "names"
    make_repo(root, {"ok.txt": "the upload works\n"})
    (root / os.fsdecode(b"caf\xe9.txt")).write_bytes(b"the upload stalls\n")
    second = commit_all(root, "latin-1 name")
    repo = pin(root, second, host=reading_host)
    context = new_context(contexts, reading_host, repo, tmp_path / "ctx")
    package = context.reader("agent").read(ContextReadIntent(query="upload"))
    assert package.source_coverage[BINDING].outcome is CoverageOutcome.MATCHED
    assert "ok.txt" in {b.ref.path for b in package.blocks}
