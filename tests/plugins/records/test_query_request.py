"""One query spec: ``RecordStore.query`` and ``PinnedView.query`` share one argument list."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest
from taskctx_records import PinnedView, RecordStore
from taskctx_records.request import query_request

from taskctx.errors import CursorError

CONTRACT = ["collection", "kind", "scope", "filters", "order", "page_size", "cursor_ttl"]


@pytest.fixture
def store(store_root: Path | str) -> RecordStore:
    """A store with six records in ``checks``."""
    store = RecordStore(store_root)
    store.put_many([{"content": f"check {n}", "collection": "checks"} for n in range(6)])
    return store


def test_both_queries_have_one_signature() -> None:
    """Store and view take the same parameters, defaults first as the DESIGN contract says."""
    store_params = list(inspect.signature(RecordStore.query).parameters.values())[1:]
    view_params = list(inspect.signature(PinnedView.query).parameters.values())[1:]
    assert store_params == view_params
    assert store_params == list(inspect.signature(query_request).parameters.values())
    assert [p.name for p in store_params][: len(CONTRACT)] == CONTRACT
    defaults = {p.name: p.default for p in store_params}
    assert defaults == {
        "collection": None,
        "kind": None,
        "scope": None,
        "filters": None,
        "order": "asc",
        "page_size": 50,
        "cursor_ttl": 3600,
        "max_records": None,
        "max_bytes": None,
        "cursor": None,
    }


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"order": "sideways"}, "order must be 'asc' or 'desc'"),
        ({"page_size": 0}, "page_size must be at least 1"),
        ({"max_records": 0}, "max_records must be at least 1"),
        ({"max_bytes": 0}, "max_bytes must be at least 1"),
        ({"filters": {"content..x": 1}}, "invalid filter path"),
        ({"cursor_ttl": 0}, "cursor_ttl"),
        ({"cursor_ttl": -5}, "cursor_ttl"),
    ],
)
def test_both_queries_refuse_the_same_arguments(
    store: RecordStore, arguments: dict[str, Any], message: str
) -> None:
    """Each bad argument is the same ValueError from the store and from a pinned view."""
    with pytest.raises(ValueError, match=message):
        store.query(**arguments)
    with store.pinned_view() as view, pytest.raises(ValueError, match=message):
        view.query(**arguments)


def test_both_queries_refuse_unknown_and_positional_extras(store: RecordStore) -> None:
    """A misspelled keyword or a positional keyword-only argument is a TypeError in both."""
    with store.pinned_view() as view:
        for query in (store.query, view.query):
            with pytest.raises(TypeError):
                query(colection="checks")  # type: ignore[call-arg]
            with pytest.raises(TypeError):
                query("checks", None, None, None, "asc", 50, 3600, 5)  # type: ignore[call-arg]


def test_view_continues_its_own_cursor(store: RecordStore) -> None:
    """``view.query(..., cursor=...)`` continues the view's query, as ``store.query`` does."""
    with store.pinned_view() as view:
        first = view.query(collection="checks", page_size=4)
        assert first.cursor is not None
        store.put("later", collection="checks")
        second = view.query(collection="checks", page_size=4, cursor=first.cursor)
        assert [r.content for r in second.records] == ["check 4", "check 5"]
        assert second.revision == view.revision
        with pytest.raises(CursorError, match="another query"):
            view.query(collection="checks", page_size=3, cursor=first.cursor)
    from_store = store.query(collection="checks", page_size=4, cursor=first.cursor)
    assert [r.id for r in from_store.records] == [r.id for r in second.records]
