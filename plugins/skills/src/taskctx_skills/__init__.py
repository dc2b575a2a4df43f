"""taskctx-skills: Agent Skills trusted by allowlist, pinned, and disclosed progressively."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from taskctx_skills.errors import (
        SkillRevisionNotFoundError,
        SkillStoreError,
        SkillValidationError,
    )
    from taskctx_skills.library import SkillLibrary
    from taskctx_skills.limits import SkillLimits
    from taskctx_skills.source import SkillSource
    from taskctx_skills.values import BoundSkill, SkillEntry, SkillFile

# Importing the package stays cheap (plugin loading imports it through the entry
# point's module): each name is imported from its module on first use.
_EXPORTS: dict[str, str] = {
    "BoundSkill": "taskctx_skills.values",
    "SkillEntry": "taskctx_skills.values",
    "SkillFile": "taskctx_skills.values",
    "SkillLibrary": "taskctx_skills.library",
    "SkillLimits": "taskctx_skills.limits",
    "SkillRevisionNotFoundError": "taskctx_skills.errors",
    "SkillSource": "taskctx_skills.source",
    "SkillStoreError": "taskctx_skills.errors",
    "SkillValidationError": "taskctx_skills.errors",
}

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


def __getattr__(name: str) -> Any:
    """Import an exported name from its module the first time it is asked for."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
