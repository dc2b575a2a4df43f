"""PinnedRepository: pinning to one commit, authorised globs, one cat-file, the fact cache."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest
from taskctx_repo import PathRules, PinnedRepository
from taskctx_repo.facts import FACTS_VERSION

from taskctx import PluginHost
from taskctx.errors import NotFoundError, PolicyError
from taskctx.model import ContextRef, EnumerationRequest, SourceDescriptor
from taskctx.statefiles import folder_state_dir
from tests.plugins.repo.conftest import (
    FILES,
    PinFactory,
    Project,
    commit_all,
    fact_rows,
    git,
    init_repo,
    make_repo,
    write_files,
)


def descriptors(repo: PinnedRepository) -> dict[str, SourceDescriptor]:
    """Every descriptor of the repository's source, by path (one big page)."""
    request = EnumerationRequest(page_size=10_000)
    page = asyncio.run(repo.source().async_enumerate_descriptors(request))
    assert page.next_cursor is None
    return {d.path: d for d in page.descriptors}


# -- pinning ---------------------------------------------------------------------------------


def test_reads_come_from_the_commit_not_the_working_tree(project: Project, pin: PinFactory) -> None:
    """Uncommitted edits, staged changes and untracked files never leak into the pinned tree."""
    repo = pin(project.path, project.first)
    (project.path / "notes.txt").write_text("edited, not committed\n", encoding="utf-8")
    write_files(project.path, {"untracked.md": "# New\n", "staged.txt": "staged\n"})
    git(project.path, "add", "staged.txt")
    (project.path / "README.md").unlink()
    assert repo.read_text("notes.txt") == FILES["notes.txt"]
    assert repo.read_text("README.md") == FILES["README.md"]
    assert repo.list_files() == sorted(FILES)
    with pytest.raises(NotFoundError):
        repo.read_bytes("untracked.md")
    with pytest.raises(NotFoundError):
        repo.read_bytes("staged.txt")
    # a new instance at the same commit sees the same tree
    assert pin(project.path, project.first).list_files() == sorted(FILES)


def test_later_commits_do_not_leak_into_an_earlier_pin(project: Project, pin: PinFactory) -> None:
    """A repository pinned at HEAD stays at that commit; a new pin at the new HEAD sees it."""
    old = pin(project.path)  # HEAD, resolved now
    assert old.commit == project.first
    write_files(project.path, {"notes.txt": "rewritten\n", "added.md": "# Added\n"})
    second = commit_all(project.path, "second")
    assert old.commit == project.first
    assert old.read_text("notes.txt") == FILES["notes.txt"]
    assert "added.md" not in old.list_files()
    new = pin(project.path)
    assert new.commit == second
    assert new.read_text("notes.txt") == "rewritten\n"
    assert "added.md" in new.list_files()
    assert pin(project.path, project.first).read_text("notes.txt") == FILES["notes.txt"]


def test_commit_names_resolve_to_a_full_commit_id(project: Project, pin: PinFactory) -> None:
    """Branch names, short ids and tags all pin the same full commit id."""
    git(project.path, "tag", "v1.0")
    write_files(project.path, {"notes.txt": "two\n"})
    commit_all(project.path, "second")
    for name in (project.first, project.first[:10], "v1.0", "HEAD~1", "main~1"):
        assert pin(project.path, name).commit == project.first
    assert len(project.first) == 40


def test_bare_repositories_work(project: Project, tmp_path: Path, pin: PinFactory) -> None:
    """A bare clone is read like the working repository it came from."""
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(project.path), str(bare))
    repo = pin(bare, "main")
    assert repo.commit == project.first
    assert repo.list_files() == sorted(FILES)
    assert repo.read_text("docs/guide.md") == FILES["docs/guide.md"]
    assert repo.git_dir == bare.resolve()


@pytest.mark.parametrize(
    "commit", ["0" * 40, "deadbeef", "no-such-branch", "HEAD~9", "--help", "main:README.md"]
)
def test_unknown_commits_are_not_found(project: Project, pin: PinFactory, commit: str) -> None:
    """A name that resolves to no commit raises NotFoundError naming it."""
    with pytest.raises(NotFoundError, match="names no commit"):
        pin(project.path, commit)


def test_a_tree_or_blob_id_is_not_a_commit(project: Project, pin: PinFactory) -> None:
    """Object ids of trees and blobs are refused: only commits are pinned."""
    tree = git(project.path, "rev-parse", "HEAD^{tree}")
    blob = git(project.path, "rev-parse", "HEAD:README.md")
    for oid in (tree, blob):
        with pytest.raises(NotFoundError):
            pin(project.path, oid)


