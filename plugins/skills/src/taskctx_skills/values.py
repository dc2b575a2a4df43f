"""Values of the skill library: files, bound (pinned) skills and what discovery found."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["BoundSkill", "ResourceKind", "SkillEntry", "SkillFile", "resource_kind"]

ResourceKind = Literal["skill", "reference", "example", "script", "asset"]

_KIND_BY_FOLDER: Mapping[str, ResourceKind] = {
    "references": "reference",
    "reference": "reference",
    "examples": "example",
    "example": "example",
    "scripts": "script",
    "script": "script",
    "assets": "asset",
    "asset": "asset",
}


def resource_kind(path: str) -> ResourceKind:
    """The kind of a file inside a skill, from its path relative to the skill folder.

    ``SKILL.md`` is the skill itself; files under ``references/``, ``examples/``,
    ``scripts/`` and ``assets/`` are those kinds; any other file (a ``FORMS.md`` beside
    ``SKILL.md``, say) is a reference.
    """
    if path in ("SKILL.md", "skill.md"):
        return "skill"
    head = path.split("/", 1)[0]
    return _KIND_BY_FOLDER.get(head, "reference") if "/" in path else "reference"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SkillFile(_Frozen):
    """One file of a pinned skill: its path inside the skill, digest and size."""

    path: str
    sha256: str
    size: int = Field(ge=0)
    kind: ResourceKind


class BoundSkill(_Frozen):
    """A skill pinned at one content revision: ``revision_ref`` is a digest of all its files.

    The bytes live content-addressed in the library's store, so later edits to the
    folder never change what a binding of this revision reads.
    """

    name: str
    description: str
    revision_ref: str
    files: tuple[SkillFile, ...]
    license: str | None = None
    compatibility: str | None = None
    allowed_tools: str | None = None
    metadata: Mapping[str, str] = Field(default_factory=dict)

    def file(self, path: str) -> SkillFile | None:
        """The file at ``path`` inside the skill, or None."""
        return next((f for f in self.files if f.path == path), None)

    @property
    def skill_md(self) -> SkillFile:
        """The skill's ``SKILL.md``."""
        found = next((f for f in self.files if f.kind == "skill"), None)
        assert found is not None, "a bound skill always has its SKILL.md"
        return found

    def metadata_layer(self) -> dict[str, Any]:
        """What is disclosed first: name, description, revision and the optional fields."""
        facts: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "revision_ref": self.revision_ref,
        }
        for key in ("license", "compatibility", "allowed_tools"):
            if getattr(self, key) is not None:
                facts[key] = getattr(self, key)
        if self.metadata:
            facts["metadata"] = dict(self.metadata)
        return facts


class SkillEntry(_Frozen):
    """A skill folder found on disk: its metadata layer, trust and the validator's verdict."""

    folder: str
    name: str | None
    description: str | None
    trusted: bool
    valid: bool
    problems: tuple[str, ...] = ()
