"""The index feed: a sync hands documents to its provider in chunks of bounded text."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import pytest
from pydantic import ValidationError

from taskctx import indexfeed
from taskctx.index import ContextIndex, PartitionState, RevisionMovedError
from taskctx.indexfeed import READ_BATCH, TEXT_ENTRY_CHARS, ApplyBound, SourceTexts, chunked
from taskctx.model import (
    ContextRef,
    DescriptorPage,
    EnumerationRequest,
    ExactRead,
    SourceDescriptor,
)
from taskctx.partition import doc_id_of
from taskctx.protocols import ChangeSet, IndexDocument, PartitionKey
from taskctx.testing import MemorySource
from tests.core.sources import numbered
from tests.core.test_index import RecordingPartition, RecordingProvider

BOUND = ApplyBound(chars=1000, documents=1000)
"""Ten of ``numbered``'s 100-character items per apply call."""


class SizedPartition(RecordingPartition):
    """A RecordingPartition that also records the text characters of each apply call."""

    def __init__(self) -> None:
        super().__init__()
        self.sizes: list[tuple[int, int]] = []

    def apply(self, upserts: Sequence[IndexDocument], deletes: Sequence[str]) -> None:
        self.sizes.append((sum(len(d.text or "") for d in upserts), len(upserts)))
        super().apply(upserts, deletes)


class SizedProvider(RecordingProvider):
    """Hands out one SizedPartition."""

    partition: SizedPartition

    def __init__(self) -> None:
        self.partition = SizedPartition()


def sync(
    source: MemorySource,
    index: ContextIndex,
    provider: SizedProvider,
    before_read: dict[str, str] | None = None,
) -> PartitionState:
    """Sync ``source`` at its current revision; ``before_read`` maps a path to one put
    (path=text, ...) made just before that path is read (the source changing mid-sync)."""
    state = index.state(PartitionKey(binding_id="b", source_identity="s", provider="r"), provider)
    changes = dict(before_read or {})

    async def load_text(descriptor: SourceDescriptor) -> ExactRead | None:
        put = changes.pop(descriptor.path, None)
        if put is not None:
            path, _, text = put.partition("=")
            source.put(path, text)
        return await source.async_read_exact(ContextRef(binding="b", path=descriptor.path))

    async def run() -> PartitionState:
        return await index.sync(state, source, await source.async_revision(), load_text)

    return asyncio.run(run())


def test_a_first_sync_is_applied_in_chunks_within_the_bound(tmp_path: Path) -> None:
    """Texts past the bound go to several apply calls, none over it, each document once;
    the partition ends as an unchunked sync leaves it."""
    source = MemorySource(numbered(95))
    chunked_provider, whole_provider = SizedProvider(), SizedProvider()
    sync(source, ContextIndex(tmp_path / "chunked", apply_bound=BOUND), chunked_provider)
    sync(source, ContextIndex(tmp_path / "whole"), whole_provider)
    chunked_partition = chunked_provider.partition
    assert chunked_partition.sizes == [(1000, 10)] * 9 + [(500, 5)]
    applied = [doc_id for upserts, _ in chunked_partition.applied for doc_id in upserts]
    assert sorted(applied) == sorted(numbered(95))
    assert len(whole_provider.partition.applied) == 1
    assert chunked_partition.docs == whole_provider.partition.docs


def test_the_document_count_bounds_a_chunk_too(tmp_path: Path) -> None:
    """Many small texts are split by count."""
    provider = SizedProvider()
    bound = ApplyBound(chars=10**9, documents=7)
    sync(MemorySource(numbered(20, chars=5)), ContextIndex(tmp_path, apply_bound=bound), provider)
    assert [count for _, count in provider.partition.sizes] == [7, 7, 6]


