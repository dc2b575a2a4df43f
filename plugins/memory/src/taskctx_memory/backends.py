"""Where a working state's notes and tasks live: the protocol, and the record store backend.

:class:`RecordStoreBackend` (embedded mode) keeps each note and task as one record of
collection ``working_state`` (see :mod:`taskctx_memory.namespace`). Every change is one
store transaction (a ``put``, a tombstone, or for a new task one ``put_many`` of the task
and its namespace's task counter), so a crash leaves the old state or the new one. The
read-check-write of a change runs under a per-namespace lock file
(``<root>/.taskctx/memory/locks/``) so limits hold across processes; reads take no lock.
After a change committed, an event with its bounded summary is appended to the
namespace's stream.
"""

from __future__ import annotations

import hashlib
import sys
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, Protocol

from taskctx_records import Record, RecordStore

from taskctx.errors import NotFoundError, PolicyError
from taskctx_memory.namespace import COLLECTION, META_COLLECTION, Namespace
from taskctx_memory.values import StateChange, Task, TaskStatus

__all__ = ["RecordStoreBackend", "StateBackend", "note_of", "task_of"]

LOCK_SUBDIR = Path(".taskctx") / "memory" / "locks"
_PAGE = 500


class StateBackend(Protocol):
    """What WorkingState asks of where its state lives (embedded store or provider)."""

    namespace: Namespace

    def lock(self) -> AbstractContextManager[None]:
        """Held around the read-check-write of one change."""
        ...

    def load(self) -> tuple[dict[str, str], list[Task]]:
        """Every note (by key, sorted) and every task (in creation order), read together."""
        ...

    def notes(self) -> dict[str, str]:
        """Every note, by key in sorted order."""
        ...

    def note(self, key: str) -> str | None:
        """One note's value, or None."""
        ...

    def tasks(self) -> list[Task]:
        """Every task, in creation order."""
        ...

    def next_task_number(self) -> int:
        """The number the next created task takes (its default id is ``t<number>``)."""
        ...

    def write_note(self, key: str, value: str) -> None:
        """Create or replace a note; return after commit."""
        ...

    def delete_note(self, key: str) -> bool:
        """Delete a note; False if there was none. Return after commit."""
        ...

    def write_task(self, task: Task, *, number: int | None) -> None:
        """Create (``number`` given) or replace a task; return after commit."""
        ...

    def delete_task(self, task_id: str) -> bool:
        """Delete a task; False if there was none. Return after commit."""
        ...

    def committed(self, change: StateChange) -> None:
        """Called after a change committed (the store appends an event)."""
        ...


def note_of(record: Record) -> tuple[str, str] | None:
    """(key, value) of a note record, or None if the record is not a well-formed note."""
    content = record.content
    if record.kind != "note" or not isinstance(content, dict):
        return None
    key, value = content.get("key"), content.get("value")
    if isinstance(key, str) and isinstance(value, str):
        return key, value
    return None


