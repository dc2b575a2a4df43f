"""Materialization budget and pinned views."""

from __future__ import annotations

from pathlib import Path

import pytest
from taskctx_records import MaterializationWarning, PinnedViewLimitError, RecordStore

from taskctx.errors import CursorError, MaterializationBudgetError, NotFoundError


def _filled(root: Path | str, count: int = 30, **options: object) -> RecordStore:
    store = RecordStore(root, **options)  # type: ignore[arg-type]
    store.put_many([{"content": f"r{i}", "collection": "c"} for i in range(count)])
    return store


def test_over_budget_warns_and_records_the_call_site(store_root: Path | str) -> None:
    """An operation expanding more than the limit warns and records the caller's file:line."""
    store = _filled(store_root, materialization_limit=10)
    with pytest.warns(MaterializationWarning, match="materialization budget"):
        store.query(page_size=20)
    events = store.materialization_events
    assert len(events) == 1
    assert events[0].call_site.startswith(__file__)
    assert events[0].count == 20
    assert events[0].limit == 10
    store.query(page_size=10)
    assert len(store.materialization_events) == 1


def test_strict_mode_raises(store_root: Path | str) -> None:
    """strict=True raises MaterializationBudgetError instead of warning."""
    store = _filled(store_root, materialization_limit=10, strict=True)
    with pytest.raises(MaterializationBudgetError):
        store.query(page_size=11)
    with pytest.raises(MaterializationBudgetError):
        store.iter_visible(None, None, store.revision, limit=11)
    assert store.materialization_events == []


def test_default_limit(store_root: Path | str) -> None:
    """The default materialization limit is 50,000."""
    assert RecordStore(store_root).materialization_limit == 50_000


def test_pinned_view_fixes_one_revision(store_root: Path | str) -> None:
    """Queries and gets in a pinned view read one revision, whatever is written meanwhile."""
    store = _filled(store_root, 5)
    first_id = store.query().records[0].id
    with store.pinned_view() as view:
        pinned = view.revision
        store.put("new", collection="c")
        store.delete(first_id)
        assert len(view.query(collection="c").records) == 5
        assert view.get(first_id).content == "r0"
        page = view.query(page_size=2)
        assert page.cursor is not None
        assert view.query_continue(page.cursor).revision == pinned
    with pytest.raises(NotFoundError):
        store.get(first_id)


def test_pinned_view_limits(store_root: Path | str) -> None:
    """Candidates, bytes and lifetime limits raise clear errors; a closed view refuses use."""
    store = _filled(store_root, 30)
    with store.pinned_view(max_candidates=25) as view:
        view.query(page_size=20)
        with pytest.raises(PinnedViewLimitError, match="over its limit of 25"):
            view.query(page_size=20)
    with (
        store.pinned_view(max_bytes=10) as view,
        pytest.raises(PinnedViewLimitError, match="bytes"),
    ):
        view.query(page_size=20)
    with (
        store.pinned_view(lifetime_s=0.0) as view,
        pytest.raises(PinnedViewLimitError, match="lifetime"),
    ):
        view.query()
    with pytest.raises(PinnedViewLimitError, match="closed"):
        view.query()


def test_pinned_view_refuses_a_cursor_of_another_revision(store_root: Path | str) -> None:
    """A cursor issued outside the view's revision is refused by the view."""
    store = _filled(store_root, 10)
    cursor = store.query(page_size=2).cursor
    assert cursor is not None
    store.put("more", collection="c")
    with store.pinned_view() as view, pytest.raises(CursorError):
        view.query_continue(cursor)
