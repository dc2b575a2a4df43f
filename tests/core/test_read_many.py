"""Batched exact reads: index syncs read in batches, delivery reuses what they read."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from taskctx import ContextBudget, ContextReadIntent, PluginHost, StaleReaderError, TaskContext
from taskctx.candidates import Candidate
from taskctx.indexfeed import READ_BATCH, _batches
from taskctx.model import (
    ContextRef,
    DescriptorPage,
    EnumerationRequest,
    ExactRead,
    Representation,
    SourceDescriptor,
)
from taskctx.protocols import SupportsReadMany
from taskctx.readback import READ_COST, ReadReuse
from taskctx.testing import MemorySource
from tests.core.sources import numbered
from tests.core.test_index import RecordingProvider


class BatchCounting(MemorySource):
    """A MemorySource that records the size of every batched read it answers."""

    def __init__(self, items: dict[str, str], **kwargs: Any) -> None:
        super().__init__(items, **kwargs)
        self.batches: list[int] = []

    async def async_read_exact_many(
        self, refs: Sequence[ContextRef], limit: int | None = None
    ) -> list[ExactRead | Exception]:
        """Counted batched read."""
        self.batches.append(len(refs))
        return await super().async_read_exact_many(refs, limit)


class OneByOne:
    """A source with the protocol's three reads only (no batched read), over a MemorySource."""

    kind = "one_by_one"

    def __init__(self, items: dict[str, str]) -> None:
        self.inner = MemorySource(items)

    async def async_revision(self) -> str:
        """The inner revision."""
        return await self.inner.async_revision()

    async def async_enumerate_descriptors(self, request: EnumerationRequest) -> DescriptorPage:
        """The inner enumeration."""
        return await self.inner.async_enumerate_descriptors(request)

    async def async_read_exact(self, ref: ContextRef, limit: int | None = None) -> ExactRead:
        """The inner read."""
        return await self.inner.async_read_exact(ref, limit)


class WrongCount(BatchCounting):
    """Answers a batch with one answer too few."""

    async def async_read_exact_many(
        self, refs: Sequence[ContextRef], limit: int | None = None
    ) -> list[ExactRead | Exception]:
        """One answer short."""
        return (await super().async_read_exact_many(refs, limit))[:-1]


class StaleInBatch(BatchCounting):
    """Answers ``item-00003.txt`` in every batch with StaleReaderError (it never holds the
    pinned version), the rest as read."""

    async def async_read_exact_many(
        self, refs: Sequence[ContextRef], limit: int | None = None
    ) -> list[ExactRead | Exception]:
        """The batch, with one stale answer."""
        answers = await super().async_read_exact_many(refs, limit)
        return [
            StaleReaderError(f"{ref.path} moved") if ref.path == "item-00003.txt" else answer
            for ref, answer in zip(refs, answers, strict=True)
        ]


def context(tmp_path: Path, source: Any) -> tuple[TaskContext, RecordingProvider]:
    """A context over ``source`` whose index provider needs text."""
    provider = RecordingProvider()
    ctx = TaskContext("batches", host=PluginHost(allow=[]), state_dir=tmp_path / "state")
    ctx.configure_index(provider)
    ctx.attach(source, binding_id="b")
    return ctx, provider


def indexed_texts(provider: RecordingProvider) -> dict[str, str | None]:
    """doc id -> indexed text."""
    return {doc_id: doc.text for doc_id, doc in provider.partition.docs.items()}


def test_memory_source_offers_batched_reads() -> None:
    """The reference MemorySource is a SupportsReadMany; a source without it is not."""
    assert isinstance(MemorySource({}), SupportsReadMany)
    assert not isinstance(OneByOne({}), SupportsReadMany)


def test_a_sync_reads_in_batches(tmp_path: Path) -> None:
    """A first sync of 600 items asks a batching source for 3 batches (256, 256, 88), not
    600 reads, and indexes every item's own text."""
    items = numbered(600)
    source = BatchCounting(items)
    ctx, provider = context(tmp_path, source)
    ctx.sync_index()
    assert source.batches == [READ_BATCH, READ_BATCH, 600 - 2 * READ_BATCH]
    assert indexed_texts(provider) == items


