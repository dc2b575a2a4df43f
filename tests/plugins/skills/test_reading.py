"""Skills through the kernel: the required core, progressive disclosure, lossy digests,
selector previews, reference-only resources, and pinned bindings restored after export."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from taskctx_skills import SkillLibrary, SkillRevisionNotFoundError, SkillSource

from taskctx import (
    ContextBudget,
    ContextPackage,
    ContextReadIntent,
    ContextRef,
    PluginHost,
    PolicyError,
    RequiredOverflowError,
    TaskContext,
    hookimpl,
)
from taskctx.model import (
    Completeness,
    CoverageOutcome,
    CoverageReason,
    OmissionReason,
    Representation,
    SourceCoverage,
)
from taskctx.protocols import SelectionRequest
from taskctx.sections import markdown_sections
from tests.plugins.skills.conftest import sha256_of, skills_host, store_root, write_skill
from tests.readonly import read_only_runner

REVIEW = "review-code/SKILL.md"
DEPLOY = "deploy-app/SKILL.md"
TRIAGE = "triage-incidents/SKILL.md"
DEPLOY_DESCRIPTION = "Deploy the service to the staging cluster and check its health endpoint."


def attached(context: TaskContext, source: SkillSource) -> TaskContext:
    """``context`` with ``source`` attached as binding 'skills'."""
    context.attach(source, binding_id="skills")
    return context


def read(
    context: TaskContext, intent: ContextReadIntent | str, budget: ContextBudget | None = None
) -> ContextPackage:
    """One first page of ``intent``."""
    reader = context.reader(consumer="agent", budget=budget or ContextBudget(max_chars=20_000))
    return reader.read(intent)


def whole_blocks(package: ContextPackage) -> list[str]:
    """Paths of the whole-item blocks of a package, in order."""
    return [b.ref.path for b in package.blocks if b.ref.scope is None]


def omitted(package: ContextPackage, reason: OmissionReason) -> list[tuple[str, str | None]]:
    """(path, scope) of the omissions with ``reason``."""
    return [(o.ref.path, o.ref.scope) for o in package.omissions if o.reason is reason]


def consistent(coverage: SourceCoverage) -> None:
    """Coverage counts agree: omitted = considered - delivered, never negative."""
    assert coverage.considered is not None
    assert coverage.omitted == coverage.considered - coverage.delivered
    assert coverage.omitted is not None
    assert coverage.omitted >= 0


@pytest.fixture
def source(library: SkillLibrary) -> SkillSource:
    """review-code required; deploy-app and triage-incidents optional."""
    return library.source(required=["review-code"], optional=["deploy-app", "triage-incidents"])


# -- the required core ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    ["", "zebra quasar marmalade", "staging cluster health endpoint", "severity page owner"],
    ids=["no query", "matches nothing", "matches deploy-app", "matches triage"],
)
def test_a_required_skill_is_in_every_first_page(
    context: TaskContext, source: SkillSource, lib: Path, query: str
) -> None:
    """The required skill's SKILL.md is delivered whole on page 1 whatever the query."""
    package = read(attached(context, source), query)
    block = next(b for b in package.blocks if b.ref.path == REVIEW and b.ref.scope is None)
    text = (lib / REVIEW).read_text(encoding="utf-8")
    assert block.required is True
    assert block.role == "instruction"
    assert block.completeness is Completeness.COMPLETE
    assert block.content == text
    assert block.digest == sha256_of(text)
    assert whole_blocks(package).count(REVIEW) == 1, "the required core is never also ranked"
    consistent(package.source_coverage["skills"])


def test_a_query_matching_nothing_gives_only_the_required_core(
    context: TaskContext, source: SkillSource
) -> None:
    """A query no optional item matches still delivers the required skill, and only it."""
    package = read(attached(context, source), "zebra quasar marmalade")
    assert [(b.ref.path, b.ref.scope) for b in package.blocks] == [(REVIEW, None)]
    assert package.omissions == ()
    cov = package.source_coverage["skills"]
    assert (cov.considered, cov.delivered, cov.omitted) == (1, 1, 0)


