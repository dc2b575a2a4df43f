"""The `skill_library` source: descriptors by resource kind, the metadata layer, exact reads."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest
from taskctx_skills import SkillLibrary, SkillRevisionNotFoundError, SkillSource
from taskctx_skills.source import ROLE_BY_KIND

from taskctx import TaskContext
from taskctx.errors import NotFoundError, PolicyError
from taskctx.model import (
    ContextRef,
    EnumerationRequest,
    Representation,
    SourceDescriptor,
)
from taskctx.protocols import ContextSource
from taskctx.sections import parse_line_scope, slice_lines
from taskctx.testing import SourceContract
from tests.plugins.skills.conftest import REVIEW_BODY, sha256_of, store_root, write_skill

T = TypeVar("T")

REVIEW_DESCRIPTION = "Review a pull request for bugs, missing tests and unclear names."
DEPLOY_DESCRIPTION = "Deploy the service to the staging cluster and check its health endpoint."


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run one coroutine."""
    return asyncio.run(coroutine)


def descriptors(source: SkillSource, **request: Any) -> list[SourceDescriptor]:
    """Every descriptor of ``source``, all pages."""
    found: list[SourceDescriptor] = []
    cursor: str | None = None
    while True:
        page = run(source.async_enumerate_descriptors(EnumerationRequest(cursor=cursor, **request)))
        found.extend(page.descriptors)
        if page.next_cursor is None:
            return found
        cursor = page.next_cursor


def by_key(source: SkillSource) -> dict[tuple[str, str | None], SourceDescriptor]:
    """Descriptors of ``source`` by (path, scope)."""
    return {d.key: d for d in descriptors(source)}


def read(source: SkillSource, path: str, limit: int | None = None) -> Any:
    """An exact read of ``path`` in ``source``."""
    return run(source.async_read_exact(ContextRef(binding="skills", path=path), limit))


@pytest.fixture
def source(library: SkillLibrary) -> SkillSource:
    """review-code required, deploy-app optional; triage-incidents trusted but not bound."""
    return library.source(required=["review-code"], optional=["deploy-app"])


class TestSkillSourceContract(SourceContract):
    """The skill source keeps the kernel's source contract."""

    covers = "skill_library"

    @pytest.fixture
    def source(self, library: SkillLibrary) -> ContextSource:
        """A binding of two skills, one with every kind of resource."""
        return library.source(required=["review-code"], optional=["deploy-app"])


# -- descriptors --------------------------------------------------------------------------


def test_skill_md_is_an_instruction_with_its_description_as_summary(
    source: SkillSource, lib: Path
) -> None:
    """<skill>/SKILL.md: role instruction, summary = description, headings as sections."""
    found = by_key(source)
    skill = source.skills["review-code"]
    whole = found[("review-code/SKILL.md", None)]
    text = (lib / "review-code" / "SKILL.md").read_text(encoding="utf-8")
    assert whole.role == "instruction"
    assert whole.summary == REVIEW_DESCRIPTION
    assert whole.media_type == "text/markdown"
    assert whole.representation is Representation.TEXT
    assert whole.chars == len(text)
    assert whole.content_version == sha256_of(text)
    assert [(s.title, s.level) for s in whole.sections] == [
        ("Review code", 1),
        ("Checklist", 2),
        ("Reporting", 2),
    ]
    assert "review-code" in (whole.title or "")
    assert skill.revision_ref in (whole.title or "")
    assert whole.metadata == {
        "skill": "review-code",
        "revision_ref": skill.revision_ref,
        "resource_kind": "skill",
    }


def test_required_only_for_skills_bound_as_required(source: SkillSource) -> None:
    """Only the SKILL.md of a required skill is required; sections and resources never are."""
    required = sorted(d.key for d in descriptors(source) if d.required)
    assert required == [("review-code/SKILL.md", None)]
    deploy = by_key(source)[("deploy-app/SKILL.md", None)]
    assert deploy.required is False
    assert deploy.summary == DEPLOY_DESCRIPTION


def test_an_all_optional_binding_has_no_required_item(library: SkillLibrary) -> None:
    """source(optional=...) marks nothing required."""
    source = library.source(optional=["review-code", "deploy-app"])
    assert not [d for d in descriptors(source) if d.required]


def test_one_child_per_level_two_section(source: SkillSource, lib: Path) -> None:
    """Each ## section of SKILL.md is a child descriptor: lines scope, position, no summary."""
    found = descriptors(source)
    children = [d for d in found if d.path == "review-code/SKILL.md" and d.scope is not None]
    text = (lib / "review-code" / "SKILL.md").read_text(encoding="utf-8")
    whole = next(d for d in found if d.key == ("review-code/SKILL.md", None))
    level_two = [s for s in whole.sections if s.level == 2]
    assert [c.scope for c in children] == [s.scope for s in level_two]
    assert [c.position for c in children] == [0, 1]
    for child, heading in zip(children, ["## Checklist", "## Reporting"], strict=True):
        assert child.scope is not None
        assert child.scope.startswith("lines:")
        first, last = parse_line_scope(child.scope)
        assert slice_lines(text, first, last).startswith(heading + "\n")
        assert child.role == "instruction"
        assert child.required is False
        assert child.summary is None
        assert child.content_version == whole.content_version
        assert heading.removeprefix("## ") in (child.title or "")
    deploy_children = [d for d in found if d.path == "deploy-app/SKILL.md" and d.scope]
    assert len(deploy_children) == 2


