"""A first read of a record store renders and decodes each record once: the index sync's
exact reads are served from what enumeration rendered, exactly as SQLite would serve them."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import taskctx_records.query
import taskctx_records.source
from taskctx_records import RecordStore
from taskctx_records.rendered import ENTRY_CHARS, Rendered, RenderedCache
from taskctx_records.source import RecordSource

from taskctx import ContextBudget, NotFoundError, PluginHost, TaskContext
from taskctx.model import ContextRef, EnumerationRequest, ExactRead, SourceDescriptor

SCOPE = {"task": "t"}


@pytest.fixture
def store(tmp_path: Path) -> RecordStore:
    """Forty JSON records, a text record, a bytes record and one of another scope."""
    store = RecordStore(tmp_path / "store")
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


def enumerate_all(source: RecordSource, page_size: int = 7) -> list[SourceDescriptor]:
    """Every descriptor of ``source``, page by page, as an index sync enumerates."""
    found: list[SourceDescriptor] = []
    cursor: str | None = None
    while True:
        page = asyncio.run(
            source.async_enumerate_descriptors(
                EnumerationRequest(cursor=cursor, page_size=page_size)
            )
        )
        found.extend(page.descriptors)
        if page.next_cursor is None:
            return found
        cursor = page.next_cursor


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
    """Enumeration and the index sync's reads together render and decode each record
    once, and the sync's reads query no records from SQLite."""
    renders = counting(monkeypatch, taskctx_records.source, "_text_of")
    # enumeration decodes in the source (from rows), a read of a Record in the query module
    decodes = [
        counting(monkeypatch, taskctx_records.query, "decode"),
        counting(monkeypatch, taskctx_records.source, "decode"),
    ]
    statements: list[str] = []
    store._conn.set_trace_callback(statements.append)
    context = TaskContext(
        "t", host=PluginHost(allow=["taskctx-records", "taskctx-fts"]), state_dir=tmp_path / "st"
    )
    context.attach(store.source(scope=SCOPE), binding_id="records")
    package = context.reader("a", budget=ContextBudget(max_chars=4000, max_blocks=6)).read("upload")
    context.index.close()
    store._conn.set_trace_callback(None)
    assert package.blocks  # the read found and delivered records
    visible = 42  # forty JSON records, the note and the blob
    assert len(renders) == visible
    assert sum(map(len, decodes)) == visible
    assert not [s for s in statements if "FROM wanted" in s or "r.id = ? AND" in s]


def test_served_reads_are_the_reads_the_store_gives(store: RecordStore) -> None:
    """Reads served from what enumeration rendered equal the reads a fresh source makes
    from SQLite: text, bytes, digest, content version, limits and refusals."""
    source = store.source(scope=SCOPE)
    descriptors = enumerate_all(source)
    assert len(source.rendered) == len(descriptors) == 42
    refs = [pinned(d) for d in descriptors]
    refs += [
        ContextRef(binding="r", path="other", version="r43:" + "0" * 64),  # another scope
        ContextRef(binding="r", path="nope"),
        ContextRef(binding="r", path="j001", version="r1:" + "0" * 64),  # a forged digest
    ]
    for limit in (None, 5):
        served = asyncio.run(source.async_read_exact_many(refs, limit))
        fresh = asyncio.run(store.source(scope=SCOPE).async_read_exact_many(refs, limit))
        assert [answer_facts(a) for a in served] == [answer_facts(a) for a in fresh]
        enumerate_all(source)  # kept again for the next limit
    singly = store.source(scope=SCOPE)
    enumerate_all(singly)
    for ref in refs[:3]:
        one = asyncio.run(singly.async_read_exact(ref, 9))
        assert one == asyncio.run(store.source(scope=SCOPE).async_read_exact(ref, 9))


def test_a_served_read_queries_nothing_and_is_served_once(store: RecordStore) -> None:
    """A batch of refs pinned at enumerated versions runs no record query; the same refs
    again are read from SQLite (a sync reads each version once)."""
    source = store.source(scope=SCOPE)
    refs = [pinned(d) for d in enumerate_all(source)]
    statements: list[str] = []
    store._conn.set_trace_callback(statements.append)
    first = asyncio.run(source.async_read_exact_many(refs))
    assert not [s for s in statements if "FROM wanted" in s]
    assert len(source.rendered) == 0
    again = asyncio.run(source.async_read_exact_many(refs))
    store._conn.set_trace_callback(None)
    assert [s for s in statements if "FROM wanted" in s]
    assert [answer_facts(a) for a in again] == [answer_facts(a) for a in first]


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
    enumerate_all(source)  # keeps the revised version
    store.delete("note")
    with pytest.raises(NotFoundError, match="not in the store"):
        asyncio.run(source.async_read_exact(ContextRef(binding="r", path="note"), None))
    revised = asyncio.run(source.async_read_exact(pinned(new), None))
    assert revised.text == "revised notes"  # the pinned version, deleted since, still reads


