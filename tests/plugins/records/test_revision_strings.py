"""One parser and formatter of the ``r<N>`` revision and ``r<N>:<sha256>`` version strings."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from taskctx_records import RecordStore
from taskctx_records.source import RecordSource
from taskctx_records.values import (
    format_content_version,
    format_revision,
    parse_content_version,
    parse_revision,
)

from taskctx.model import EnumerationRequest

SHA = "0" * 64


@pytest.mark.parametrize("revision", [0, 1, 7, 10, 1234567890123])
def test_revision_round_trips(revision: int) -> None:
    """``format_revision`` writes ``r<N>`` and ``parse_revision`` reads it back."""
    assert format_revision(revision) == f"r{revision}"
    assert parse_revision(format_revision(revision)) == revision
    version = format_content_version(revision, SHA)
    assert version == f"r{revision}:{SHA}"
    assert parse_content_version(version) == revision


@pytest.mark.parametrize(
    "text",
    ["", "r", "5", "R5", "r-1", "r+1", "r1.0", "r 1", " r1", "r1 ", "r01", "r١", "rx", "r1:"],
)
def test_parse_revision_refuses_anything_else(text: str) -> None:
    """Every other string is a ValueError that quotes it."""
    with pytest.raises(ValueError, match="not a record store revision") as raised:
        parse_revision(text)
    assert repr(text) in str(raised.value)


@pytest.mark.parametrize("bad", [None, 5, b"r5", ["r5"]])
def test_parse_revision_refuses_other_types(bad: object) -> None:
    """A non-string is a ValueError naming the value, not an AttributeError."""
    with pytest.raises(ValueError, match="not a record store revision"):
        parse_revision(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [-1, True, 1.0, "1", None])
def test_format_revision_refuses_non_revisions(bad: object) -> None:
    """Only an int >= 0 is a revision (``True`` is not 1 here)."""
    with pytest.raises(ValueError, match="store revision is an int"):
        format_revision(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("text", ["", "r5", "sha256:" + SHA, f"x5:{SHA}", f"r:{SHA}", None])
def test_parse_content_version_refuses_anything_else(text: str) -> None:
    """A content version needs ``r<N>`` then ``:``; anything else is a ValueError."""
    with pytest.raises(ValueError, match="not a record"):
        parse_content_version(text)


def test_source_writes_and_reads_one_format(store_root: Path | str) -> None:
    """The source's revision, page revision, content versions and journal all agree."""
    store = RecordStore(store_root)
    store.put("one", collection="notes")
    store.put("two", collection="notes")
    source = RecordSource(store)
    revision = asyncio.run(source.async_revision())
    assert parse_revision(revision) == store.revision == 2
    page = asyncio.run(
        source.async_enumerate_descriptors(EnumerationRequest(revision="r1", page_size=10))
    )
    assert page.revision == "r1"
    assert [parse_content_version(d.content_version or "") for d in page.descriptors] == [1]
    changes = asyncio.run(source.async_changes("r1"))
    assert changes is not None
    assert (changes.since, changes.revision, len(changes.upserts)) == ("r1", "r2", 1)
    assert asyncio.run(source.async_changes("r01")) is None
    assert asyncio.run(source.async_changes("1")) is None