def test_a_skill_without_level_two_sections_has_no_children(
    lib: Path, library: SkillLibrary
) -> None:
    """A SKILL.md with only a title heading is one descriptor."""
    write_skill(lib, "tiny", "A tiny skill.", "# Tiny\n\nOne line of advice.\n")
    source = SkillLibrary(lib, trusted=["tiny"]).source(optional=["tiny"])
    assert [d.key for d in descriptors(source)] == [("tiny/SKILL.md", None)]


@pytest.mark.parametrize(
    ("path", "role", "representation"),
    [
        ("review-code/references/style-guide.md", "information", Representation.TEXT),
        ("review-code/references/diagram.png", "information", Representation.REFERENCE_ONLY),
        ("review-code/examples/good-review.md", "example", Representation.TEXT),
        ("review-code/scripts/lint.py", "capability", Representation.REFERENCE_ONLY),
        ("review-code/assets/finding-template.txt", "asset", Representation.REFERENCE_ONLY),
    ],
)
def test_resources_by_kind(
    source: SkillSource, lib: Path, path: str, role: str, representation: Representation
) -> None:
    """References are information, examples example, scripts capability, assets asset;
    scripts, assets and binary files are reference only."""
    descriptor = by_key(source)[(path, None)]
    data = (lib / path).read_bytes()
    assert descriptor.role == role
    assert descriptor.representation is representation
    assert descriptor.content_version == sha256_of(data)
    assert descriptor.size == len(data)
    assert descriptor.required is False
    assert descriptor.summary is None
    if representation is Representation.REFERENCE_ONLY:
        assert descriptor.chars is None
    else:
        assert descriptor.chars == len(data.decode("utf-8"))


def test_role_table_covers_every_resource_kind() -> None:
    """Each resource kind has its role."""
    assert dict(ROLE_BY_KIND) == {
        "skill": "instruction",
        "reference": "information",
        "example": "example",
        "script": "capability",
        "asset": "asset",
    }


def test_a_file_beside_skill_md_is_a_reference(lib: Path) -> None:
    """FORMS.md next to SKILL.md is a reference: information, text, with its sections."""
    write_skill(lib, "forms", "Fill forms.", files={"FORMS.md": "# Forms\n\n## Tax\n\nBox 7.\n"})
    source = SkillLibrary(lib, trusted=["forms"]).source(optional=["forms"])
    forms = by_key(source)[("forms/FORMS.md", None)]
    assert forms.role == "information"
    assert forms.representation is Representation.TEXT
    assert [s.title for s in forms.sections] == ["Forms", "Tax"]
    assert ("forms/FORMS.md", forms.sections[1].scope) not in by_key(source), (
        "only SKILL.md gets section children"
    )


def test_invalid_utf8_reference_is_reference_only(lib: Path) -> None:
    """A reference .md that is not UTF-8 is never guessed into text."""
    write_skill(lib, "latin", "Old notes.", files={"references/old.md": b"caf\xe9 \xff\xfe\n"})
    source = SkillLibrary(lib, trusted=["latin"]).source(optional=["latin"])
    descriptor = by_key(source)[("latin/references/old.md", None)]
    assert descriptor.representation is Representation.REFERENCE_ONLY
    assert read(source, "latin/references/old.md").text is None


def test_path_prefix_limits_enumeration(source: SkillSource) -> None:
    """An enumeration with path_prefix returns only that skill's descriptors."""
    paths = {d.path for d in descriptors(source, path_prefix="deploy-app/")}
    assert paths == {"deploy-app/SKILL.md"}


def test_unbound_skills_are_not_enumerated(source: SkillSource) -> None:
    """A trusted skill not in the binding contributes no descriptor."""
    assert not [d for d in descriptors(source) if d.path.startswith("triage-incidents/")]


# -- the metadata layer ---------------------------------------------------------------------


def test_describe_gives_only_the_metadata_layer(source: SkillSource, lib: Path) -> None:
    """describe(): name, description, revision_ref, required per skill, and no body text."""
    described = source.describe()
    assert described["revision"] == source.revision
    assert described["root"] == str(lib.resolve())
    skills = {s["name"]: s for s in described["skills"]}
    assert skills["review-code"] == {
        "name": "review-code",
        "description": REVIEW_DESCRIPTION,
        "revision_ref": source.skills["review-code"].revision_ref,
        "license": "Apache-2.0",
        "metadata": {"author": "qa-team", "version": "1.2"},
        "required": True,
        "resources": 5,
    }
    assert skills["deploy-app"]["required"] is False
    assert skills["deploy-app"]["description"] == DEPLOY_DESCRIPTION
    dumped = json.dumps(described)
    for body_line in REVIEW_BODY.splitlines()[2:]:
        if body_line.strip():
            assert body_line not in dumped, f"body text {body_line!r} leaked into describe()"
    assert "Run make deploy" not in dumped