def test_a_new_enumeration_drops_what_the_last_one_kept(store: RecordStore) -> None:
    """Starting an enumeration again forgets what an earlier one rendered; a prefixed
    page keeps only what it described."""
    source = store.source(scope=SCOPE)
    enumerate_all(source)
    assert len(source.rendered) == 42
    page = asyncio.run(
        source.async_enumerate_descriptors(EnumerationRequest(path_prefix="j00", page_size=500))
    )
    assert len(page.descriptors) == 10
    assert len(source.rendered) == 10


def entry(path: str, text: str | None, data: bytes = b"") -> Rendered:
    """A rendered entry for ``path`` at version ``r1:<path>``."""
    descriptor = SourceDescriptor(path=path, content_version=f"r1:{path}")
    return Rendered(descriptor, collection="c", scope={}, text=text, data=data)


def test_the_cache_stays_within_its_bound() -> None:
    """A full cache keeps the first entries (those a sync reads first) and refuses new
    ones until a take frees room; one larger than the bound is not kept; take removes;
    None as a version never matches; a negative bound is refused."""
    cache = RenderedCache(max_chars=3 * (ENTRY_CHARS + 10))
    for n in range(5):
        cache.keep(entry(f"p{n}", "x" * 10))
        assert cache.chars <= cache.max_chars
    assert len(cache) == 3
    assert cache.take("p4", "r1:p4") is None  # did not fit: never kept
    assert cache.take("p0", None) is None
    kept = cache.take("p0", "r1:p0")
    assert kept is not None
    assert kept.text == "x" * 10
    assert cache.take("p0", "r1:p0") is None
    assert cache.chars == 2 * (ENTRY_CHARS + 10)
    cache.keep(entry("p4", "x" * 10))  # the take made room
    assert cache.take("p4", "r1:p4") is not None
    cache.keep(entry("huge", None, b"y" * cache.max_chars))
    assert cache.take("huge", "r1:huge") is None
    cache.keep(entry("p2", "z" * 10))  # the same key again replaces, never counts twice
    assert len(cache) == 2
    assert cache.chars == 2 * (ENTRY_CHARS + 10)
    cache.clear()
    assert len(cache) == 0
    assert cache.chars == 0
    with pytest.raises(ValueError, match="max_chars must not be negative"):
        RenderedCache(max_chars=-1)


def test_enumerated_descriptors_equal_those_of_the_records_read(tmp_path: Path) -> None:
    """Enumeration renders from SQLite rows without making Records; its descriptors and
    reads are exactly those the journal renders from Records: JSON, text, bytes, text
    holding NUL, meta, no kind, non-ASCII, a new version and a tombstone."""
    store = RecordStore(tmp_path / "store")
    store.put({"b": [1, 2.5, None, True], "a": "é"}, collection="obs", kind="k", scope=SCOPE)
    store.put("plain", collection="notes", scope=SCOPE, meta={"by": {"name": "ann"}})
    store.put(b"\x00\x01", collection="blobs", scope=SCOPE, record_id="blob")
    store.put("nul\x00inside", collection="notes", kind="n", scope=SCOPE, record_id="nul")
    store.put("first", collection="notes", scope=SCOPE, record_id="twice")
    store.put("second", collection="notes", scope=SCOPE, record_id="twice")
    store.put("gone", collection="notes", scope=SCOPE, record_id="gone")
    store.delete("gone")
    store.put("elsewhere", collection="notes", scope={"task": "u"})
    listed = enumerate_all(store.source(scope=SCOPE), page_size=2)
    journal = asyncio.run(store.source(scope=SCOPE).async_changes("r0"))
    assert journal is not None
    assert listed == sorted(journal.upserts, key=lambda d: d.path)
    assert {d.path for d in listed} >= {"blob", "nul", "twice"}
    reader = store.source(scope=SCOPE)
    enumerate_all(reader)
    refs = [pinned(d) for d in listed]
    served = asyncio.run(reader.async_read_exact_many(refs, 4))
    fresh = asyncio.run(store.source(scope=SCOPE).async_read_exact_many(refs, 4))
    assert [answer_facts(a) for a in served] == [answer_facts(a) for a in fresh]
