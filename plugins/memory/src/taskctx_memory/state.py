"""``WorkingState``: one session's notes and tasks (or global memory's), bounded and durable.

Embedded mode keeps them in a :class:`~taskctx_records.RecordStore` (see
:mod:`taskctx_memory.backends`), so a new WorkingState over the same root and session
resumes them exactly. Provider mode (``binding=TaskStateBinding(provider)``) makes an
application's provider authoritative: every read asks it (see
:mod:`taskctx_memory.provider`). Either way a write is checked against the limits
first (refused whole with :class:`WorkingStateLimitError`), and logged in the bounded
change log only after it committed.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal, overload

from taskctx_records import RecordStore

from taskctx.errors import NotFoundError
from taskctx_memory.backends import RecordStoreBackend, StateBackend
from taskctx_memory.changes import ChangeLog
from taskctx_memory.config import WorkingStateConfiguration
from taskctx_memory.errors import TaskExistsError
from taskctx_memory.limits import StateUsage, check_limits, note_bytes, task_bytes
from taskctx_memory.namespace import Namespace
from taskctx_memory.projection import Projection, build_projection
from taskctx_memory.provider import ProviderBackend, TaskStateBinding
from taskctx_memory.values import (
    ChangeAction,
    ChangeTarget,
    NoteIndex,
    StateChange,
    Task,
    TaskStatus,
    check_key,
    check_session_id,
    check_title,
)

if TYPE_CHECKING:
    from taskctx_memory.provider_source import ProviderMemorySource
    from taskctx_memory.source import SessionMemorySource

__all__ = ["WorkingState"]


def _text(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"a {what} is a str, not {type(value).__name__}")
    return value


class WorkingState:
    """The notes and tasks of one session, kept in a record store or by a provider.

    ``WorkingState(store, session_id)`` (embedded; ``store`` a RecordStore or its root)
    or ``WorkingState(binding=TaskStateBinding(provider), session_id=...)``. Global
    memory, shared by every session: :meth:`global_memory`.
    """

    namespace: Namespace
    configuration: WorkingStateConfiguration
    store: RecordStore | None
    binding: TaskStateBinding | None

    def __init__(
        self,
        store: RecordStore | str | Path | None = None,
        session_id: str | None = None,
        *,
        binding: TaskStateBinding | None = None,
        configuration: WorkingStateConfiguration | None = None,
    ) -> None:
        if session_id is None:
            raise TypeError(
                "WorkingState needs a session_id; global memory is WorkingState.global_memory()"
            )
        self._open(store, Namespace(check_session_id(session_id)), binding, configuration)

    @classmethod
    def global_memory(
        cls,
        store: RecordStore | str | Path | None = None,
        *,
        binding: TaskStateBinding | None = None,
        configuration: WorkingStateConfiguration | None = None,
    ) -> WorkingState:
        """The working state every session shares (its notes are in every session's source)."""
        state = cls.__new__(cls)
        state._open(store, Namespace(None), binding, configuration)
        return state

    def _open(
        self,
        store: RecordStore | str | Path | None,
        namespace: Namespace,
        binding: TaskStateBinding | None,
        configuration: WorkingStateConfiguration | None,
    ) -> None:
        if store is not None and binding is not None:
            raise TypeError(
                "give a record store (embedded mode) or binding= (provider mode), not both"
            )
        if store is None and binding is None:
            raise TypeError("give a record store (embedded mode) or binding= (provider mode)")
        self.namespace = namespace
        self.configuration = configuration or WorkingStateConfiguration()
        self.binding = binding
        self._owns_store = False
        self._backend: StateBackend
        if binding is not None:
            if not isinstance(binding, TaskStateBinding):
                raise TypeError("binding= takes a TaskStateBinding(provider)")
            self.store = None
            self._backend = ProviderBackend(binding, namespace)
        else:
            if isinstance(store, (str, Path)):
                store, self._owns_store = RecordStore(store), True
            if not isinstance(store, RecordStore):
                raise TypeError("store is a RecordStore or the root folder of one")
            self.store = store
            self._backend = RecordStoreBackend(store, namespace)
        self._log = ChangeLog(self.configuration.max_changes)

    # -- facts ----------------------------------------------------------------------------

    @property
    def session_id(self) -> str | None:
        """The session this state belongs to; None for global memory."""
        return self.namespace.session_id

    @property
    def mode(self) -> Literal["embedded", "provider"]:
        """``embedded`` (a record store) or ``provider`` (an authoritative provider)."""
        return "provider" if self.binding is not None else "embedded"

    def usage(self) -> StateUsage:
        """How many notes and tasks there are and how many bytes they count."""
        notes, tasks = self._backend.load()
        return StateUsage.of(notes, tasks)

    def close(self) -> None:
        """Close the record store if this object opened it from a root folder."""
        if self._owns_store and self.store is not None:
            self.store.close()

    def __enter__(self) -> WorkingState:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<WorkingState {self.namespace.label} ({self.mode})>"

    def _committed(self, target: ChangeTarget, key: str, action: ChangeAction, chars: int) -> None:
        change = self._log.append(target, key, action, chars)
        self._backend.committed(change)

    # -- notes ----------------------------------------------------------------------------

    def note_write(self, key: str, value: str) -> Literal["created", "updated"]:
        """Create or replace the note ``key`` with the whole ``value``."""
        key = check_key(key, "note key")
        value = _text(value, "note value")
        with self._backend.lock():
            notes, tasks = self._backend.load()
            old = notes.get(key)
            before = StateUsage.of(notes, tasks)
            delta = note_bytes(key, value) - (0 if old is None else note_bytes(key, old))
            after = before.plus(notes=int(old is None), size=delta)
            check_limits(before, after, self.configuration, f"note {key!r}")
            self._backend.write_note(key, value)
            action: Literal["created", "updated"] = "created" if old is None else "updated"
            self._committed("note", key, action, len(value))
        return action

    def note_delete(self, key: str) -> Literal["deleted", "already_absent"]:
        """Delete the note ``key``; deleting an absent note is not an error."""
        key = check_key(key, "note key")
        with self._backend.lock():
            if not self._backend.delete_note(key):
                return "already_absent"
            self._committed("note", key, "deleted", 0)
        return "deleted"

    @overload
    def note_get(self, key: str) -> str: ...

    @overload
    def note_get(self, key: None = None) -> NoteIndex: ...

    def note_get(self, key: str | None = None) -> str | NoteIndex:
        """With a key, the note's whole value (NotFoundError if absent); without, the index."""
        if key is None:
            keys = tuple(self._backend.notes())
            return NoteIndex(keys=keys, count=len(keys))
        key = check_key(key, "note key")
        value = self._backend.note(key)
        if value is None:
            raise NotFoundError(f"no note {key!r} in the working state of {self.namespace.label}")
        return value

    def notes(self) -> dict[str, str]:
        """Every note with its whole value, by key in sorted order."""
        return self._backend.notes()

    # -- tasks ----------------------------------------------------------------------------

    def task_add(
        self,
        title: str,
        *,
        status: TaskStatus | str = TaskStatus.PENDING,
        notes: str = "",
        task_id: str | None = None,
    ) -> Task:
        """Add a task at the end of the creation order; its id is ``task_id`` or ``t<n>``.

        Generated numbers are never reused in embedded mode; in provider mode ``n`` is one
        past the highest ``t<n>`` the provider holds.
        """
        title = check_title(title)
        state = TaskStatus(status)
        notes = _text(notes, "task's notes")
        if task_id is not None:
            task_id = check_key(task_id, "task id")
        with self._backend.lock():
            all_notes, tasks = self._backend.load()
            ids = {t.id for t in tasks}
            if task_id in ids:
                raise TaskExistsError(
                    f"task {task_id!r} already exists in {self.namespace.label}; "
                    "use task_update to change it"
                )
            number = self._backend.next_task_number()
            while task_id is None and f"t{number}" in ids:
                number += 1
            task = Task(id=task_id or f"t{number}", title=title, status=state, notes=notes)
            before = StateUsage.of(all_notes, tasks)
            after = before.plus(tasks=1, size=task_bytes(title, notes))
            check_limits(before, after, self.configuration, f"task {task.id!r}")
            self._backend.write_task(task, number=number)
            self._committed("task", task.id, "created", len(title) + len(notes))
        return task

    def task_update(
        self,
        task_id: str,
        *,
        title: str | None = None,
        status: TaskStatus | str | None = None,
        notes: str | None = None,
    ) -> Task:
        """Change a task's title, status and/or notes (NotFoundError if there is none)."""
        task_id = check_key(task_id, "task id")
        with self._backend.lock():
            all_notes, tasks = self._backend.load()
            old = next((t for t in tasks if t.id == task_id), None)
            if old is None:
                raise NotFoundError(f"no task {task_id!r} in {self.namespace.label}")
            new = Task(
                id=task_id,
                title=old.title if title is None else check_title(title),
                status=old.status if status is None else TaskStatus(status),
                notes=old.notes if notes is None else _text(notes, "task's notes"),
            )
            before = StateUsage.of(all_notes, tasks)
            delta = task_bytes(new.title, new.notes) - task_bytes(old.title, old.notes)
            check_limits(before, before.plus(size=delta), self.configuration, f"task {task_id!r}")
            self._backend.write_task(new, number=None)
            self._committed("task", task_id, "updated", len(new.title) + len(new.notes))
        return new

    def task_get(self, task_id: str) -> Task:
        """The task ``task_id`` (NotFoundError if there is none)."""
        task_id = check_key(task_id, "task id")
        found = next((t for t in self._backend.tasks() if t.id == task_id), None)
        if found is None:
            raise NotFoundError(f"no task {task_id!r} in {self.namespace.label}")
        return found

    def tasks(self, status: TaskStatus | str | None = None) -> tuple[Task, ...]:
        """Every task (or those with ``status``), in creation order."""
        wanted = None if status is None else TaskStatus(status)
        return tuple(t for t in self._backend.tasks() if wanted is None or t.status is wanted)

    def task_remove(self, task_id: str) -> Literal["deleted", "already_absent"]:
        """Remove a task; removing an absent task is not an error."""
        task_id = check_key(task_id, "task id")
        with self._backend.lock():
            if not self._backend.delete_task(task_id):
                return "already_absent"
            self._committed("task", task_id, "deleted", 0)
        return "deleted"

    # -- changes, projection, source ------------------------------------------------------

    def changes(self, since: int = 0) -> tuple[StateChange, ...]:
        """Changes this object committed after sequence ``since`` (the last ``max_changes``).

        Entries name what changed and how many characters were written, never the value.
        In embedded mode every writer's changes are also events of the store's stream
        ``working_state:<session id>`` (``working_state@global`` for global memory).
        """
        return self._log.since(since)

    def projection(self, boundary: str) -> Projection | None:
        """The projection for ``boundary`` with what it shows, refers to and leaves out."""
        notes, tasks = self._backend.load()
        configuration = self.configuration
        return build_projection(
            notes,
            tasks,
            boundary,
            max_chars=configuration.projection_max_chars,
            max_notes=configuration.projection_max_notes,
            max_tasks=configuration.projection_max_tasks,
        )

    def project(self, boundary: str) -> str | None:
        """The ``<working-state>`` block for ``boundary`` (``user_input``: notes and active
        tasks; ``tool_result``: active tasks; else None), within the projection settings
        (``projection_max_notes``, ``projection_max_tasks``, ``projection_max_chars``)."""
        projection = self.projection(boundary)
        return None if projection is None else projection.text

    def source(self, *, include_global: bool = True) -> SessionMemorySource | ProviderMemorySource:
        """The ``session_memory`` source of this session (global memory's: global only).

        Embedded mode: a :class:`SessionMemorySource` over the record store. Provider mode:
        a :class:`ProviderMemorySource` that asks the provider on every call (no history,
        so a change makes a reader's next page stale).
        """
        from taskctx_memory.provider_source import ProviderMemorySource
        from taskctx_memory.source import SessionMemorySource

        include = include_global or self.namespace.is_global
        if self.binding is not None:
            return ProviderMemorySource(self.binding, self.session_id, include_global=include)
        assert self.store is not None  # embedded mode: _open set one or the other
        return SessionMemorySource(self.store, self.session_id, include_global=include)