def test_a_source_without_batches_is_read_one_by_one(tmp_path: Path) -> None:
    """The kernel falls back to one read per item and indexes the same texts."""
    items = numbered(300)
    source = OneByOne(items)
    ctx, provider = context(tmp_path, source)
    ctx.sync_index()
    assert source.inner.reads == 300
    assert indexed_texts(provider) == items


def test_a_batch_of_the_wrong_length_is_refused(tmp_path: Path) -> None:
    """A batched read answering fewer refs than asked fails the sync, naming the source."""
    ctx, _ = context(tmp_path, WrongCount(numbered(5)))
    with pytest.raises(RuntimeError, match=r"'memory' answered 4 reads for 5 refs"):
        ctx.sync_index()


def test_a_stale_answer_in_a_batch_is_never_indexed(tmp_path: Path) -> None:
    """A StaleReaderError answer leaves that item out (the rest is kept) and the sync
    fails closed after its one re-sync, as a single stale read does."""
    items = numbered(10)
    ctx, provider = context(tmp_path, StaleInBatch(items))
    with pytest.raises(StaleReaderError, match="kept changing"):
        ctx.sync_index()
    texts = indexed_texts(provider)
    assert "item-00003.txt" not in texts
    assert texts == {path: text for path, text in items.items() if path != "item-00003.txt"}


def test_batches_never_split_one_items_sections() -> None:
    """An item whose descriptors cross the batch size stays in one batch, so a source
    reads it once for all its sections."""
    version = "sha256:" + "0" * 64

    def described(path: str, scope: str | None) -> SourceDescriptor:
        return SourceDescriptor(path=path, scope=scope, content_version=version)

    run = [described("a.txt", None)] * (READ_BATCH - 1)
    long = [described("b.txt", None)] + [described("b.txt", f"lines:{n}-{n}") for n in range(9)]
    batches = list(_batches([*run, *long, described("c.txt", None)]))
    assert [len(b) for b in batches] == [READ_BATCH - 1 + 10, 1]
    assert {d.path for d in batches[0][READ_BATCH - 1 :]} == {"b.txt"}
    assert list(_batches([])) == []


def test_a_first_read_delivers_what_the_sync_read(tmp_path: Path) -> None:
    """A first read reads each item once: delivery reuses the text the index sync read at
    the pinned version (a fresh reader's warm read reads the delivered items again)."""
    items = {f"note-{n}.txt": f"upload retry note {n} " * 5 for n in range(20)}
    source = BatchCounting(items)
    ctx, _ = context(tmp_path, source)
    package = ctx.reader("a", budget=ContextBudget(max_chars=2_000, max_blocks=5)).read(
        ContextReadIntent(query="upload retry")
    )
    assert len(package.blocks) == 5
    assert source.reads == len(items)
    assert [b.content for b in package.blocks] == [items[b.ref.path] for b in package.blocks]
    again = ctx.reader("b", budget=ContextBudget(max_chars=2_000, max_blocks=5)).read(
        ContextReadIntent(query="upload retry")
    )
    assert [b.content for b in again.blocks] == [b.content for b in package.blocks]
    assert source.reads == len(items) + len(again.blocks)


def test_kept_reads_count_their_objects_not_only_their_text() -> None:
    """The reads a sync keeps for delivery are bounded by count too: each counts
    READ_COST beyond its text, so many small records cannot pile up past the bound."""
    reuse = ReadReuse(max_chars=5 * (10 + READ_COST))
    for number in range(8):
        path = f"r{number}"
        candidate = Candidate(
            ref=ContextRef(binding="b", path=path),
            binding_id="b",
            source_kind="memory",
            role="source",
            required=False,
            media_type="text/plain",
            representation=Representation.TEXT,
            chars=10,
            content_version="v",
        )
        reuse.keep(candidate, ExactRead.from_text(path, "x" * 10, None, content_version="v"))
    assert len(reuse.reads) == 5
    assert reuse.chars == 5 * (10 + READ_COST)
