"""Provider mode: the provider is authoritative, limits come first, failures log nothing."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from taskctx_memory import (
    Task,
    TaskStateBinding,
    TaskStateProvider,
    TaskStateProviderError,
    WorkingState,
    WorkingStateConfiguration,
    WorkingStateLimitError,
)

from taskctx.errors import NotFoundError, PolicyError


class SQLiteProvider:
    """A task state provider on a SQLite file: each call opens, commits and closes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.calls: list[str] = []
        with self._db() as db:
            db.execute(
                "CREATE TABLE IF NOT EXISTS notes (s TEXT, k TEXT, v TEXT, PRIMARY KEY (s, k))"
            )
            db.execute(
                "CREATE TABLE IF NOT EXISTS tasks (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
                "s TEXT, id TEXT, body TEXT, UNIQUE (s, id))"
            )

    def _db(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path)

    @staticmethod
    def _s(session_id: str | None) -> str:
        return "@global" if session_id is None else f"s:{session_id}"

    def _run(self, sql: str, *args: Any) -> list[Any]:
        db = self._db()
        try:
            with db:
                return db.execute(sql, args).fetchall()
        finally:
            db.close()

    def load_notes(self, session_id: str | None) -> Mapping[str, str]:
        self.calls.append("load_notes")
        return dict(self._run("SELECT k, v FROM notes WHERE s = ?", self._s(session_id)))

    def load_tasks(self, session_id: str | None) -> Sequence[Task]:
        self.calls.append("load_tasks")
        rows = self._run("SELECT body FROM tasks WHERE s = ? ORDER BY seq", self._s(session_id))
        return [Task.model_validate_json(row[0]) for row in rows]

    def write_note(self, session_id: str | None, key: str, value: str) -> None:
        self.calls.append("write_note")
        self._run("INSERT OR REPLACE INTO notes VALUES (?, ?, ?)", self._s(session_id), key, value)

    def delete_note(self, session_id: str | None, key: str) -> None:
        self.calls.append("delete_note")
        self._run("DELETE FROM notes WHERE s = ? AND k = ?", self._s(session_id), key)

    def write_task(self, session_id: str | None, task: Task) -> None:
        self.calls.append("write_task")
        self._run(
            "INSERT INTO tasks (s, id, body) VALUES (?, ?, ?) "
            "ON CONFLICT (s, id) DO UPDATE SET body = excluded.body",
            self._s(session_id),
            task.id,
            task.model_dump_json(),
        )

    def delete_task(self, session_id: str | None, task_id: str) -> None:
        self.calls.append("delete_task")
        self._run("DELETE FROM tasks WHERE s = ? AND id = ?", self._s(session_id), task_id)

    @property
    def writes(self) -> list[str]:
        """The write calls made so far."""
        return [c for c in self.calls if not c.startswith("load_")]


class DictProvider:
    """A task state provider in a dict; ``fail`` makes every write raise before storing."""

    def __init__(self) -> None:
        self.notes: dict[str | None, dict[str, str]] = {}
        self.tasks: dict[str | None, dict[str, Task]] = {}
        self.fail: Exception | None = None
        self.bad_notes: Any = None

    def load_notes(self, session_id: str | None) -> Mapping[str, str]:
        if self.bad_notes is not None:
            return self.bad_notes  # type: ignore[no-any-return]
        return dict(self.notes.get(session_id, {}))

    def load_tasks(self, session_id: str | None) -> Sequence[Task]:
        return list(self.tasks.get(session_id, {}).values())

    def _check(self) -> None:
        if self.fail is not None:
            raise self.fail

    def write_note(self, session_id: str | None, key: str, value: str) -> None:
        self._check()
        self.notes.setdefault(session_id, {})[key] = value

    def delete_note(self, session_id: str | None, key: str) -> None:
        self._check()
        self.notes.get(session_id, {}).pop(key, None)

    def write_task(self, session_id: str | None, task: Task) -> None:
        self._check()
        self.tasks.setdefault(session_id, {})[task.id] = task

    def delete_task(self, session_id: str | None, task_id: str) -> None:
        self._check()
        self.tasks.get(session_id, {}).pop(task_id, None)


@pytest.fixture
def provider(tmp_path: Path) -> SQLiteProvider:
    """A SQLite-file provider."""
    return SQLiteProvider(tmp_path / "provider.db")


@pytest.fixture
def state(provider: SQLiteProvider) -> WorkingState:
    """Session s1's working state, bound to the SQLite provider."""
    return WorkingState(binding=TaskStateBinding(provider), session_id="s1")


def test_the_test_providers_satisfy_the_protocol(provider: SQLiteProvider) -> None:
    """Both providers are TaskStateProviders; a binding reports provider mode."""
    assert isinstance(provider, TaskStateProvider)
    assert isinstance(DictProvider(), TaskStateProvider)
    state = WorkingState(binding=TaskStateBinding(provider), session_id="s1")
    assert (state.mode, state.store) == ("provider", None)


def test_notes_and_tasks_through_a_provider(state: WorkingState) -> None:
    """The same API in provider mode: created/updated, idempotent deletes, index, tasks."""
    assert state.note_write("b", "2") == "created"
    assert state.note_write("a", "1") == "created"
    assert state.note_write("a", "one") == "updated"
    assert state.note_get().keys == ("a", "b")
    assert state.note_delete("b") == "deleted"
    assert state.note_delete("b") == "already_absent"
    first = state.task_add("first")
    state.task_add("second", status="blocked")
    assert first.id == "t1"
    assert state.task_update("t1", status="done").status == "done"
    assert [t.id for t in state.tasks()] == ["t1", "t2"]
    assert state.task_remove("t2") == "deleted"
    assert state.task_remove("t2") == "already_absent"
    with pytest.raises(NotFoundError):
        state.task_get("t2")