def task_of(record: Record) -> tuple[int, Task] | None:
    """(position, task) of a task record, or None if the record is not a well-formed task."""
    content = record.content
    if record.kind != "task" or not isinstance(content, dict):
        return None
    try:
        task = Task(
            id=content["id"],
            title=content["title"],
            status=TaskStatus(content["status"]),
            notes=content.get("notes", ""),
        )
        return int(content.get("position", 0)), task
    except (KeyError, TypeError, ValueError):
        return None


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """An exclusive advisory lock on ``path`` (POSIX ``flock``; Windows ``msvcrt``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as handle:
        if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
            import msvcrt

            handle.seek(0)
            msvcrt.locking(handle.fileno(), msvcrt.LK_LOCK, 1)
            try:
                yield
            finally:
                handle.seek(0)
                msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)
        else:
            import fcntl

            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


class RecordStoreBackend:
    """A namespace's notes and tasks as records of a :class:`RecordStore`."""

    def __init__(self, store: RecordStore, namespace: Namespace) -> None:
        self.store = store
        self.namespace = namespace
        digest = hashlib.sha256(namespace.record_id("meta", "lock").encode()).hexdigest()[:24]
        self._lock_path = Path(store.root) / LOCK_SUBDIR / f"{digest}.lock"
        self._thread_lock = threading.RLock()

    @contextmanager
    def lock(self) -> Iterator[None]:
        """This process's and every other process's writers of the namespace wait here."""
        if self.store.mode != "read_write":
            raise PolicyError(
                f"record store {self.store.path} is read_only: working state writes are refused"
            )
        with self._thread_lock, _file_lock(self._lock_path):
            yield

    def _records(self) -> list[Record]:
        revision = self.store.revision  # one snapshot for every page
        found: list[Record] = []
        after: str | None = None
        while True:
            page = self.store.iter_visible(
                self.namespace.scope, [COLLECTION], revision, after_id=after, limit=_PAGE
            )
            found.extend(page)
            if len(page) < _PAGE:
                return found
            after = page[-1].id

    def _get(self, record_id: str, collection: str = COLLECTION) -> Record | None:
        try:
            record = self.store.get(record_id)
        except NotFoundError:
            return None
        if record.collection != collection or dict(record.scope) != self.namespace.scope:
            return None
        return record

    def load(self) -> tuple[dict[str, str], list[Task]]:
        """Notes and tasks from one scan of the namespace at one revision."""
        records = self._records()
        return self._notes_of(records), self._tasks_of(records)

    @staticmethod
    def _notes_of(records: list[Record]) -> dict[str, str]:
        pairs = (note_of(r) for r in records)
        return dict(sorted(p for p in pairs if p is not None))

    @staticmethod
    def _tasks_of(records: list[Record]) -> list[Task]:
        found = (task_of(r) for r in records)
        ordered = sorted((p for p in found if p is not None), key=lambda p: (p[0], p[1].id))
        return [task for _, task in ordered]

    def notes(self) -> dict[str, str]:
        """Every note, by key in sorted order."""
        return self._notes_of(self._records())

    def note(self, key: str) -> str | None:
        """One note's value, or None."""
        record = self._get(self.namespace.record_id("note", key))
        pair = None if record is None else note_of(record)
        return pair[1] if pair is not None and pair[0] == key else None

    def tasks(self) -> list[Task]:
        """Every task, in creation order (position, then id)."""
        return self._tasks_of(self._records())

    def _positions(self) -> list[int]:
        return [p[0] for p in (task_of(r) for r in self._records()) if p is not None]

    def next_task_number(self) -> int:
        """From the namespace's counter record: never a number an earlier task took."""
        counter = self._get(self.namespace.record_id("meta", "tasks"), META_COLLECTION)
        stored = counter.content.get("next_task", 1) if counter is not None else 1
        return max([int(stored), *(p + 1 for p in self._positions())])

    def write_note(self, key: str, value: str) -> None:
        """One ``put`` of the note's record."""
        self.store.put(
            {"key": key, "value": value},
            collection=COLLECTION,
            kind="note",
            scope=self.namespace.scope,
            record_id=self.namespace.record_id("note", key),
        )

    def delete_note(self, key: str) -> bool:
        """A tombstone of the note's record; False if it was absent."""
        return self._delete(self.namespace.record_id("note", key))

    def _delete(self, record_id: str) -> bool:
        if self._get(record_id) is None:
            return False
        try:
            self.store.delete(record_id)
        except NotFoundError:
            return False
        return True

    def write_task(self, task: Task, *, number: int | None) -> None:
        """A new task with its counter in one transaction, or one ``put`` of an update."""
        record_id = self.namespace.record_id("task", task.id)
        if number is None:
            existing = self._get(record_id)
            found = None if existing is None else task_of(existing)
            position = found[0] if found is not None else max(self._positions(), default=0) + 1
        else:
            position = number
        item: dict[str, Any] = {
            "content": {
                "id": task.id,
                "title": task.title,
                "status": task.status.value,
                "notes": task.notes,
                "position": position,
            },
            "collection": COLLECTION,
            "kind": "task",
            "scope": self.namespace.scope,
            "record_id": record_id,
        }
        items = [item]
        if number is not None:
            items.append(
                {
                    "content": {"next_task": number + 1},
                    "collection": META_COLLECTION,
                    "kind": "counter",
                    "scope": self.namespace.scope,
                    "record_id": self.namespace.record_id("meta", "tasks"),
                }
            )
        self.store.put_many(items)

    def delete_task(self, task_id: str) -> bool:
        """A tombstone of the task's record; False if it was absent."""
        return self._delete(self.namespace.record_id("task", task_id))

    def committed(self, change: StateChange) -> None:
        """Append the change's bounded summary to the namespace's event stream."""
        self.store.append_event(
            self.namespace.stream,
            f"{change.target}_{change.action}",
            change.model_dump(mode="json", exclude={"sequence"}),
        )
