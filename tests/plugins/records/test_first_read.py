"""A first read of a record store renders and decodes each record once: enumeration hands
the index sync the text of each record it listed (``DescriptorPage.texts``), exactly the
text a read of it from SQLite gives, and the sync reads none of them again."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import taskctx_records.query
import taskctx_records.source
from taskctx_records import RecordStore
from taskctx_records.source import RecordSource

from taskctx import ContextBudget, NotFoundError, PluginHost, TaskContext
from taskctx.model import ContextRef, EnumerationRequest, ExactRead, SourceDescriptor
from tests.plugins.records.tracing import trace_statements

SCOPE = {"task": "t"}


@pytest.fixture
def store(store_root: Path | str) -> RecordStore:
    """Forty JSON records, a text record, a bytes record and one of another scope."""
    store = RecordStore(store_root)
    store.put_many(
        [
            {
                "content": {"i": n, "text": f"upload {n} failed", "tags": ["a", {"é": n / 3}]},
                "collection": "obs",
                "scope": SCOPE,
                "record_id": f"j{n:03d}",
            }
            for n in range(40)
        ]
    )
    store.put("upload notes", collection="notes", scope=SCOPE, record_id="note")
    store.put(b"\x89PNG\r\n\x1a\n", collection="blobs", scope=SCOPE, record_id="blob")
    store.put("upload elsewhere", collection="obs", scope={"task": "u"}, record_id="other")
    return store


def counting(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[int]:
    """Count the calls of ``module.name`` (the real function still runs)."""
    calls: list[int] = []
    real: Callable[..., Any] = getattr(module, name)

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)
    return calls


def enumerate_with_texts(
    source: RecordSource, page_size: int = 7
) -> list[tuple[SourceDescriptor, str | None]]:
    """Every descriptor of ``source`` with the text its page handed over, page by page,
    as an index sync enumerates."""
    found: list[tuple[SourceDescriptor, str | None]] = []
    cursor: str | None = None
    while True:
        page = asyncio.run(
            source.async_enumerate_descriptors(
                EnumerationRequest(cursor=cursor, page_size=page_size)
            )
        )
        assert page.texts is not None
        found.extend(zip(page.descriptors, page.texts, strict=True))
        if page.next_cursor is None:
            return found
        cursor = page.next_cursor


def enumerate_all(source: RecordSource, page_size: int = 7) -> list[SourceDescriptor]:
    """Every descriptor of ``source``, page by page, as an index sync enumerates."""
    return [descriptor for descriptor, _ in enumerate_with_texts(source, page_size)]


def pinned(descriptor: SourceDescriptor) -> ContextRef:
    """The ref an index sync reads a descriptor by: pinned at its content version."""
    return ContextRef(binding="r", path=descriptor.path, version=descriptor.content_version)


def answer_facts(answer: ExactRead | Exception) -> Any:
    """An answer as comparable facts: a read's fields, or an error's type and message."""
    if isinstance(answer, Exception):
        return (type(answer).__name__, str(answer))
    return answer.model_dump()


def test_a_first_read_renders_and_decodes_each_record_once(
    store: RecordStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Enumeration renders and decodes each record once and the index sync reads none of
    them: the only records read are the delivered blocks, in one batched query."""
    renders = counting(monkeypatch, taskctx_records.source, "_text_of")
    # enumeration decodes in the source (from rows), a read of a Record in the query module
    decodes = [
        counting(monkeypatch, taskctx_records.query, "decode"),
        counting(monkeypatch, taskctx_records.source, "decode"),
    ]
    statements = trace_statements(store, monkeypatch)
    context = TaskContext(
        "t", host=PluginHost(allow=["taskctx-records", "taskctx-fts"]), state_dir=tmp_path / "st"
    )
    context.attach(store.source(scope=SCOPE), binding_id="records")
    package = context.reader("a", budget=ContextBudget(max_chars=4000, max_blocks=6)).read("upload")
    (state,) = context.index.states.values()
    assert state.last_sync is not None
    context.index.close()
    delivered = {block.ref.path for block in package.blocks}
    assert len(delivered) > 1  # the read found and delivered records
    visible = 42  # forty JSON records, the note and the blob
    assert state.last_sync.added == visible
    assert len(renders) == visible + len(delivered)
    assert sum(map(len, decodes)) == visible + len(delivered)
    assert len([s for s in statements if "FROM wanted" in s]) == 1
    assert not [s for s in statements if "r.id = ? AND" in s]