def test_deletes_are_applied_once_with_the_first_chunk(tmp_path: Path) -> None:
    """A later sync that deletes items and changes many hands the deletes over once."""
    source = MemorySource(numbered(40))
    provider = SizedProvider()
    index = ContextIndex(tmp_path, apply_bound=BOUND)
    sync(source, index, provider)
    calls = len(provider.partition.applied)
    for number in range(3):
        source.delete(f"item-{number:05d}.txt")
    for number in range(10, 35):
        source.put(f"item-{number:05d}.txt", f"item {number} changed ".ljust(100, "y"))
    state = sync(source, index, provider)
    later = provider.partition.applied[calls:]
    assert [deletes for _, deletes in later] == [[f"item-{n:05d}.txt" for n in range(3)], [], []]
    assert [len(upserts) for upserts, _ in later] == [10, 10, 5]
    assert state.last_sync is not None
    assert state.last_sync.removed == 3
    assert set(provider.partition.docs) == set(numbered(40)) - {
        f"item-{n:05d}.txt" for n in range(3)
    }


def test_an_item_changed_mid_sync_stops_it_and_what_was_applied_stays(tmp_path: Path) -> None:
    """An item whose read comes from new bytes is never applied and stops the sync with
    RevisionMovedError; the chunks applied around it stay, and the next sync indexes the
    changed item alone from its new bytes."""
    source = MemorySource(numbered(60))
    provider = SizedProvider()
    index = ContextIndex(tmp_path, apply_bound=BOUND)
    new = "item 45: rewritten while the first sync ran"
    with pytest.raises(RevisionMovedError, match=r"1 item\(s\) changed") as moved:
        sync(source, index, provider, {"item-00025.txt": f"item-00045.txt={new}"})
    assert [key for key, _ in moved.value.changed] == ["item-00045.txt"]
    partition = provider.partition
    assert len(partition.applied) == 6
    assert set(partition.docs) == set(numbered(60)) - {"item-00045.txt"}
    state = index.states[next(iter(index.states))]
    assert state.revision is None
    calls = len(partition.applied)
    sync(source, index, provider)
    assert partition.applied[calls:] == [(["item-00045.txt"], [])]
    assert partition.docs["item-00045.txt"].text == new


def test_a_document_larger_than_the_bound_goes_alone() -> None:
    """``chunked`` keeps order, closes a chunk before it would pass the bound, and gives a
    document that alone passes it a chunk of its own."""

    def document(number: int, chars: int) -> IndexDocument:
        return IndexDocument(
            doc_id=str(number), path=str(number), text="x" * chars, content_version="v"
        )

    sizes = [400, 400, 300, 2500, 100, 999, 1]
    chunks = list(chunked([document(n, c) for n, c in enumerate(sizes)], BOUND))
    assert [[len(d.text or "") for d in chunk] for chunk in chunks] == [
        [400, 400],
        [300],
        [2500],
        [100],
        [999, 1],
    ]
    assert list(chunked([], BOUND)) == []
    with pytest.raises(ValueError, match="positive"):
        ApplyBound(chars=0)


def test_a_read_failing_midway_keeps_earlier_chunks_and_forgets_the_revision(
    tmp_path: Path,
) -> None:
    """A read that raises stops the sync with its error; the chunks applied before it stay,
    the state no longer claims its old revision (the partition no longer matches it), and
    the next sync indexes only the rest."""
    count = 2 * READ_BATCH + 50
    source = MemorySource(numbered(count))
    provider = SizedProvider()
    index = ContextIndex(tmp_path, apply_bound=BOUND)
    state = index.state(PartitionKey(binding_id="b", source_identity="s", provider="r"), provider)
    failing: set[str] = set()

    async def load_text(descriptor: SourceDescriptor) -> ExactRead | None:
        if descriptor.path in failing:
            failing.clear()
            raise OSError("disk read error")
        return await source.async_read_exact(ContextRef(binding="b", path=descriptor.path))

    async def run() -> PartitionState:
        return await index.sync(state, source, await source.async_revision(), load_text)

    asyncio.run(run())
    for path, text in numbered(count, prefix="item", chars=99).items():
        source.put(path, text)
    failing.add(f"item-{READ_BATCH + 10:05d}.txt")  # in the second batch of reads
    with pytest.raises(OSError, match="disk read error"):
        asyncio.run(run())
    applied = READ_BATCH // 10 * 10  # the first batch's full chunks of ten (new texts)
    sizes = [len(d.text or "") for d in provider.partition.docs.values()]
    assert sizes == [99] * applied + [100] * (count - applied)
    assert state.revision is None
    calls = len(provider.partition.applied)
    asyncio.run(run())
    later = [doc_id for upserts, _ in provider.partition.applied[calls:] for doc_id in upserts]
    assert later == [f"item-{n:05d}.txt" for n in range(applied, count)]
    assert state.revision == asyncio.run(source.async_revision())


