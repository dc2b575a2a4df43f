"""Provider mode: an application's own task state store, authoritative over working state.

A :class:`TaskStateProvider` is any object with the six methods below (sync). Each
write returns only after the provider committed it and raises if it did not. Every
method gets the session id (``None`` for global memory), so one provider may serve
many sessions. ``WorkingState(binding=TaskStateBinding(provider), session_id=...)``
reads every note and task from the provider on every call (there is no local copy to
disagree with it) and checks its limits before it calls a write.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, runtime_checkable

from pydantic import ValidationError

from taskctx.errors import TaskCtxError
from taskctx_memory.errors import TaskStateProviderError
from taskctx_memory.namespace import Namespace
from taskctx_memory.values import StateChange, Task

__all__ = ["ProviderBackend", "TaskStateBinding", "TaskStateProvider"]

T = TypeVar("T")
_NUMBERED = re.compile(r"t(\d{1,18})")


@runtime_checkable
class TaskStateProvider(Protocol):
    """An authoritative store of notes and tasks, per session (``None``: global memory)."""

    def load_notes(self, session_id: str | None) -> Mapping[str, str]:
        """Every note of the session: key to whole value."""
        ...

    def load_tasks(self, session_id: str | None) -> Sequence[Task]:
        """Every task of the session, in creation order."""
        ...

    def write_note(self, session_id: str | None, key: str, value: str) -> None:
        """Create or replace a note; return after commit, raise on failure."""
        ...

    def delete_note(self, session_id: str | None, key: str) -> None:
        """Delete a note; return after commit, raise on failure."""
        ...

    def write_task(self, session_id: str | None, task: Task) -> None:
        """Create a task (appended to creation order) or replace one with the same id."""
        ...

    def delete_task(self, session_id: str | None, task_id: str) -> None:
        """Delete a task; return after commit, raise on failure."""
        ...


@dataclass(frozen=True)
class TaskStateBinding:
    """Binds a working state to an authoritative :class:`TaskStateProvider`.

    ``name`` labels the provider in error messages.
    """

    provider: TaskStateProvider
    name: str = field(default="provider")

    def __post_init__(self) -> None:
        candidate: object = self.provider
        if not isinstance(candidate, TaskStateProvider):
            missing = [
                name
                for name in (
                    "load_notes",
                    "load_tasks",
                    "write_note",
                    "delete_note",
                    "write_task",
                    "delete_task",
                )
                if not callable(getattr(candidate, name, None))
            ]
            raise TypeError(
                f"{type(candidate).__name__} is not a TaskStateProvider: "
                f"missing {', '.join(missing)}"
            )


class ProviderBackend:
    """A namespace's notes and tasks, read from and written to a provider on every call."""

    def __init__(self, binding: TaskStateBinding, namespace: Namespace) -> None:
        self.binding = binding
        self.namespace = namespace
        self._lock = threading.RLock()

    def _call(self, what: str, function: Callable[..., T], *args: Any) -> T:
        try:
            return function(self.namespace.session_id, *args)
        except TaskCtxError:
            raise
        except Exception as exc:
            raise TaskStateProviderError(
                f"task state provider {self.binding.name!r} failed to {what} "
                f"({self.namespace.label}): {type(exc).__name__}: {exc}"
            ) from exc

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Writers of this object wait here (the provider orders writers across processes)."""
        with self._lock:
            yield

    def load(self) -> tuple[dict[str, str], list[Task]]:
        """The provider's notes and tasks, loaded now."""
        return self.notes(), self.tasks()

    def notes(self) -> dict[str, str]:
        """Every note, by key in sorted order, as the provider has them now."""
        loaded = self._call("load notes", self.binding.provider.load_notes)
        if not isinstance(loaded, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in loaded.items()
        ):
            raise TaskStateProviderError(
                f"task state provider {self.binding.name!r} returned notes that are not a "
                "mapping of str to str"
            )
        return dict(sorted(loaded.items()))

    def note(self, key: str) -> str | None:
        """One note's value, or None."""
        return self.notes().get(key)

    def tasks(self) -> list[Task]:
        """Every task, in the provider's creation order."""
        loaded = self._call("load tasks", self.binding.provider.load_tasks)
        try:
            return [t if isinstance(t, Task) else Task.model_validate(t) for t in loaded]
        except (TypeError, ValidationError) as exc:
            raise TaskStateProviderError(
                f"task state provider {self.binding.name!r} returned an invalid task: {exc}"
            ) from exc

    def next_task_number(self) -> int:
        """One past the highest ``t<number>`` id the provider holds now."""
        numbers = [int(m[1]) for t in self.tasks() if (m := _NUMBERED.fullmatch(t.id))]
        return max(numbers, default=0) + 1

    def write_note(self, key: str, value: str) -> None:
        """The provider's ``write_note``."""
        self._call("write a note", self.binding.provider.write_note, key, value)

    def delete_note(self, key: str) -> bool:
        """The provider's ``delete_note``; False without a call if the note is absent."""
        if key not in self.notes():
            return False
        self._call("delete a note", self.binding.provider.delete_note, key)
        return True

    def write_task(self, task: Task, *, number: int | None) -> None:
        """The provider's ``write_task``."""
        self._call("write a task", self.binding.provider.write_task, task)

    def delete_task(self, task_id: str) -> bool:
        """The provider's ``delete_task``; False without a call if the task is absent."""
        if all(t.id != task_id for t in self.tasks()):
            return False
        self._call("delete a task", self.binding.provider.delete_task, task_id)
        return True

    def committed(self, change: StateChange) -> None:
        """Nothing more: the provider keeps its own history."""