def test_optional_selection_none_gives_only_the_required_core(
    context: TaskContext, source: SkillSource
) -> None:
    """optional_selection='none' delivers the required core and says selection was disabled."""
    intent = ContextReadIntent(query="staging cluster health", optional_selection="none")
    package = read(attached(context, source), intent)
    assert [(b.ref.path, b.ref.scope) for b in package.blocks] == [(REVIEW, None)]
    assert package.has_more is False
    cov = package.source_coverage["skills"]
    assert CoverageReason.SELECTION_DISABLED.value in cov.reasons
    consistent(cov)
    assert cov.omitted is not None
    assert cov.omitted > 0, "the matching optional skill was considered, not delivered"


@pytest.mark.parametrize(
    ("intent", "optional"),
    [
        (ContextReadIntent(query="staging", filters={"path_prefix": "deploy-app/"}), DEPLOY),
        (ContextReadIntent(query="staging", filters={"glob": "deploy-app/*"}), DEPLOY),
        (
            ContextReadIntent(query="review", roles=("example",)),
            "review-code/examples/good-review.md",
        ),
        (ContextReadIntent(query="staging", filters={"metadata": {"skill": "deploy-app"}}), DEPLOY),
    ],
    ids=["path_prefix", "glob", "roles", "metadata"],
)
def test_filters_do_not_remove_the_required_core(
    context: TaskContext, source: SkillSource, intent: ContextReadIntent, optional: str
) -> None:
    """Structural filters and roles narrow the optional candidates, not the required core."""
    package = read(attached(context, source), intent)
    assert whole_blocks(package) == [REVIEW, optional]
    assert [b.required for b in package.blocks] == [True, False]
    consistent(package.source_coverage["skills"])


def test_later_pages_omit_the_required_core_as_already_disclosed(
    context: TaskContext, library: SkillLibrary
) -> None:
    """Page 2 does not repeat the required skill: it is omitted as already_disclosed."""
    source = library.source(required=["review-code"], optional=["deploy-app", "triage-incidents"])
    reader = attached(context, source).reader(
        consumer="agent", budget=ContextBudget(max_chars=20_000, max_blocks=2)
    )
    first = reader.read("")
    assert first.has_more
    second = reader.read_next(first.cursor)
    assert REVIEW not in whole_blocks(second)
    assert (REVIEW, None) in omitted(second, OmissionReason.ALREADY_DISCLOSED)
    seen = [p for page in (first, second) for p in whole_blocks(page)]
    assert seen.count(REVIEW) == 1
    consistent(second.source_coverage["skills"])


def test_sections_of_a_delivered_skill_are_covered_by_their_parent(
    context: TaskContext, source: SkillSource
) -> None:
    """A query matching a ## section of the delivered required SKILL.md omits the section
    as covered_by_parent instead of delivering it twice."""
    package = read(attached(context, source), "finding file line most severe")
    assert [b.ref.scope for b in package.blocks if b.ref.path == REVIEW] == [None]
    covered = omitted(package, OmissionReason.COVERED_BY_PARENT)
    assert covered, "the matching section must be a candidate"
    assert all(path == REVIEW and scope is not None for path, scope in covered)
    consistent(package.source_coverage["skills"])


# -- required overflow --------------------------------------------------------------------------

LONG_DESCRIPTION = "Migrate a database schema without downtime."


def long_skill(lib: Path) -> tuple[SkillSource, str]:
    """A required skill whose SKILL.md is about 2,500 characters in six ## sections."""
    body = "# Migrate the schema\n\nNever lock a large table.\n\n" + "".join(
        f"## Step {n}\n\n" + f"step{n}word " * 40 + "\n\n" for n in range(1, 7)
    )
    write_skill(lib, "migrate-schema", LONG_DESCRIPTION, body)
    library = SkillLibrary(lib, trusted=["migrate-schema", "deploy-app"])
    source = library.source(required=["migrate-schema"], optional=["deploy-app"])
    return source, (lib / "migrate-schema" / "SKILL.md").read_text(encoding="utf-8")


