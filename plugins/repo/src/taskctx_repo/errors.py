"""Errors of the pinned repository, all under :class:`taskctx.errors.TaskCtxError`."""

from __future__ import annotations

from taskctx.errors import TaskCtxError

__all__ = ["GitError"]


class GitError(TaskCtxError):
    """A git command failed, or git is missing; the message names the command and why."""