def test_the_provider_is_authoritative_without_a_cache(
    state: WorkingState, provider: SQLiteProvider
) -> None:
    """Changes made in the provider's database behind the state's back are read at once."""
    state.note_write("plan", "mine")
    state.task_add("a task")
    assert state.project("user_input") is not None
    db = sqlite3.connect(provider.path)
    with db:
        db.execute("UPDATE notes SET v = 'changed elsewhere' WHERE k = 'plan'")
        db.execute("INSERT INTO notes VALUES ('s:s1', 'extra', 'added elsewhere')")
        db.execute("DELETE FROM tasks")
    db.close()
    assert state.note_get("plan") == "changed elsewhere"
    assert state.note_get().keys == ("extra", "plan")
    assert state.tasks() == ()
    assert state.project("tool_result") is None
    projected = state.project("user_input")
    assert projected is not None
    assert "added elsewhere" in projected


def test_two_states_over_one_provider_agree(provider: SQLiteProvider) -> None:
    """A second WorkingState on the same provider (a restart) sees the same state."""
    one = WorkingState(binding=TaskStateBinding(provider), session_id="s1")
    one.note_write("k", "v")
    one.task_add("t")
    two = WorkingState(binding=TaskStateBinding(SQLiteProvider(provider.path)), session_id="s1")
    assert (two.notes(), two.tasks()) == (one.notes(), one.tasks())
    assert WorkingState(binding=TaskStateBinding(provider), session_id="s2").notes() == {}


def test_limits_are_checked_before_the_provider_is_called(provider: SQLiteProvider) -> None:
    """A refused write never reaches the provider and logs nothing."""
    config = WorkingStateConfiguration(max_notes=2, max_tasks=1, max_bytes=100)
    state = WorkingState(binding=TaskStateBinding(provider), session_id="s1", configuration=config)
    state.note_write("a", "1")
    state.note_write("b", "2")
    state.task_add("t")
    writes, logged = list(provider.writes), state.changes()
    with pytest.raises(WorkingStateLimitError, match="max_notes"):
        state.note_write("c", "3")
    with pytest.raises(WorkingStateLimitError, match="max_tasks"):
        state.task_add("u")
    with pytest.raises(WorkingStateLimitError, match="max_bytes"):
        state.note_write("a", "x" * 200)
    assert provider.writes == writes
    assert state.changes() == logged
    assert state.notes() == {"a": "1", "b": "2"}


def test_a_provider_that_raises_leaves_no_change_logged() -> None:
    """A failing write raises TaskStateProviderError with the cause; nothing is logged."""
    provider = DictProvider()
    state = WorkingState(binding=TaskStateBinding(provider, name="crm"), session_id="s1")
    state.note_write("kept", "v")
    provider.fail = OSError("disk on fire")
    attempts: list[Callable[[], object]] = [
        lambda: state.note_write("a", "1"),
        lambda: state.note_delete("kept"),
        lambda: state.task_add("t"),
    ]
    for attempt in attempts:
        with pytest.raises(TaskStateProviderError, match=r"'crm' failed .*disk on fire") as error:
            attempt()
        assert isinstance(error.value.__cause__, OSError)
    assert [c.key for c in state.changes()] == ["kept"]
    provider.fail = None
    assert state.note_write("a", "1") == "created"
    assert [c.sequence for c in state.changes()] == [1, 2]


def test_taskctx_errors_from_a_provider_pass_through() -> None:
    """A provider refusing by policy keeps its PolicyError."""
    provider = DictProvider()
    provider.fail = PolicyError("read-only tenant")
    state = WorkingState(binding=TaskStateBinding(provider), session_id="s1")
    with pytest.raises(PolicyError, match="read-only tenant"):
        state.note_write("a", "1")
    assert state.changes() == ()


def test_a_provider_returning_garbage_is_reported() -> None:
    """Notes that are not str to str are a TaskStateProviderError, not a silent guess."""
    provider = DictProvider()
    provider.bad_notes = {"a": 1}
    state = WorkingState(binding=TaskStateBinding(provider), session_id="s1")
    with pytest.raises(TaskStateProviderError, match="not a mapping of str to str"):
        state.note_get()


def test_a_binding_needs_a_provider() -> None:
    """An object without the provider methods is refused, naming what is missing."""

    class Half:
        def load_notes(self, session_id: str | None) -> dict[str, str]:
            return {}

    with pytest.raises(TypeError, match="missing load_tasks, write_note"):
        TaskStateBinding(Half())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not both"):
        WorkingState("somewhere", "s1", binding=TaskStateBinding(DictProvider()))


def test_global_memory_through_a_provider() -> None:
    """Global memory asks the provider with session_id None."""
    provider = DictProvider()
    WorkingState.global_memory(binding=TaskStateBinding(provider)).note_write("g", "v")
    assert provider.notes == {None: {"g": "v"}}


def test_provider_task_ids_follow_the_highest_number(state: WorkingState) -> None:
    """Generated ids are one past the highest t<n> the provider holds."""
    state.task_add("a")
    state.task_add("b", task_id="t7")
    assert state.task_add("c").id == "t8"


def test_change_log_in_provider_mode_is_bounded_and_value_free(provider: SQLiteProvider) -> None:
    """Changes are logged after the provider committed, capped, and never hold values."""
    config = WorkingStateConfiguration(max_changes=3)
    state = WorkingState(binding=TaskStateBinding(provider), session_id="s1", configuration=config)
    for n in range(5):
        state.note_write(f"k{n}", "secret value")
    changes = state.changes()
    assert [c.sequence for c in changes] == [3, 4, 5]
    assert "secret" not in json.dumps([c.model_dump() for c in changes])