def test_a_required_skill_over_budget_fails_closed(context: TaskContext, lib: Path) -> None:
    """Without lossy digests, a required SKILL.md larger than max_chars raises."""
    source, text = long_skill(lib)
    assert len(text) > 1500
    with pytest.raises(RequiredOverflowError, match=re.escape("migrate-schema/SKILL.md")):
        read(attached(context, source), "anything", ContextBudget(max_chars=1500))


def test_a_required_skill_over_budget_becomes_a_lossy_digest(
    context: TaskContext, lib: Path
) -> None:
    """With required_overflow='lossy_digest' the skill is an outline: name, revision,
    summary line, full ref, original length and section refs in document order."""
    source, text = long_skill(lib)
    skill = source.skills["migrate-schema"]
    intent = ContextReadIntent(query="zebra", required_overflow="lossy_digest")
    package = read(attached(context, source), intent, ContextBudget(max_chars=1500))
    block = package.blocks[0]
    assert block.ref == ContextRef(binding="skills", path="migrate-schema/SKILL.md")
    assert block.required is True
    assert block.completeness is Completeness.LOSSY
    assert block.representation is Representation.LOSSY_DIGEST
    assert "migrate-schema" in block.content
    assert skill.revision_ref in block.content
    assert f"summary: {LONG_DESCRIPTION}\n" in block.content
    assert "step3word" not in block.content
    assert block.chars_original == len(text)
    assert block.full_ref == block.ref.model_copy(update={"version": sha256_of(text)})
    sections = markdown_sections(text)
    assert block.section_refs == tuple(block.ref.with_scope(s.scope) for s in sections)
    assert [s.title for s in sections] == [
        "Migrate the schema",
        *[f"Step {n}" for n in range(1, 7)],
    ]
    assert block.chars <= 1500
    assert package.used_chars <= 1500
    issued = set(package.aliases.values())
    assert block.full_ref in issued, "the full ref is reachable by an alias"
    assert set(block.section_refs) <= issued, "every section ref is reachable by an alias"


def test_sections_of_a_lossy_skill_can_be_delivered(context: TaskContext, lib: Path) -> None:
    """When the required SKILL.md is a digest, a matching ## section is delivered whole on
    the same page, not omitted as covered_by_parent."""
    source, _ = long_skill(lib)
    intent = ContextReadIntent(query="step4word", required_overflow="lossy_digest")
    package = read(attached(context, source), intent, ContextBudget(max_chars=1500))
    assert package.blocks[0].completeness is Completeness.LOSSY
    sections = [b for b in package.blocks if b.ref.scope is not None]
    assert [b.title for b in sections] == ["skill migrate-schema: Step 4"]
    assert sections[0].completeness is Completeness.COMPLETE
    assert sections[0].content.startswith("## Step 4\n")
    assert sections[0].ref in package.blocks[0].section_refs
    assert not omitted(package, OmissionReason.COVERED_BY_PARENT)
    assert package.used_chars <= 1500


def test_a_lossy_digest_is_not_disclosure(context: TaskContext, lib: Path) -> None:
    """A later read with a larger budget delivers the whole SKILL.md: a digest disclosed
    only its outline."""
    source, text = long_skill(lib)
    reader = attached(context, source).reader(
        consumer="agent", budget=ContextBudget(max_chars=1500)
    )
    intent = ContextReadIntent(query="zebra", required_overflow="lossy_digest")
    assert reader.read(intent).blocks[0].completeness is Completeness.LOSSY
    wide = context.reader(consumer="agent", budget=ContextBudget(max_chars=10_000))
    block = wide.read(intent).blocks[0]
    assert (block.completeness, block.content) == (Completeness.COMPLETE, text)


# -- optional skills and the selector ------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("staging cluster health endpoint", DEPLOY),
        ("incident severity page the owner", TRIAGE),
    ],
)
def test_optional_skills_are_found_by_query(
    context: TaskContext, source: SkillSource, query: str, expected: str
) -> None:
    """An optional skill enters a package when the query matches it; the other does not."""
    package = read(attached(context, source), query)
    paths = {b.ref.path for b in package.blocks}
    assert expected in paths
    assert ({DEPLOY, TRIAGE} - {expected}).isdisjoint(paths)
    assert package.source_coverage["skills"].outcome is CoverageOutcome.MATCHED


