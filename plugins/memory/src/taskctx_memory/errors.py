"""The errors working state raises, all under :class:`taskctx.errors.TaskCtxError`."""

from __future__ import annotations

from taskctx.errors import TaskCtxError

__all__ = [
    "InvalidKeyError",
    "TaskExistsError",
    "TaskStateProviderError",
    "WorkingStateError",
    "WorkingStateLimitError",
]


class WorkingStateError(TaskCtxError):
    """Base of the errors of working state (notes and tasks)."""


class InvalidKeyError(WorkingStateError, ValueError):
    """A note key, task id or session id is empty, too long or holds control characters."""


class TaskExistsError(WorkingStateError, ValueError):
    """``task_add`` was given the id of a task that already exists."""


class WorkingStateLimitError(WorkingStateError):
    """A write would pass a limit of :class:`~taskctx_memory.WorkingStateConfiguration`.

    ``limit`` names the setting (``max_notes``, ``max_tasks``, ``max_bytes``), ``allowed``
    its value and ``attempted`` what the write would have made. Nothing was written.
    """

    def __init__(self, limit: str, allowed: int, attempted: int, what: str) -> None:
        super().__init__(
            f"working state limit {limit}={allowed:,} refuses {what}: it would make "
            f"{attempted:,}; nothing was written"
        )
        self.limit = limit
        self.allowed = allowed
        self.attempted = attempted


class TaskStateProviderError(WorkingStateError):
    """A task state provider failed; its own exception is the ``__cause__``.

    Nothing was logged for the change: whether the provider kept any of it is the
    provider's to say.
    """