class HandingSource(MemorySource):
    """A MemorySource whose pages hand over each item's text (``DescriptorPage.texts``),
    as a record store does; ``withheld`` paths get None (the sync reads those)."""

    def __init__(self, items: dict[str, str | bytes], withheld: Sequence[str] = ()) -> None:
        super().__init__(items)
        self.withheld = set(withheld)

    async def async_enumerate_descriptors(self, request: EnumerationRequest) -> DescriptorPage:
        page = await super().async_enumerate_descriptors(request)
        texts = tuple(
            None if d.path in self.withheld else f"handed {d.path}" for d in page.descriptors
        )
        return page.model_copy(update={"texts": texts})


def test_texts_handed_with_pages_are_indexed_and_not_read(tmp_path: Path) -> None:
    """A sync indexes the texts a source hands with its pages without reading those
    items; a withheld one is read; an image's handed text is not indexed as text."""
    items: dict[str, str | bytes] = dict(numbered(30))
    items["shot.png"] = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
    source = HandingSource(items, withheld=["item-00007.txt"])
    provider = SizedProvider()
    read: list[str] = []
    index = ContextIndex(tmp_path / "handed")
    state = index.state(PartitionKey(binding_id="b", source_identity="s", provider="r"), provider)

    async def load_text(descriptor: SourceDescriptor) -> ExactRead | None:
        read.append(descriptor.path)
        return await source.async_read_exact(ContextRef(binding="b", path=descriptor.path))

    async def run() -> PartitionState:
        return await index.sync(state, source, await source.async_revision(), load_text)

    asyncio.run(run())
    assert read == ["item-00007.txt"]
    docs = provider.partition.docs
    assert len(docs) == 31
    texts = {d.path: d.text for d in docs.values()}
    assert texts["item-00003.txt"] == "handed item-00003.txt"
    assert texts["item-00007.txt"] == items["item-00007.txt"]
    assert texts["shot.png"] is None


def test_source_texts_keep_the_first_within_their_bound_once_per_version() -> None:
    """Texts are kept in order until the bound, each handed out once and only for the
    content version it came with."""
    descriptors = [SourceDescriptor(path=f"p{n}", content_version=f"v{n}") for n in range(5)]
    texts = SourceTexts(max_chars=3 * (TEXT_ENTRY_CHARS + 10))
    texts.keep(descriptors, ["x" * 10, None, "y" * 10, "z" * 10, "w" * 10])
    assert texts.chars == 3 * (TEXT_ENTRY_CHARS + 10)
    assert texts.take(descriptors[4]) is None  # past the bound: never kept
    assert texts.take(descriptors[1]) is None  # handed as None
    moved = SourceDescriptor(path="p0", content_version="v0-later")
    assert texts.take(moved) is None  # another version: not this text (and dropped)
    assert texts.take(descriptors[0]) is None
    assert texts.take(descriptors[2]) == "y" * 10
    assert texts.take(descriptors[2]) is None  # once
    texts.keep(descriptors, None)  # a page without texts keeps nothing
    assert texts.take(descriptors[3]) == "z" * 10


def test_source_texts_say_where_they_stopped_and_keep_on_after_clear() -> None:
    """``keep`` returns the position of the first text it had no room for; after
    ``clear`` it goes on from there. A text that alone exceeds the room is skipped (it
    is read), and so is one the partition already holds at that version."""
    descriptors = [SourceDescriptor(path=f"p{n}", content_version=f"v{n}") for n in range(6)]
    handed = ["a" * 10, "b" * 10, "c" * 10_000, "d" * 10, "e" * 10, "f" * 10]
    texts = SourceTexts(2 * (TEXT_ENTRY_CHARS + 10), {doc_id_of("p4", None): "v4"})
    assert texts.keep(descriptors, handed) == 2  # p0 and p1 fill the room
    assert sorted(path for path, _ in texts.texts) == ["p0", "p1"]
    texts.clear()
    assert texts.chars == 0
    assert not texts.texts
    # p2 alone exceeds the room (skipped, not stopped at); p4 is indexed at v4 already
    assert texts.keep(descriptors, handed, 2) == 6
    assert sorted(path for path, _ in texts.texts) == ["p3", "p5"]
    assert SourceTexts(0).keep(descriptors, handed) == 6  # no room at all: keeps none