class RecordingSelector:
    """A selector that records what it was shown and picks the candidates titled ``pick``."""

    name = "recording"

    def __init__(self, pick: Sequence[str] = ()) -> None:
        self.pick = tuple(pick)
        self.requests: list[SelectionRequest] = []

    async def async_select(self, request: SelectionRequest) -> Sequence[str]:
        """Keys of the candidates whose title starts with one of ``pick``."""
        self.requests.append(request)
        return [c.key for c in request.candidates if (c.title or "").startswith(self.pick)]


def selector_host(selector: RecordingSelector) -> PluginHost:
    """The skills host with ``selector`` registered through the hook."""

    class Plugin:
        @hookimpl
        def register_selectors(self, register):  # type: ignore[no-untyped-def]
            register(selector)

    host = skills_host()
    host.register(Plugin(), name="recording-selector")
    return host


def test_a_selector_sees_the_description_not_the_body(source: SkillSource, tmp_path: Path) -> None:
    """The preview of an optional SKILL.md is its description; the body stays undisclosed."""
    selector = RecordingSelector(pick=["skill deploy-app ("])
    context = TaskContext("skills-task", host=selector_host(selector), state_dir=tmp_path / "s")
    context.attach(source, binding_id="skills")
    reader = context.reader(consumer="agent", selector="recording")
    package = reader.read("staging deploy rollback")
    (request,) = selector.requests
    by_title = {c.title: c for c in request.candidates}
    deploy = next(c for t, c in by_title.items() if (t or "").startswith("skill deploy-app ("))
    assert deploy.preview == DEPLOY_DESCRIPTION
    assert "make deploy" not in deploy.preview
    assert deploy.role == "instruction"
    assert all("ctx://" not in c.preview for c in request.candidates)
    assert not any((c.title or "").startswith("skill review-code (") for c in request.candidates), (
        "the required core is delivered, never offered to the selector"
    )
    assert DEPLOY in whole_blocks(package)
    assert omitted(package, OmissionReason.NOT_SELECTED)


# -- resources that are never text ---------------------------------------------------------------

SCRIPT_LIKE = ["review-code/scripts/lint.py", "review-code/assets/finding-template.txt"]


@pytest.mark.parametrize("path", SCRIPT_LIKE)
def test_scripts_and_assets_matching_a_query_are_reference_only(
    context: TaskContext, library: SkillLibrary, path: str
) -> None:
    """A script or asset that ranks is omitted as reference_only, never a block."""
    source = library.source(optional=["review-code"])
    package = read(attached(context, source), "lint the changed files finding template")
    assert path not in [b.ref.path for b in package.blocks]
    assert (path, None) in omitted(package, OmissionReason.REFERENCE_ONLY)


@pytest.mark.parametrize("path", SCRIPT_LIKE)
def test_explicitly_requested_scripts_and_assets_are_reference_only(
    context: TaskContext, library: SkillLibrary, path: str
) -> None:
    """An explicit ref to a script or asset is omitted as reference_only, never a block."""
    source = library.source(optional=["review-code"])
    intent = ContextReadIntent(explicit_refs=[f"ctx://skills/{path}"])
    package = read(attached(context, source), intent)
    assert path not in [b.ref.path for b in package.blocks]
    assert (path, None) in omitted(package, OmissionReason.REFERENCE_ONLY)


def test_no_script_or_asset_text_enters_a_package(
    context: TaskContext, library: SkillLibrary
) -> None:
    """Whatever the kernel does with them, no package holds a script's or asset's text."""
    source = library.source(optional=["review-code"])
    intent = ContextReadIntent(
        query="lint the changed files finding template",
        explicit_refs=[f"ctx://skills/{p}" for p in SCRIPT_LIKE],
    )
    package = read(attached(context, source), intent)
    rendered = package.render()
    assert "print('lint the changed files')" not in rendered
    assert "Finding: {file}:{line}" not in rendered
    for block in package.blocks:
        if block.ref.path in SCRIPT_LIKE:
            assert block.content == ""
            assert block.representation is Representation.REFERENCE_ONLY


