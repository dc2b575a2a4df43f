"""What a working state holds (notes, tasks, bytes) and the refusal of writes past a limit."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import Field

from taskctx.model import FrozenModel
from taskctx_memory.config import WorkingStateConfiguration
from taskctx_memory.errors import WorkingStateLimitError
from taskctx_memory.values import Task

__all__ = ["StateUsage", "check_limits", "note_bytes", "task_bytes"]


def note_bytes(key: str, value: str) -> int:
    """UTF-8 bytes a note counts against ``max_bytes``: its key and its value."""
    return len(key.encode("utf-8")) + len(value.encode("utf-8"))


def task_bytes(title: str, notes: str) -> int:
    """UTF-8 bytes a task counts against ``max_bytes``: its title and its notes."""
    return len(title.encode("utf-8")) + len(notes.encode("utf-8"))


class StateUsage(FrozenModel):
    """How much of its limits a working state uses."""

    notes: int = Field(ge=0)
    tasks: int = Field(ge=0)
    bytes: int = Field(ge=0)

    @classmethod
    def of(cls, notes: Mapping[str, str], tasks: Sequence[Task]) -> StateUsage:
        """The usage of these notes and tasks."""
        size = sum(note_bytes(k, v) for k, v in notes.items())
        size += sum(task_bytes(t.title, t.notes) for t in tasks)
        return cls(notes=len(notes), tasks=len(tasks), bytes=size)

    def plus(self, *, notes: int = 0, tasks: int = 0, size: int = 0) -> StateUsage:
        """This usage changed by the given deltas."""
        return StateUsage(
            notes=self.notes + notes, tasks=self.tasks + tasks, bytes=self.bytes + size
        )


def check_limits(
    before: StateUsage, after: StateUsage, configuration: WorkingStateConfiguration, what: str
) -> None:
    """Raise WorkingStateLimitError if ``after`` passes a limit ``before`` did not reach.

    A write that does not grow a measure is always allowed, so a state over a lowered
    limit can still shrink.
    """
    for limit, allowed, old, new in (
        ("max_notes", configuration.max_notes, before.notes, after.notes),
        ("max_tasks", configuration.max_tasks, before.tasks, after.tasks),
        ("max_bytes", configuration.max_bytes, before.bytes, after.bytes),
    ):
        if new > allowed and new > old:
            raise WorkingStateLimitError(limit, allowed, new, what)