def test_a_folder_that_is_not_a_repository_is_not_found(tmp_path: Path, pin: PinFactory) -> None:
    """A plain folder, a missing folder and an empty repository raise NotFoundError."""
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "file.txt").write_text("x")
    with pytest.raises(NotFoundError, match="not a git repository"):
        pin(plain)
    with pytest.raises(NotFoundError):
        pin(tmp_path / "missing")
    empty = init_repo(tmp_path / "empty")
    with pytest.raises(NotFoundError, match="names no commit"):
        pin(empty)


def test_a_plain_folder_inside_a_checkout_is_not_found(project: Project, pin: PinFactory) -> None:
    """A folder that is not itself a repository is refused even inside another's work tree."""
    plain = project.path / "vendor" / "plain"
    plain.mkdir(parents=True)
    (plain / "lib.txt").write_text("a vendored file\n")
    with pytest.raises(NotFoundError):
        pin(plain)


def test_revision_is_the_commit_and_the_globs(project: Project, pin: PinFactory) -> None:
    """The revision is ``<commit>:<globs digest>``; the digest ignores glob order."""
    whole = pin(project.path)
    docs = pin(project.path, paths=["docs/**", "*.md"])
    reordered = pin(project.path, paths=["*.md", "docs/**", "docs/**"])
    commit, _, digest = whole.revision.partition(":")
    assert commit == project.first
    assert digest == PathRules(["**"]).digest
    assert docs.revision.startswith(f"{project.first}:")
    assert docs.revision != whole.revision
    assert reordered.revision == docs.revision
    assert asyncio.run(docs.source().async_revision()) == docs.revision


def test_identity_is_stable_across_commits_but_not_globs(project: Project, pin: PinFactory) -> None:
    """Two commits of one git dir share an identity (so an index reuses blobs); globs split it."""
    first = pin(project.path)
    write_files(project.path, {"notes.txt": "new\n"})
    commit_all(project.path)
    second = pin(project.path)
    assert first.revision != second.revision
    assert first.identity == second.identity
    assert first.source().identity == first.identity
    assert pin(project.path, paths=["docs/**"]).identity != first.identity


# -- authorisation ---------------------------------------------------------------------------

DOCS_AND_PY = ("docs/**", "**/*.py")


def test_only_matching_paths_are_listed(project: Project, pin: PinFactory) -> None:
    """list_files and the source's descriptors hold the glob-matching paths only."""
    repo = pin(project.path, paths=DOCS_AND_PY)
    expected = [
        "docs/api/reference.md",
        "docs/guide.md",
        "src/app.py",
        "src/empty.py",
        "src/pkg/util.py",
    ]
    assert repo.list_files() == expected
    assert sorted(descriptors(repo)) == expected


def test_exact_reads_outside_the_globs_are_refused(project: Project, pin: PinFactory) -> None:
    """A path that exists but is not authorised raises PolicyError, by every read."""
    repo = pin(project.path, paths=DOCS_AND_PY)
    source = repo.source()
    with pytest.raises(PolicyError, match="outside the authorised paths"):
        repo.read_bytes("secrets/token.txt")
    with pytest.raises(PolicyError):
        repo.read_text("README.md")
    ref = ContextRef(binding="repo", path="secrets/token.txt")
    with pytest.raises(PolicyError):
        asyncio.run(source.async_read_exact(ref))


@pytest.mark.parametrize("scope", ["lines:1-1", "section:Upload service", None])
def test_scoped_reads_outside_the_globs_are_refused(
    project: Project, pin: PinFactory, scope: str | None
) -> None:
    """A scoped read re-authorises the path: a line range or section outside is refused."""
    source = pin(project.path, paths=DOCS_AND_PY).source()
    for path in ("README.md", "secrets/token.txt"):
        ref = ContextRef(binding="repo", path=path, scope=scope)
        with pytest.raises(PolicyError):
            asyncio.run(source.async_read_scoped(ref))


def test_outside_paths_that_do_not_exist_are_refused_not_reported_missing(
    project: Project, pin: PinFactory
) -> None:
    """Outside the globs the answer is PolicyError whether or not the path exists."""
    repo = pin(project.path, paths=["docs/**"])
    with pytest.raises(PolicyError):
        repo.read_bytes("secrets/other.txt")
    with pytest.raises(NotFoundError):
        repo.read_bytes("docs/missing.md")


