"""Errors of the skill library, all under :class:`taskctx.errors.TaskCtxError`."""

from __future__ import annotations

from collections.abc import Sequence

from taskctx.errors import NotFoundError, TaskCtxError

__all__ = ["SkillRevisionNotFoundError", "SkillStoreError", "SkillValidationError"]


class SkillValidationError(TaskCtxError):
    """A skill folder is not a valid Agent Skill; ``messages`` are the validator's own."""

    def __init__(self, skill: str, messages: Sequence[str]) -> None:
        self.skill = skill
        self.messages = tuple(messages)
        super().__init__(f"skill {skill!r} is invalid: " + "; ".join(self.messages))


class SkillRevisionNotFoundError(NotFoundError):
    """A pinned skill or binding revision is no longer in the library's store."""


class SkillStoreError(TaskCtxError):
    """The content-addressed store holds bytes that do not match their address."""
