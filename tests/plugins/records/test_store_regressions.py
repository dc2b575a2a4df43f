"""Regressions found while documenting the store."""

from __future__ import annotations

from pathlib import Path

import pytest
from taskctx_records import RecordStore


def test_text_with_nul_is_read_whole(store_root: Path | str) -> None:
    """read_bounded slices text with a NUL by characters, not up to the NUL."""
    store = RecordStore(store_root)
    ref = store.put("ab\x00cdef", collection="c")
    whole = store.read_bounded(ref.id)
    assert (whole.text, whole.chars, whole.eof) == ("ab\x00cdef", 7, True)
    part = store.read_bounded(ref.id, offset=2, limit=3)
    assert (part.text, part.eof) == ("\x00cd", False)


def test_automatic_id_form_is_reserved(store_root: Path | str) -> None:
    """A caller cannot create a record with an id of the automatic form; updates still work."""
    store = RecordStore(store_root)
    with pytest.raises(ValueError, match="automatic ids"):
        store.put("named", collection="c", record_id="rec_0000000000000002")
    first = store.put("auto", collection="c")
    again = store.put("auto v2", collection="c", record_id=first.id)
    assert again.version == 2
    assert store.put("next", collection="c").id != first.id
