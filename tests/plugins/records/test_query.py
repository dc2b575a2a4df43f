"""Queries: keyset pages, snapshot-bound signed cursors, coverage, filters, delivery budget."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from taskctx_records import QueryPage, RecordStore

from taskctx.errors import CursorError
from taskctx.model import CoverageOutcome, CoverageStatus


@pytest.fixture
def store(store_root: Path | str) -> RecordStore:
    """A store with 25 records in scope review-42 and 5 outside it."""
    store = RecordStore(store_root)
    store.put_many(
        [
            {
                "content": {"n": i, "status": "failed" if i % 5 == 0 else "ok"},
                "collection": "obs",
                "kind": "review_result",
                "scope": {"task_id": "review-42"},
                "meta": {"reviewer": {"name": "ann" if i < 10 else "bob"}},
            }
            for i in range(25)
        ]
    )
    store.put_many(
        [{"content": i, "collection": "obs", "scope": {"task_id": "x"}} for i in range(5)]
    )
    return store


def _drain(store: RecordStore, page: QueryPage) -> list[QueryPage]:
    pages = [page]
    while pages[-1].has_more:
        cursor = pages[-1].cursor
        assert cursor is not None
        pages.append(store.query_continue(cursor))
    return pages


def test_single_page_is_complete(store: RecordStore) -> None:
    """One page holding the whole matching set is complete."""
    page = store.query(collection="obs", scope={"task_id": "review-42"}, page_size=100)
    assert len(page.records) == 25
    assert page.has_more is False
    assert page.cursor is None
    cov = page.coverage
    assert (cov.status, cov.considered, cov.delivered, cov.omitted) == (
        CoverageStatus.COMPLETE, 25, 25, 0,
    )  # fmt: skip
    assert cov.source_kind == "record_store"
    assert cov.outcome is CoverageOutcome.MATCHED


def test_pages_cover_everything_once_and_last_is_partial(store: RecordStore) -> None:
    """Pages deliver each record once; the last page has has_more False and is partial."""
    pages = _drain(store, store.query(scope={"task_id": "review-42"}, page_size=10))
    assert [len(p.records) for p in pages] == [10, 10, 5]
    ids = [r.id for p in pages for r in p.records]
    assert ids == sorted(ids)
    assert len(set(ids)) == 25
    last = pages[-1].coverage
    assert pages[-1].has_more is False
    assert (last.status, last.considered, last.delivered, last.omitted) == (
        CoverageStatus.PARTIAL, 25, 5, 20,
    )  # fmt: skip
    assert all(p.coverage.status is CoverageStatus.PARTIAL for p in pages)


def test_descending_order(store: RecordStore) -> None:
    """order='desc' pages by id descending."""
    pages = _drain(store, store.query(scope={"task_id": "review-42"}, order="desc", page_size=7))
    ids = [r.id for p in pages for r in p.records]
    assert ids == sorted(ids, reverse=True)
    assert len(ids) == 25


def test_no_match_is_said(store: RecordStore) -> None:
    """A query matching nothing says no_match_in_scope with considered 0."""
    page = store.query(collection="nothing")
    assert page.records == ()
    assert page.coverage.outcome is CoverageOutcome.NO_MATCH_IN_SCOPE
    assert page.coverage.considered == 0


def test_kind_and_multi_key_scope(store_root: Path | str) -> None:
    """kind and every scope key narrow the query."""
    store = RecordStore(store_root)
    store.put(1, collection="c", kind="a", scope={"task_id": "t", "phase": "p1"})
    store.put(2, collection="c", kind="b", scope={"task_id": "t", "phase": "p2"})
    store.put(3, collection="c", kind="a", scope={"task_id": "u", "phase": "p1"})
    assert [r.content for r in store.query(kind="a").records] == [1, 3]
    page = store.query(scope={"task_id": "t", "phase": "p1"})
    assert [r.content for r in page.records] == [1]
    assert page.coverage.considered == 1


def test_filters_on_content_and_meta(store: RecordStore) -> None:
    """Dotted-path equality filters match JSON content and meta."""
    failed = store.query(filters={"content.status": "failed"}, page_size=100)
    assert [r.content["n"] for r in failed.records] == [0, 5, 10, 15, 20]
    assert failed.coverage.status is CoverageStatus.COMPLETE
    assert failed.coverage.considered == 5
    assert failed.coverage.reasons == ("streaming_scan_unmeasured",)
    both = store.query(filters={"status": "failed", "meta.reviewer.name": "ann"})
    assert [r.content["n"] for r in both.records] == [0, 5]
    assert store.query(filters={"n": "3"}).records == ()
    assert [r.content["n"] for r in store.query(filters={"n": 3}).records] == [3]


def test_filtered_multi_page_says_unmeasured(store: RecordStore) -> None:
    """A filtered query over several pages does not claim a count it did not make."""
    page = store.query(filters={"content.status": "ok"}, page_size=5)
    assert page.has_more is True
    assert page.coverage.considered is None
    assert page.coverage.omitted is None
    assert "streaming_scan_unmeasured" in page.coverage.reasons
    assert page.coverage.status is CoverageStatus.PARTIAL


def test_cursor_works_from_a_new_instance(store: RecordStore, store_root: Path | str) -> None:
    """query_continue works from another RecordStore on the same root."""
    page = store.query(scope={"task_id": "review-42"}, page_size=10)
    assert page.cursor is not None
    other = RecordStore(store_root)
    second = other.query_continue(page.cursor)
    assert second.records[0].id > page.records[-1].id
    assert second.revision == page.revision
    assert second.page == 2


def test_cursor_never_shows_newer_history(store: RecordStore) -> None:
    """Later pages show the pinned snapshot: no new records, old versions of updated ones."""
    page = store.query(scope={"task_id": "review-42"}, page_size=10)
    snapshot_ids = {
        r.id for r in store.query(scope={"task_id": "review-42"}, page_size=100).records
    }
    later = [r.id for r in store.query(scope={"task_id": "review-42"}, page_size=100).records][15]
    store.put({"n": 99}, collection="obs", scope={"task_id": "review-42"}, record_id=later)
    store.delete(
        [r.id for r in store.query(scope={"task_id": "review-42"}, page_size=100).records][20]
    )
    store.put({"new": True}, collection="obs", scope={"task_id": "review-42"})
    pages = _drain(store, page)
    ids = [r.id for p in pages for r in p.records]
    assert set(ids) == snapshot_ids
    updated = next(r for p in pages for r in p.records if r.id == later)
    assert updated.content["n"] == 15
    assert updated.version == 1
    fresh = store.query(scope={"task_id": "review-42"}, page_size=100)
    assert fresh.coverage.considered == 25
    assert any(r.content == {"new": True} for r in fresh.records)
    assert next(r for r in fresh.records if r.id == later).content == {"n": 99}


def test_tampered_cursor_is_refused(store: RecordStore) -> None:
    """A cursor with a changed byte does not verify."""
    cursor = store.query(page_size=5).cursor
    assert cursor is not None
    payload, signature = cursor.split(".")
    flipped = payload[:-2] + ("A" if payload[-2] != "A" else "B") + payload[-1]
    with pytest.raises(CursorError):
        store.query_continue(f"{flipped}.{signature}")
    with pytest.raises(CursorError):
        store.query_continue("garbage")


def test_expired_cursor_is_refused(store: RecordStore) -> None:
    """A cursor past its ttl raises CursorError."""
    cursor = store.query(page_size=5, cursor_ttl=0.01).cursor
    assert cursor is not None
    time.sleep(0.05)
    with pytest.raises(CursorError, match="expired"):
        store.query_continue(cursor)


def test_cursor_of_another_query_is_refused(store: RecordStore) -> None:
    """A cursor passed with a different query, or to events_continue, is refused."""
    cursor = store.query(collection="obs", page_size=5).cursor
    assert cursor is not None
    with pytest.raises(CursorError, match="another query"):
        store.query(collection="other", page_size=5, cursor=cursor)
    assert store.query(collection="obs", page_size=5, cursor=cursor).page == 2
    with pytest.raises(CursorError):
        store.events_continue(cursor)


def test_cursor_of_another_store_is_refused(
    store: RecordStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another store's cursor fails, even when both share a key through the environment."""
    monkeypatch.setenv("TASKCTX_CURSOR_KEY", "k" * 40)
    a = RecordStore(tmp_path / "a")
    b = RecordStore(tmp_path / "b")
    for s in (a, b):
        s.put_many([{"content": i, "collection": "c"} for i in range(10)])
    cursor = a.query(page_size=3).cursor
    assert cursor is not None
    with pytest.raises(CursorError, match="another record store"):
        b.query_continue(cursor)


def test_keyset_pages_at_depth(store_root: Path | str) -> None:
    """Deep pages continue exactly where the previous page ended."""
    store = RecordStore(store_root)
    store.put_many([{"content": i, "collection": "c"} for i in range(2_000)])
    pages = _drain(store, store.query(collection="c", page_size=7))
    values = [r.content for p in pages for r in p.records]
    assert values == list(range(2_000))
    assert len(pages) == 286
    assert pages[-1].coverage.omitted == 2_000 - 5


def test_delivery_budget_bounds_a_page(store: RecordStore) -> None:
    """max_records and max_bytes bound what a page returns, and paging continues."""
    page = store.query(scope={"task_id": "review-42"}, page_size=50, max_records=4)
    assert len(page.records) == 4
    assert page.has_more is True
    size = page.records[0].size
    small = store.query(scope={"task_id": "review-42"}, max_bytes=size * 3 + 1)
    assert len(small.records) == 3
    assert small.has_more is True
    pages = _drain(store, small)
    assert sum(len(p.records) for p in pages) == 25
    assert all(sum(r.size for r in p.records) <= size * 3 + 1 for p in pages)
