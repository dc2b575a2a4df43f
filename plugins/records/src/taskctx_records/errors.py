"""The record store's own errors, each under the kernel's :class:`~taskctx.errors.TaskCtxError`.

Refused writes in ``read_only`` mode use the kernel's ``PolicyError``, missing records its
``NotFoundError``, bad cursors its ``CursorError`` and an exceeded materialization budget its
``MaterializationBudgetError``. What is specific to a record store lives here.
"""

from __future__ import annotations

from pathlib import Path

from taskctx.errors import TaskCtxError

__all__ = [
    "CheckpointConflictError",
    "EventConflictError",
    "PinnedViewLimitError",
    "RecordStoreCorruptError",
    "RecordStoreError",
    "RecordStorePathError",
    "RecordStoreUnavailableError",
]


class RecordStoreError(TaskCtxError):
    """The record store's database failed; ``path`` names the database file (or the
    database's URL, without its password)."""

    def __init__(self, message: str, *, path: Path | str) -> None:
        super().__init__(message)
        self.path = str(path)


class RecordStoreCorruptError(RecordStoreError):
    """The database file is not a SQLite database, is truncated, or is malformed."""


class RecordStoreUnavailableError(RecordStoreError):
    """The store's database server cannot be reached: the connection was refused, timed
    out or was lost. Nothing was written by the operation that raised it, unless it was a
    write whose commit the server may have received (the message says so)."""


class RecordStorePathError(RecordStoreError):
    """A folder or file of the store is a symlink, a hard link or not what it should be.

    ``path`` names it; the message says what stands there. Nothing was opened or made.
    """


class CheckpointConflictError(TaskCtxError):
    """``expected_state_version`` does not match the run's latest checkpoint."""

    def __init__(self, run_id: str, expected: int, actual: int) -> None:
        super().__init__(
            f"checkpoint conflict for run {run_id!r}: expected state version {expected}, "
            f"the latest is {actual}"
        )
        self.run_id = run_id
        self.expected = expected
        self.actual = actual


class EventConflictError(TaskCtxError):
    """An event append conflicts: ``expected_sequence`` mismatch, or an idempotency key reused
    for a different event."""

    def __init__(self, message: str, *, stream: str, expected: int | None, actual: int) -> None:
        super().__init__(message)
        self.stream = stream
        self.expected = expected
        self.actual = actual


class PinnedViewLimitError(TaskCtxError):
    """A pinned view passed one of its limits (candidates, bytes, lifetime) or was closed."""