def test_a_binary_reference_is_reference_only(context: TaskContext, library: SkillLibrary) -> None:
    """A PNG under references/ is omitted as reference_only for a text-only consumer."""
    source = library.source(optional=["review-code"])
    intent = ContextReadIntent(explicit_refs=["ctx://skills/review-code/references/diagram.png"])
    package = read(attached(context, source), intent)
    assert ("review-code/references/diagram.png", None) in omitted(
        package, OmissionReason.REFERENCE_ONLY
    )
    assert "review-code/references/diagram.png" not in [b.ref.path for b in package.blocks]


def test_references_and_examples_are_delivered_as_text(
    context: TaskContext, library: SkillLibrary, lib: Path
) -> None:
    """References and examples asked for by ref arrive whole, with their roles."""
    source = library.source(optional=["review-code"])
    refs = ["review-code/references/style-guide.md", "review-code/examples/good-review.md"]
    intent = ContextReadIntent(explicit_refs=[f"ctx://skills/{p}" for p in refs])
    package = read(attached(context, source), intent)
    blocks = {b.ref.path: b for b in package.blocks}
    for path, role in zip(refs, ["information", "example"], strict=True):
        assert blocks[path].role == role
        assert blocks[path].content == (lib / path).read_text(encoding="utf-8")
        assert blocks[path].completeness is Completeness.COMPLETE


def test_an_unbound_skill_cannot_be_requested(context: TaskContext, source: SkillSource) -> None:
    """An explicit ref to a skill outside the binding fails closed with PolicyError."""
    narrow = SkillLibrary(source.library.root, trusted=["deploy-app"]).source(
        optional=["deploy-app"]
    )
    intent = ContextReadIntent(explicit_refs=[f"ctx://skills/{REVIEW}"])
    with pytest.raises(PolicyError, match="not bound"):
        read(attached(context, narrow), intent)


# -- immutability and restore -------------------------------------------------------------------


def block_facts(package: ContextPackage) -> list[tuple[str, str, str, str]]:
    """(ref, content, digest, block id) of every block."""
    return [(str(b.ref), b.content, b.digest, b.block_id) for b in package.blocks]


def edit_library(lib: Path) -> None:
    """Change SKILL.md of review-code and deploy-app, add and delete files."""
    for path in (lib / REVIEW, lib / DEPLOY):
        path.write_text(
            path.read_text(encoding="utf-8").replace("staging", "production") + "\nNew rule.\n",
            encoding="utf-8",
        )
    (lib / "review-code" / "references" / "new.md").write_text("# New reference\n\nstaging\n")
    (lib / "review-code" / "examples" / "good-review.md").unlink()


INTENT = ContextReadIntent(query="staging cluster health review examples")


def test_a_bound_source_reads_the_same_after_the_folder_changed(
    context: TaskContext, source: SkillSource, lib: Path
) -> None:
    """Edits to the skill folders change no block of a binding made before them, and the
    pinned reader does not go stale."""
    attached(context, source)
    reader = context.reader(consumer="agent")
    before = reader.read(INTENT)
    described = source.describe()
    edit_library(lib)
    again = reader.read(INTENT)  # the same reader: still fresh; only the required core again
    assert block_facts(again) == block_facts(before)[:1]
    assert again.blocks[0].ref.path == REVIEW
    assert {o.reason for o in again.omissions} <= {
        OmissionReason.ALREADY_DISCLOSED,
        OmissionReason.COVERED_BY_PARENT,
        OmissionReason.REFERENCE_ONLY,
    }
    fresh = context.reader(consumer="agent").read(INTENT)
    assert block_facts(fresh) == block_facts(before)
    assert fresh.snapshot.sources["skills"] == source.revision
    assert source.describe() == described
    assert "New rule." not in fresh.render()


def test_a_new_binding_sees_the_new_content(
    context: TaskContext, source: SkillSource, lib: Path, library: SkillLibrary
) -> None:
    """Binding again after the edit pins a new revision with the new bytes."""
    edit_library(lib)
    newer = library.source(required=["review-code"], optional=["deploy-app", "triage-incidents"])
    assert newer.revision != source.revision
    package = read(attached(context, newer), "")
    review = next(b for b in package.blocks if b.ref.path == REVIEW)
    assert "New rule." in review.content