def test_handed_texts_are_the_texts_the_store_reads(store: RecordStore) -> None:
    """Each text a page hands over is the text a read of its pinned ref gives from SQLite
    (None where a read gives no text: bytes); every page hands one per descriptor."""
    source = store.source(scope=SCOPE)
    listed = enumerate_with_texts(source)
    assert len(listed) == 42
    reads = asyncio.run(
        store.source(scope=SCOPE).async_read_exact_many([pinned(d) for d, _ in listed])
    )
    for (descriptor, text), read in zip(listed, reads, strict=True):
        assert isinstance(read, ExactRead)
        assert read.content_version == descriptor.content_version
        assert text == read.text
    assert {d.path: t for d, t in listed}["blob"] is None
    prefixed = asyncio.run(
        source.async_enumerate_descriptors(EnumerationRequest(path_prefix="j00", page_size=500))
    )
    assert len(prefixed.descriptors) == len(prefixed.texts or ()) == 10
    assert prefixed.texts == tuple(t for d, t in listed if d.path.startswith("j00"))


def test_a_version_written_after_enumeration_is_never_served_stale(store: RecordStore) -> None:
    """After a new version of a record, a read of the current version or of the new
    content version gets the new text; the old pinned version still reads the old."""
    source = store.source(scope=SCOPE)
    old = {d.path: d for d in enumerate_all(source)}["note"]
    store.put("revised notes", collection="notes", scope=SCOPE, record_id="note")
    new = {d.path: d for d in enumerate_all(store.source(scope=SCOPE))}["note"]
    assert new.content_version != old.content_version
    current, at_new, at_old = asyncio.run(
        source.async_read_exact_many(
            [ContextRef(binding="r", path="note"), pinned(new), pinned(old)]
        )
    )
    assert isinstance(current, ExactRead)
    assert current.text == "revised notes"
    assert isinstance(at_new, ExactRead)
    assert at_new.text == "revised notes"
    assert at_new.content_version == new.content_version
    assert isinstance(at_old, ExactRead)
    assert at_old.text == "upload notes"
    assert at_old.content_version == old.content_version
    store.delete("note")
    with pytest.raises(NotFoundError, match="not in the store"):
        asyncio.run(source.async_read_exact(ContextRef(binding="r", path="note"), None))
    revised = asyncio.run(source.async_read_exact(pinned(new), None))
    assert revised.text == "revised notes"  # the pinned version, deleted since, still reads


def test_enumerated_descriptors_equal_those_of_the_records_read(store_root: Path | str) -> None:
    """Enumeration renders from SQLite rows without making Records; its descriptors and
    reads are exactly those the journal renders from Records: JSON, text, bytes, text
    holding NUL, meta, no kind, non-ASCII, a new version and a tombstone; and each equals
    the descriptor validation makes of its fields."""
    store = RecordStore(store_root)
    store.put({"b": [1, 2.5, None, True], "a": "é"}, collection="obs", kind="k", scope=SCOPE)
    store.put("plain", collection="notes", scope=SCOPE, meta={"by": {"name": "ann"}})
    store.put(b"\x00\x01", collection="blobs", scope=SCOPE, record_id="blob")
    store.put("nul\x00inside", collection="notes", kind="n", scope=SCOPE, record_id="nul")
    store.put("first", collection="notes", scope=SCOPE, record_id="twice")
    store.put("second", collection="notes", scope=SCOPE, record_id="twice")
    store.put("gone", collection="notes", scope=SCOPE, record_id="gone")
    store.delete("gone")
    store.put("elsewhere", collection="notes", scope={"task": "u"})
    listed = enumerate_with_texts(store.source(scope=SCOPE), page_size=2)
    journal = asyncio.run(store.source(scope=SCOPE).async_changes("r0"))
    assert journal is not None
    assert journal.texts is not None
    by_path = sorted(zip(journal.upserts, journal.texts, strict=True), key=lambda p: p[0].path)
    assert listed == by_path
    assert {d.path for d, _ in listed} >= {"blob", "nul", "twice"}
    for descriptor, _ in listed:  # built unvalidated: each is what validation makes
        fields = {name: getattr(descriptor, name) for name in descriptor.model_fields_set}
        validated = SourceDescriptor(**fields)
        assert descriptor == validated
        assert descriptor.model_fields_set == validated.model_fields_set
        assert descriptor.model_dump_json() == validated.model_dump_json()
        assert SourceDescriptor.model_validate_json(descriptor.model_dump_json()) == descriptor
    assert {d.path: t for d, t in listed}["nul"] is None  # NUL text is no text
