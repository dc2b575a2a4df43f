"""Every RecordStore method that names a record takes the RecordRef ``put`` returned."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from taskctx_records import Record, RecordRef, RecordStore

NamedBy = Callable[[RecordRef, Record], object]
"""Turns (the ref put returned, the record get read) into what a test passes."""

NAMES: dict[str, NamedBy] = {
    "ref": lambda ref, record: ref,
    "str": lambda ref, record: ref.id,
    "record": lambda ref, record: record,
}

BAD_VALUES: list[Any] = [42, None, b"rec_0000000000000001", {"id": "x"}, 1.5, ["x"]]

Call = Callable[[RecordStore, Any, RecordRef], object]
"""Calls one store method with ``value`` where it takes a record id (``other`` alive too)."""

CALLS: dict[str, tuple[str, Call]] = {
    "get": ("record_id", lambda s, v, o: s.get(v)),
    "get at_revision": ("record_id", lambda s, v, o: s.get(v, at_revision=s.revision)),
    "read_bounded": ("record_id", lambda s, v, o: s.read_bounded(v, 0, 3)),
    "link source": ("source_id", lambda s, v, o: s.link(v, o, "cites")),
    "link target": ("target_id", lambda s, v, o: s.link(o, v, "cites")),
    "links": ("record_id", lambda s, v, o: s.links(v)),
    "links in": ("record_id", lambda s, v, o: s.links(v, direction="in")),
    "put record_id": ("record_id", lambda s, v, o: s.put("v2", collection="c", record_id=v)),
    "put_many record_id": (
        "record_id",
        lambda s, v, o: s.put_many([{"content": "v2", "collection": "c", "record_id": v}]),
    ),
    "delete": ("record_id", lambda s, v, o: s.delete(v)),
    "iter_visible after_id": (
        "after_id",
        lambda s, v, o: s.iter_visible(None, None, s.revision, after_id=v),
    ),
    "pinned_view.get": ("record_id", lambda s, v, o: _pinned_get(s, v)),
}


def _pinned_get(store: RecordStore, value: Any) -> Record:
    with store.pinned_view() as view:
        return view.get(value)


def _two_records(root: Path | str) -> tuple[RecordStore, RecordRef, RecordRef]:
    store = RecordStore(root)
    first = store.put("hello", collection="c")
    other = store.put("other", collection="c")
    return store, first, other


@pytest.mark.parametrize("how", sorted(NAMES))
@pytest.mark.parametrize("call", sorted(CALLS))
def test_each_method_takes_a_ref_an_id_or_a_record(tmp_path: Path, call: str, how: str) -> None:
    """Each method gives the same answer for the RecordRef, its id string and the Record."""
    store, first, other = _two_records(tmp_path / how)
    named = NAMES[how](first, store.get(first.id))
    result = CALLS[call][1](store, named, other)
    expected_store, expected_first, expected_other = _two_records(tmp_path / "by-id")
    expected = CALLS[call][1](expected_store, expected_first.id, expected_other)
    assert _comparable(result) == _comparable(expected)


def _comparable(value: object) -> object:
    """A value with its write times dropped (two stores never write at the same instant)."""
    if isinstance(value, list):
        return [_comparable(item) for item in value]
    if isinstance(value, BaseModel):
        return value.model_dump(exclude={"created_at"})
    return value


def test_ref_names_the_record_not_its_version(store_root: Path | str) -> None:
    """get(ref) of an older version reads the record as of now (or at_revision), like its id."""
    store = RecordStore(store_root)
    first = store.put("v1", collection="c")
    store.put("v2", collection="c", record_id=first)
    assert store.get(first).content == "v2"
    assert store.get(first).version == 2
    assert store.get(first, at_revision=first.revision).content == "v1"
    assert store.read_bounded(first).text == "v2"


NONE_MEANS_DEFAULT = {"put record_id", "put_many record_id", "iter_visible after_id"}
"""Calls where None is the documented default (a new record; from the start)."""


@pytest.mark.parametrize(
    ("call", "bad"),
    [
        pytest.param(call, bad, id=f"{call}-{type(bad).__name__}")
        for call in sorted(CALLS)
        for bad in BAD_VALUES
        if not (bad is None and call in NONE_MEANS_DEFAULT)
    ],
)
def test_a_wrong_type_is_a_type_error_naming_the_parameter(
    store_root: Path | str, call: str, bad: Any
) -> None:
    """int, None, bytes, dict, float or list where a record is named: TypeError naming it."""
    parameter, run = CALLS[call]
    store, _, other = _two_records(store_root)
    revision = store.revision
    with pytest.raises(TypeError) as caught:
        run(store, bad, other)
    message = str(caught.value)
    assert parameter in message
    assert "record id (str), a RecordRef or a Record" in message
    assert type(bad).__name__ in message
    assert "Error binding parameter" not in message
    assert store.revision == revision  # nothing was written


def test_empty_id_is_still_a_value_error(store_root: Path | str) -> None:
    """An empty string record_id for put stays the ValueError it was."""
    store = RecordStore(store_root)
    with pytest.raises(ValueError, match="non-empty"):
        store.put("x", collection="c", record_id="")
