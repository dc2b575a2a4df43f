"""taskctx-skills: Agent Skills trusted by allowlist, pinned, and disclosed progressively."""

from __future__ import annotations

from taskctx_skills.errors import SkillRevisionNotFoundError, SkillStoreError, SkillValidationError
from taskctx_skills.library import SkillLibrary
from taskctx_skills.snapshot import SkillLimits
from taskctx_skills.source import SkillSource
from taskctx_skills.values import BoundSkill, SkillEntry, SkillFile

__all__ = [
    "BoundSkill",
    "SkillEntry",
    "SkillFile",
    "SkillLibrary",
    "SkillLimits",
    "SkillRevisionNotFoundError",
    "SkillSource",
    "SkillStoreError",
    "SkillValidationError",
]