def test_the_catalog_shows_the_metadata_layer(source: SkillSource, context: TaskContext) -> None:
    """TaskContext.source_catalog() carries describe() for the binding."""
    context.attach(source, binding_id="skills")
    (entry,) = context.source_catalog()
    assert entry.kind == "skill_library"
    assert entry.description == source.describe()


# -- exact reads ----------------------------------------------------------------------------


def test_exact_read_of_a_text_file(source: SkillSource, lib: Path) -> None:
    """A reference reads as its text with the digest of the text and the file's version."""
    text = (lib / "review-code" / "references" / "style-guide.md").read_text(encoding="utf-8")
    result = read(source, "review-code/references/style-guide.md")
    assert result.text == text
    assert result.digest == sha256_of(text)
    assert result.content_version == sha256_of(text)
    assert result.representation is Representation.TEXT
    cut = read(source, "review-code/references/style-guide.md", 5)
    assert (cut.text, cut.complete, cut.chars_total) == (text[:5], False, len(text))


@pytest.mark.parametrize(
    "path",
    [
        "review-code/scripts/lint.py",
        "review-code/assets/finding-template.txt",
        "review-code/references/diagram.png",
    ],
)
def test_exact_read_of_a_reference_only_file_has_no_text(
    source: SkillSource, lib: Path, path: str
) -> None:
    """Scripts, assets and binary files read as bytes, reference only, never as text."""
    data = (lib / path).read_bytes()
    result = read(source, path)
    assert result.text is None
    assert result.data == data
    assert result.representation is Representation.REFERENCE_ONLY
    assert result.digest == sha256_of(data)


def test_exact_read_of_an_unbound_skill_is_a_policy_error(source: SkillSource) -> None:
    """A skill of the same library that this binding does not hold is refused by policy."""
    with pytest.raises(PolicyError, match="'triage-incidents' is not bound"):
        read(source, "triage-incidents/SKILL.md")


def test_exact_read_of_an_untrusted_skill_is_a_policy_error(lib: Path) -> None:
    """A skill on disk that the library does not trust is refused too, not read."""
    source = SkillLibrary(lib, trusted=["review-code"]).source(required=["review-code"])
    with pytest.raises(PolicyError, match="not bound"):
        read(source, "deploy-app/SKILL.md")


@pytest.mark.parametrize(
    "path",
    ["no-such-skill/SKILL.md", "review-code/references/missing.md", "review-code", "../x"],
)
def test_exact_read_of_an_unknown_item_is_not_found(source: SkillSource, path: str) -> None:
    """An unknown skill, or an unknown file of a bound skill, raises NotFoundError."""
    with pytest.raises(NotFoundError):
        read(source, path)


# -- revision and immutability ----------------------------------------------------------------


def test_revision_is_the_binding_revision(source: SkillSource) -> None:
    """async_revision() is the binding's stored revision and does not move."""
    assert run(source.async_revision()) == source.revision
    assert run(source.async_revision()) == source.revision
    assert source.revision.startswith("sha256:")


def test_a_lost_binding_fails_the_revision_loudly(source: SkillSource, lib: Path) -> None:
    """With the binding manifest deleted, async_revision raises SkillRevisionNotFoundError."""
    manifest = store_root(lib) / "bindings" / (source.revision[7:] + ".json")
    manifest.unlink()
    with pytest.raises(SkillRevisionNotFoundError, match=source.revision):
        run(source.async_revision())


def test_a_bound_source_reads_its_pinned_bytes_after_edits(source: SkillSource, lib: Path) -> None:
    """Editing, adding and deleting files in the folder changes nothing the source offers."""
    before = descriptors(source)
    old_text = (lib / "review-code" / "SKILL.md").read_text(encoding="utf-8")
    old_skills = dict(source.skills)
    (lib / "review-code" / "SKILL.md").write_text(
        old_text.replace("most severe first", "in any order"), encoding="utf-8"
    )
    (lib / "review-code" / "references" / "new.md").write_text("# New\n", encoding="utf-8")
    (lib / "review-code" / "examples" / "good-review.md").unlink()
    assert descriptors(source) == before
    assert read(source, "review-code/SKILL.md").text == old_text
    assert read(source, "review-code/examples/good-review.md").text is not None
    with pytest.raises(NotFoundError):
        read(source, "review-code/references/new.md")
    assert run(source.async_revision()) == source.revision
    assert source.skills == old_skills