def test_texts_past_their_room_are_indexed_during_enumeration_and_never_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the handed texts outgrow their room, the sync indexes what it holds and goes
    on: a source far larger than the room is indexed without one read, each item once,
    and the report counts every item; a second context over the same partition (all
    indexed at their versions) keeps no text and applies nothing."""
    room = 4 * (TEXT_ENTRY_CHARS + len("handed item-00000.txt"))
    monkeypatch.setattr("taskctx.index.SOURCE_TEXT_CHARS", room)
    source = HandingSource(dict(numbered(30)))
    provider = SizedProvider()
    read: list[str] = []

    async def load_text(descriptor: SourceDescriptor) -> ExactRead | None:
        read.append(descriptor.path)
        return await source.async_read_exact(ContextRef(binding="b", path=descriptor.path))

    def run(index: ContextIndex) -> PartitionState:
        key = PartitionKey(binding_id="b", source_identity="s", provider="r")
        state = index.state(key, provider)

        async def go() -> PartitionState:
            return await index.sync(state, source, await source.async_revision(), load_text)

        return asyncio.run(go())

    state = run(ContextIndex(tmp_path / "first"))
    assert read == []
    applied = [doc_id for upserts, _ in provider.partition.applied for doc_id in upserts]
    assert sorted(applied) == sorted(doc_id_of(path, None) for path in numbered(30))
    assert len(provider.partition.applied) >= 30 // 4  # fed four at a time, then the rest
    assert {d.text for d in provider.partition.docs.values()} == {
        f"handed {path}" for path in numbered(30)
    }
    report = state.last_sync
    assert report is not None
    assert (report.added, report.updated, report.unchanged) == (30, 0, 0)
    calls = len(provider.partition.applied)
    again = run(ContextIndex(tmp_path / "second"))
    assert len(provider.partition.applied) == calls
    assert read == []
    assert again.last_sync is not None
    assert again.last_sync.unchanged == 30


def test_a_page_or_change_set_with_texts_not_one_per_descriptor_is_refused() -> None:
    """``texts`` must hold one entry per descriptor (per upsert), or the model is refused."""
    descriptor = SourceDescriptor(path="a", content_version="v")
    with pytest.raises(ValidationError, match=r"DescriptorPage\.texts holds 2 texts for 1"):
        DescriptorPage(descriptors=(descriptor,), revision="r1", texts=("a", "b"))
    with pytest.raises(ValidationError, match=r"ChangeSet\.texts holds 0 texts for 1"):
        ChangeSet(since="r0", revision="r1", upserts=(descriptor,), texts=())
    assert DescriptorPage(descriptors=(descriptor,), revision="r1", texts=(None,)).texts == (None,)


@pytest.mark.parametrize("text", [None, "", "body é"])
def test_a_fed_document_equals_the_validated_one(text: str | None) -> None:
    """The documents a sync builds without validating again are the validated model."""
    descriptor = SourceDescriptor(
        path="notes/a.md",
        scope="lines:1-2",
        title="A",
        media_type="text/markdown",
        content_version="v1",
        metadata={"k": [1, {"n": None}]},
    )
    built = indexfeed._document(descriptor, text)
    validated = IndexDocument(
        doc_id=doc_id_of("notes/a.md", "lines:1-2"),
        path="notes/a.md",
        scope="lines:1-2",
        title="A",
        text=text,
        content_version="v1",
        media_type="text/markdown",
        metadata={"k": [1, {"n": None}]},
    )
    assert built == validated
    assert built.model_dump() == validated.model_dump()
    assert IndexDocument.model_validate(built.model_dump()) == built