@pytest.mark.parametrize(
    "path",
    [
        "../x",
        "/etc/passwd",
        "a/../b",
        "docs/../secrets/token.txt",
        "docs/./guide.md",
        "docs//guide.md",
        "docs/guide.md/",
        "..",
        "",
    ],
)
def test_traversal_and_unnormalised_paths_are_refused(
    project: Project, pin: PinFactory, path: str
) -> None:
    """Paths that climb, are absolute or are not normalised raise PolicyError, even under **."""
    repo = pin(project.path)
    with pytest.raises(PolicyError):
        repo.read_bytes(path)
    if path:
        source = repo.source()
        with pytest.raises(PolicyError):
            asyncio.run(source.async_read_exact(ContextRef(binding="repo", path=path)))
        ref = ContextRef(binding="repo", path=path, scope="lines:1-2")
        with pytest.raises(PolicyError):
            asyncio.run(source.async_read_scoped(ref))


@pytest.mark.parametrize(
    ("glob", "path", "allowed"),
    [
        ("*.md", "README.md", True),
        ("*.md", "docs/guide.md", False),
        ("docs/*", "docs/guide.md", True),
        ("docs/*", "docs/api/reference.md", False),
        ("docs/**", "docs/guide.md", True),
        ("docs/**", "docs/api/reference.md", True),
        ("docs/**", "docs", False),
        ("docs/**", "docsx/guide.md", False),
        ("**/*.py", "app.py", True),
        ("**/*.py", "src/pkg/util.py", True),
        ("**/*.py", "src/pkg/util.pyc", False),
        ("src/**/*.py", "src/app.py", True),
        ("src/**/*.py", "src/pkg/util.py", True),
        ("src/**/*.py", "lib/src/app.py", False),
        ("**", ".github/workflows/ci.yml", True),
        ("note?.txt", "notes.txt", True),
        ("note?.txt", "note/.txt", False),
        ("docs/guide.md", "docs/guide.md", True),
        ("docs/guide.md", "docs/guide.mdx", False),
        ("a+b(c).md", "a+b(c).md", True),
        ("a+b(c).md", "aab(c).md", False),
    ],
)
def test_glob_semantics(glob: str, path: str, allowed: bool) -> None:
    """``*`` and ``?`` stay inside one segment, ``**`` crosses them, the rest is literal."""
    assert PathRules([glob]).allows(path) is allowed


@pytest.mark.parametrize(
    "globs",
    [[], [""], ["/etc/*"], ["../**"], ["docs/../secrets/*"], ["docs\\*.md"], ["ok/*", ".."]],
)
def test_invalid_globs_are_refused(project: Project, host: PluginHost, globs: list[str]) -> None:
    """No globs, empty, absolute, climbing or backslashed globs raise ValueError."""
    with pytest.raises(ValueError, match="glob"):
        PathRules(globs)
    with pytest.raises(ValueError, match="glob"):
        PinnedRepository(project.path, "HEAD", globs, host=host)


# -- fast reads ------------------------------------------------------------------------------


def test_one_cat_file_process_serves_every_read(project: Project, pin: PinFactory) -> None:
    """Many reads and a full enumeration start one ``git cat-file --batch``, not one per blob."""
    repo = pin(project.path)
    assert repo.cat.started == 0  # started lazily
    source = repo.source()
    descriptors(repo)
    for _ in range(20):
        for path in FILES:
            repo.read_bytes(path)
            asyncio.run(source.async_read_exact(ContextRef(binding="repo", path=path)))
    assert repo.cat.started == 1


def test_the_batch_process_restarts_after_close(project: Project, pin: PinFactory) -> None:
    """close() ends the process; a later read starts a new one and still reads the commit."""
    repo = pin(project.path)
    repo.read_bytes("README.md")
    repo.cat.close()
    assert repo.read_text("README.md") == FILES["README.md"]
    assert repo.cat.started == 2


def test_content_versions_are_blob_ids(project: Project, pin: PinFactory) -> None:
    """Every descriptor's content version is ``git:<blob id>`` of its path at the commit."""
    found = descriptors(pin(project.path))
    for path, descriptor in found.items():
        assert descriptor.content_version == "git:" + git(project.path, "rev-parse", f"HEAD:{path}")
        assert descriptor.metadata["oid"] == descriptor.content_version[4:]


def test_commits_sharing_blobs_share_content_versions(project: Project, pin: PinFactory) -> None:
    """An unchanged file keeps its content version in the next commit; a changed one does not."""
    first = descriptors(pin(project.path))
    write_files(project.path, {"notes.txt": "changed\n"})
    commit_all(project.path)
    second = descriptors(pin(project.path))
    assert set(first) == set(second)
    for path in FILES:
        same = first[path].content_version == second[path].content_version
        assert same is (path != "notes.txt"), path
    # identical bytes at two paths are one blob
    write_files(project.path, {"copy/README.md": FILES["README.md"]})
    commit_all(project.path)
    third = descriptors(pin(project.path))
    assert third["copy/README.md"].content_version == third["README.md"].content_version


