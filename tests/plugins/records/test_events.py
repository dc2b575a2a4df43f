"""Events: per-stream sequences, idempotency, expected_sequence, indexed queries, cursors."""

from __future__ import annotations

from pathlib import Path

import pytest
from taskctx_records import EventConflictError, RecordStore

from taskctx.errors import CursorError
from taskctx.model import CoverageStatus


@pytest.fixture
def store(store_root: Path | str) -> RecordStore:
    """A fresh store."""
    return RecordStore(store_root)


def test_sequences_count_per_stream(store: RecordStore) -> None:
    """Each stream numbers its events from 1."""
    a1 = store.append_event("a", "started", {"x": 1}, actor="bot", task_id="t1")
    b1 = store.append_event("b", "started", {})
    a2 = store.append_event("a", "finished", {"x": 2})
    assert (a1.sequence, b1.sequence, a2.sequence) == (1, 1, 2)
    assert a1.revision < b1.revision < a2.revision
    assert (a1.actor, a1.task_id, a1.payload) == ("bot", "t1", {"x": 1})


def test_idempotency_key_returns_the_same_event(store: RecordStore) -> None:
    """The same key on a stream returns the stored event and writes nothing."""
    first = store.append_event("a", "t", {"v": 1}, idempotency_key="k1")
    revision = store.revision
    again = store.append_event("a", "t", {"v": 1}, idempotency_key="k1")
    assert again == first
    assert store.revision == revision
    other_stream = store.append_event("b", "t", {"v": 1}, idempotency_key="k1")
    assert other_stream.sequence == 1
    assert other_stream.revision == revision + 1


def test_idempotency_key_reused_for_another_event_conflicts(store: RecordStore) -> None:
    """Reusing a key for a different payload is a conflict, not a silent replay."""
    store.append_event("a", "t", {"v": 1}, idempotency_key="k1")
    with pytest.raises(EventConflictError, match="idempotency key"):
        store.append_event("a", "t", {"v": 2}, idempotency_key="k1")


def test_expected_sequence(store: RecordStore) -> None:
    """expected_sequence is the stream's last sequence (0 when empty); a mismatch conflicts."""
    store.append_event("a", "t", {}, expected_sequence=0)
    store.append_event("a", "t", {}, expected_sequence=1)
    with pytest.raises(EventConflictError) as conflict:
        store.append_event("a", "t", {}, expected_sequence=1)
    assert (conflict.value.expected, conflict.value.actual) == (1, 2)
    assert store.events("a").coverage.considered == 2


def test_queries_by_task_type_actor_stream(store: RecordStore) -> None:
    """events() filters by stream, task id, type and actor, in revision order."""
    for i in range(12):
        store.append_event(
            f"s{i % 2}",
            "odd" if i % 2 else "even",
            {"i": i},
            actor=f"a{i % 3}",
            task_id=f"t{i % 4}",
        )
    assert [e.payload["i"] for e in store.events(task_id="t1").events] == [1, 5, 9]
    assert [e.payload["i"] for e in store.events("s0", type="even", actor="a0").events] == [0, 6]
    desc = store.events(task_id="t1", order="desc")
    assert [e.payload["i"] for e in desc.events] == [9, 5, 1]
    assert desc.coverage.status is CoverageStatus.COMPLETE


@pytest.mark.sqlite_only
def test_task_query_uses_the_index(store: RecordStore) -> None:
    """A query by task id is answered through the task index (decoding only its hits)."""
    plan = store._conn.execute(
        "EXPLAIN QUERY PLAN SELECT * FROM events WHERE revision <= 9 AND task_id = 't' "
        "ORDER BY revision LIMIT 5"
    ).fetchall()
    assert any("events_by_task" in row["detail"] for row in plan), [tuple(r) for r in plan]


def test_event_pages_are_snapshot_bound(store: RecordStore, store_root: Path | str) -> None:
    """Event cursors continue the pinned snapshot from a new instance; the last page is partial."""
    for i in range(7):
        store.append_event("s", "t", {"i": i}, task_id="t")
    page = store.events(task_id="t", page_size=3)
    store.append_event("s", "t", {"i": 99}, task_id="t")
    seen = list(page.events)
    other = RecordStore(store_root)
    while page.has_more:
        assert page.cursor is not None
        page = other.events_continue(page.cursor)
        seen += page.events
    assert [e.payload["i"] for e in seen] == list(range(7))
    assert page.coverage.status is CoverageStatus.PARTIAL
    assert (page.coverage.considered, page.coverage.omitted) == (7, 6)
    assert store.events(task_id="t", page_size=100).coverage.considered == 8


def test_event_cursor_is_not_a_query_cursor(store: RecordStore) -> None:
    """An events cursor is refused by query_continue."""
    for _ in range(3):
        store.append_event("s", "t", {})
    cursor = store.events(page_size=1).cursor
    assert cursor is not None
    with pytest.raises(CursorError):
        store.query_continue(cursor)