def test_export_state_and_restore_source_read_the_same_blocks(
    context: TaskContext, source: SkillSource, lib: Path, tmp_path: Path
) -> None:
    """A reader's exported state plus restore_source(snapshot revision) gives the very same
    blocks in a new TaskContext, after the folders changed."""
    attached(context, source)
    budget = ContextBudget(max_chars=20_000, max_blocks=3)
    reader = context.reader(consumer="agent", budget=budget)
    first = reader.read(INTENT)
    assert first.has_more
    state = json.loads(json.dumps(reader.export_state()))
    edit_library(lib)
    second = reader.read_next(first.cursor)  # the original reader, after the edit
    assert second.blocks

    library = SkillLibrary(lib, trusted=["review-code", "deploy-app", "triage-incidents"])
    revision = state["snapshot"]["sources"]["skills"]
    assert revision == source.revision
    restored_context = TaskContext("skills-task", host=skills_host(), state_dir=tmp_path / "state")
    restored_context.attach(library.restore_source(revision), binding_id="skills")
    restored = restored_context.restore_reader(state)
    assert block_facts(restored.read_next(first.cursor)) == block_facts(second)
    fresh = restored_context.reader(consumer="agent", budget=budget).read(INTENT)
    assert block_facts(fresh) == block_facts(first)
    assert fresh.snapshot == first.snapshot


def test_restore_in_a_fresh_state_dir_reads_the_same_blocks(
    context: TaskContext, source: SkillSource, lib: Path, tmp_path: Path
) -> None:
    """A restored binding in another state directory (no shared index) reads the same."""
    first = read(attached(context, source), INTENT)
    edit_library(lib)
    other = TaskContext("skills-task", host=skills_host(), state_dir=tmp_path / "elsewhere")
    restored = SkillLibrary(lib, trusted=["review-code", "deploy-app", "triage-incidents"])
    other.attach(restored.restore_source(source.revision), binding_id="skills")
    assert block_facts(read(other, INTENT)) == block_facts(first)


def test_restore_fails_loudly_when_the_store_lost_the_bytes(
    context: TaskContext, source: SkillSource, lib: Path
) -> None:
    """With the blobs deleted, restore_source raises instead of a package missing skills."""
    read(attached(context, source), INTENT)
    shutil.rmtree(store_root(lib) / "objects")
    library = SkillLibrary(lib, trusted=["review-code", "deploy-app", "triage-incidents"])
    with pytest.raises(SkillRevisionNotFoundError, match="sha256:"):
        library.restore_source(source.revision)


def test_a_lost_binding_makes_the_source_unavailable_not_empty(
    context: TaskContext, source: SkillSource, lib: Path
) -> None:
    """A binding whose manifest vanished is reported unavailable, never as 'no skills'."""
    manifest = store_root(lib) / "bindings" / (source.revision[7:] + ".json")
    manifest.unlink()
    package = read(attached(context, source), INTENT)
    cov = package.source_coverage["skills"]
    assert cov.outcome is CoverageOutcome.UNAVAILABLE
    assert package.blocks == ()
    assert any(source.revision in d.message for d in package.diagnostics)


def test_a_library_on_a_read_only_filesystem_binds_and_reads(lib: Path, tmp_path: Path) -> None:
    """The store lives in the state folder, so a read-only library is bound and read."""
    command = [
        *read_only_runner(),
        str(lib),
        str(Path(sys.executable).with_name("taskctx")),
        "read",
        "--source",
        f"skill_library:root={lib},trusted=review-code,required=review-code",
    ]
    env = {
        **os.environ,
        "TASKCTX_STATE_DIR": str(tmp_path / "state"),
        "TASKCTX_LOAD_PLUGINS": "taskctx-skills,taskctx-fts",
    }
    result = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    assert result.returncode == 0, result.stderr
    assert "review-code" in result.stdout
    assert not (lib / ".taskctx").exists()