def test_known_facts_need_no_blob_read(project: Project, pin: PinFactory) -> None:
    """A new PinnedRepository over the same state enumerates without starting cat-file."""
    first = pin(project.path)
    descriptors(first)
    assert fact_rows(first) == len(FILES)
    again = pin(project.path)
    assert sorted(descriptors(again)) == sorted(FILES)
    assert again.cat.started == 0, "every fact came from the cache"
    assert fact_rows(again) == len(FILES)


def test_a_new_commit_describes_only_its_new_blobs(project: Project, pin: PinFactory) -> None:
    """After one changed file, one new fact row: unchanged blobs are not described again."""
    first = pin(project.path)
    before = descriptors(first)
    write_files(project.path, {"notes.txt": "changed\n"})
    commit_all(project.path)
    second = pin(project.path)
    after = descriptors(second)
    assert fact_rows(second) == len(FILES) + 1
    assert second.cat.started == 1
    assert after["notes.txt"].chars == len("changed\n")
    assert {p: d for p, d in after.items() if p != "notes.txt"} == {
        p: d for p, d in before.items() if p != "notes.txt"
    }


def test_state_dir_holds_the_fact_cache(project: Project, tmp_path: Path, pin: PinFactory) -> None:
    """With state_dir the facts live there; by default in the repository's part of the
    state folder, never in its git dir."""
    state = tmp_path / "state"
    repo = pin(project.path, state_dir=state)
    descriptors(repo)
    assert repo.state_dir == state
    assert (state / f"facts-v{FACTS_VERSION}.db").is_file()
    assert repo.source().index_directory.path == state / "index"
    default = pin(project.path)
    descriptors(default)
    assert default.state_dir == folder_state_dir(default.git_dir).path / "repo"
    assert (default.state_dir / f"facts-v{FACTS_VERSION}.db").is_file()
    assert not (default.git_dir / "taskctx").exists()


def test_a_damaged_fact_cache_is_rebuilt(project: Project, tmp_path: Path, pin: PinFactory) -> None:
    """A cache file that is not SQLite is replaced, and the facts are learnt again."""
    state = tmp_path / "state"
    first = pin(project.path, state_dir=state)
    expected = descriptors(first)
    first.close()
    db = state / f"facts-v{FACTS_VERSION}.db"
    for leftover in state.glob(f"facts-v{FACTS_VERSION}.db-*"):
        leftover.unlink()
    db.write_bytes(b"this is not a database" * 100)
    again = pin(project.path, state_dir=state)
    assert descriptors(again) == expected
    assert again.cat.started == 1
    assert fact_rows(again) == len(FILES)


def test_a_damaged_fact_row_is_recomputed(
    project: Project, tmp_path: Path, pin: PinFactory
) -> None:
    """A row whose representation or sections cannot be read is ignored and rewritten."""
    state = tmp_path / "state"
    first = pin(project.path, state_dir=state)
    expected = descriptors(first)
    first.close()
    with sqlite3.connect(state / f"facts-v{FACTS_VERSION}.db") as db:
        db.execute("UPDATE facts SET representation = 'bogus', sections = '{not json'")
    db.close()
    again = pin(project.path, state_dir=state)
    assert descriptors(again) == expected
    assert again.cat.started == 1


def test_many_files_enumerate_in_pages(tmp_path: Path, pin: PinFactory) -> None:
    """A few hundred files page with cursors, each path once, with the total on every page."""
    files = {f"dir{n % 7}/file-{n:04d}.txt": f"file {n}\n" for n in range(450)}
    make_repo(tmp_path / "many", files)
    source = pin(tmp_path / "many").source()
    seen: list[str] = []
    cursor: str | None = None
    while True:
        page = asyncio.run(
            source.async_enumerate_descriptors(EnumerationRequest(cursor=cursor, page_size=100))
        )
        assert page.total == len(files)
        seen.extend(d.path for d in page.descriptors)
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == sorted(files)
    prefixed = asyncio.run(
        source.async_enumerate_descriptors(EnumerationRequest(path_prefix="dir3/"))
    )
    assert {d.path.split("/")[0] for d in prefixed.descriptors} == {"dir3"}
    assert prefixed.total == sum(1 for p in files if p.startswith("dir3/"))


def test_context_manager_closes(project: Project, host: PluginHost) -> None:
    """``with PinnedRepository(...)`` ends the batch process on exit."""
    with PinnedRepository(project.path, "HEAD", host=host) as repo:
        repo.read_bytes("README.md")
        process = repo.cat._process
        assert process is not None
    assert process.poll() is not None
