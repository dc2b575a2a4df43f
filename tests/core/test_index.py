"""ContextIndex: warm syncs do nothing, changes cost what changed, filters are structural."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import pytest

from taskctx.index import ContextIndex, PartitionState, StructuralProvider, passes_filters
from taskctx.model import (
    ContextFilters,
    DescriptorPage,
    EnumerationRequest,
    ExactRead,
    SourceDescriptor,
)
from taskctx.protocols import (
    IndexDocument,
    IndexPartition,
    IndexProvider,
    PartitionKey,
    SearchHit,
    SearchResult,
)
from taskctx.testing import IndexProviderContract, MemorySource
from tests.core.sources import numbered


class RecordingPartition:
    """A text-needing partition that records every apply, and ranks by term count."""

    def __init__(self) -> None:
        self.docs: dict[str, IndexDocument] = {}
        self.applied: list[tuple[list[str], list[str]]] = []

    def indexed_versions(self) -> Mapping[str, str]:
        return {k: d.content_version for k, d in self.docs.items()}

    def apply(self, upserts: Sequence[IndexDocument], deletes: Sequence[str]) -> None:
        self.applied.append(([d.doc_id for d in upserts], list(deletes)))
        for doc_id in deletes:
            self.docs.pop(doc_id, None)
        self.docs.update({d.doc_id: d for d in upserts})

    def search(self, query: str, doc_ids: Sequence[str] | None, limit: int | None) -> SearchResult:
        terms = query.lower().split()
        scored = [
            SearchHit(doc_id=k, score=float(sum((d.text or "").lower().count(t) for t in terms)))
            for k, d in self.docs.items()
            if doc_ids is None or k in doc_ids
        ]
        hits = sorted((h for h in scored if h.score > 0), key=lambda h: (-h.score, h.doc_id))
        return SearchResult(hits=tuple(hits[:limit]), considered=len(hits))

    def stats(self) -> Mapping[str, Any]:
        return {"documents": len(self.docs)}

    def close(self) -> None:
        return None


class RecordingProvider:
    """Hands out one RecordingPartition."""

    name = "recording"
    kind: Literal["lexical"] = "lexical"
    needs_text = True

    def __init__(self) -> None:
        self.partition = RecordingPartition()

    def open_partition(self, key: PartitionKey, directory: Path | None) -> IndexPartition:
        return self.partition


def synced(
    source: MemorySource, provider: RecordingProvider | StructuralProvider, index: ContextIndex
) -> PartitionState:
    """Sync a partition of ``source`` to its current revision."""
    key = PartitionKey(binding_id="b", source_identity="s", provider=provider.name)
    state = index.state(key, provider)

    async def load_text(descriptor: SourceDescriptor) -> ExactRead | None:
        from taskctx.model import ContextRef

        return await source.async_read_exact(ContextRef(binding="b", path=descriptor.path))

    async def run() -> PartitionState:
        return await index.sync(state, source, await source.async_revision(), load_text)

    return asyncio.run(run())


def test_warm_sync_does_no_work(tmp_path: Path) -> None:
    """Syncing to the revision already held enumerates and reads nothing."""
    source = MemorySource(numbered(50))
    provider = RecordingProvider()
    index = ContextIndex(tmp_path)
    synced(source, provider, index)
    enumerations, reads = source.enumerations, source.reads
    synced(source, provider, index)
    assert (source.enumerations, source.reads) == (enumerations, reads)
    assert len(provider.partition.applied) == 1


def test_one_change_costs_one_document(tmp_path: Path) -> None:
    """After one item changes, the provider receives exactly that item, read once."""
    source = MemorySource(numbered(200))
    provider = RecordingProvider()
    index = ContextIndex(tmp_path)
    synced(source, provider, index)
    reads = source.reads
    source.put("item-00007.txt", "item 7: rewritten")
    source.delete("item-00009.txt")
    synced(source, provider, index)
    assert provider.partition.applied[-1] == (["item-00007.txt"], ["item-00009.txt"])
    assert source.reads - reads == 1


def test_diff_sync_without_change_journal(tmp_path: Path) -> None:
    """A source with no journal is diffed by content version: only changes are re-indexed."""

    class NoJournal(MemorySource):
        async_changes = None  # type: ignore[assignment]

    source = NoJournal(numbered(30))
    provider = RecordingProvider()
    index = ContextIndex(tmp_path)
    synced(source, provider, index)
    source.put("item-00003.txt", "changed")
    source.put("new.txt", "new")
    synced(source, provider, index)
    assert sorted(provider.partition.applied[-1][0]) == ["item-00003.txt", "new.txt"]


def test_persisted_partition_is_reused_by_a_new_index(tmp_path: Path) -> None:
    """A new ContextIndex over a partition that already holds versions re-indexes nothing."""
    source = MemorySource(numbered(20))
    provider = RecordingProvider()
    synced(source, provider, ContextIndex(tmp_path))
    synced(source, provider, ContextIndex(tmp_path))
    assert len(provider.partition.applied) == 1


def test_candidates_follow_the_provider_ranking(tmp_path: Path) -> None:
    """With a lexical provider the order is by score and considered is the match count."""
    source = MemorySource({"a.txt": "apple", "b.txt": "apple apple pear", "c.txt": "pear"})
    provider = RecordingProvider()
    index = ContextIndex(tmp_path)
    state = synced(source, provider, index)
    found = index.candidates(state, "apple", ContextFilters())
    assert [d.path for d in found.descriptors] == ["b.txt", "a.txt"]
    assert found.considered == 2


def test_structural_candidates_say_they_are_unranked(tmp_path: Path) -> None:
    """Without a lexical provider candidates come in path order with no_lexical_provider."""
    source = MemorySource({"b.txt": "x", "a.txt": "y", "sub/c.txt": "z"})
    index = ContextIndex(tmp_path)
    state = synced(source, RecordingProvider(), index)  # warm up the source
    state = synced(source, StructuralProvider(), ContextIndex(tmp_path))
    found = ContextIndex(tmp_path).candidates(state, "anything", ContextFilters())
    assert [d.path for d in found.descriptors] == ["a.txt", "b.txt", "sub/c.txt"]
    assert "no_lexical_provider" in found.reasons


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({}, True),
        ({"path_prefix": "src/"}, True),
        ({"path_prefix": "docs/"}, False),
        ({"glob": "src/*.py"}, True),
        ({"glob": "*.md"}, False),
        ({"max_size": 10}, True),
        ({"max_size": 9}, False),
        ({"metadata": {"owner.team": "core"}}, True),
        ({"metadata": {"owner.team": "web"}}, False),
        ({"metadata": {"owner.missing": "x"}}, False),
        ({"media_types": ("text/x-python",)}, True),
        ({"media_types": ("text/plain",)}, False),
    ],
)
def test_structural_filters(filters: dict[str, Any], expected: bool) -> None:
    """Each structural filter admits or refuses a descriptor as documented."""
    descriptor = SourceDescriptor(
        path="src/app.py",
        chars=10,
        content_version="v1",
        media_type="text/x-python",
        metadata={"owner": {"team": "core"}},
    )
    assert passes_filters(descriptor, ContextFilters.model_validate(filters)) is expected


def test_paged_enumeration_is_followed_to_the_end(tmp_path: Path) -> None:
    """A source that pages its descriptors is enumerated completely."""
    source = MemorySource(numbered(23), page_size=4)
    state = synced(source, StructuralProvider(), ContextIndex(tmp_path))
    assert len(state.ordered) == 23
    assert source.enumerations == 6
    page = asyncio.run(source.async_enumerate_descriptors(EnumerationRequest(page_size=4)))
    assert page.next_cursor == "4"


def test_concurrent_syncs_apply_a_change_once(tmp_path: Path) -> None:
    """Two reads racing to sync one partition index the documents once."""
    source = MemorySource(numbered(40))
    provider = RecordingProvider()
    index = ContextIndex(tmp_path)
    key = PartitionKey(binding_id="b", source_identity="s", provider=provider.name)
    state = index.state(key, provider)

    async def load_text(descriptor: SourceDescriptor) -> ExactRead | None:
        await asyncio.sleep(0)  # yield, so the two syncs interleave
        return ExactRead.from_text(
            descriptor.path, descriptor.path, None, content_version=descriptor.content_version
        )

    async def race() -> None:
        revision = await source.async_revision()
        await asyncio.gather(
            index.sync(state, source, revision, load_text),
            index.sync(state, source, revision, load_text),
        )

    asyncio.run(race())
    assert len(provider.partition.applied) == 1
    assert source.enumerations == 1


def test_sections_keep_document_order() -> None:
    """Sections with positions sort in document order, not by their scope names; the
    whole item comes first, and a change moves one key to its place."""

    def section(scope: str | None, position: int | None) -> SourceDescriptor:
        return SourceDescriptor(path="a.docx", scope=scope, position=position, content_version="v")

    key = PartitionKey(binding_id="b", source_identity="s", provider="structural")
    provider = StructuralProvider()
    state = PartitionState(key, provider, provider.open_partition(key, None))
    state.replace(
        [section("section:Zeta", 0), section("section:(headers)", 2), section(None, None)], []
    )
    state.replace([section("section:Alpha", 1)], [])
    assert [d.scope for d in state.ordered] == [
        None,
        "section:Zeta",
        "section:Alpha",
        "section:(headers)",
    ]
    state.replace([section("section:Alpha", 3)], [("a.docx", "section:Zeta")])
    assert [d.scope for d in state.ordered] == [None, "section:(headers)", "section:Alpha"]
    state.replace([section("section:Alpha", 3), section("section:Alpha", 0)], [])
    assert [d.scope for d in state.ordered] == [None, "section:Alpha", "section:(headers)"]


def test_filter_views_follow_changes_and_copy_nothing_when_all_pass() -> None:
    """A filter every descriptor passes reads the structure itself (no copy per filter);
    the views stay right as changes come in, whether they keep or break that."""

    def item(path: str, size: int = 10) -> SourceDescriptor:
        return SourceDescriptor(path=path, content_version="v", size=size)

    key = PartitionKey(binding_id="b", source_identity="s", provider="structural")
    provider = StructuralProvider()
    state = PartitionState(key, provider, provider.open_partition(key, None))
    state.replace([item("a.txt"), item("b.txt")], [])
    small = ContextFilters(max_size=100, include_hidden=True)
    visible = ContextFilters()
    assert state.filtered(small).keys is state.ordered.keys
    state.replace([item("c.txt", size=500), item(".hidden/d.txt")], [])
    assert [d.path for d in state.filtered(small)] == [".hidden/d.txt", "a.txt", "b.txt"]
    assert [d.path for d in state.filtered(visible)] == ["a.txt", "b.txt", "c.txt"]
    state.replace([item("e.txt", size=5)], [("a.txt", None)])
    assert [d.path for d in state.filtered(small)] == [".hidden/d.txt", "b.txt", "e.txt"]
    assert [d.path for d in state.filtered(visible)] == ["b.txt", "c.txt", "e.txt"]
    state.replace([], [("c.txt", None), (".hidden/d.txt", None)])
    assert [d.path for d in state.filtered(visible)] == ["b.txt", "e.txt"]


def test_sync_reports_say_what_was_indexed(tmp_path: Path) -> None:
    """Each sync reports its mode and how many documents it added, updated and removed."""
    from taskctx import PluginHost, TaskContext

    source = MemorySource(numbered(5), identity="mem:report")
    ctx = TaskContext("t", host=PluginHost(allow=[]), state_dir=tmp_path)
    ctx.configure_index(RecordingProvider())
    ctx.attach(source, binding_id="mem")
    seen: list[tuple[str, int, int]] = []
    first = ctx.sync_index(lambda b, done, total: seen.append((b, done, total)))["mem"]
    assert (first.mode, first.added, first.updated, first.removed) == ("diff", 5, 0, 0)
    assert seen[-1] == ("mem", 5, 5)
    assert ctx.sync_index()["mem"].mode == "warm"
    source.put("item-00001.txt", "changed")
    source.delete("item-00002.txt")
    source.put("new.txt", "new")
    third = ctx.sync_index()["mem"]
    assert (third.mode, third.added, third.updated, third.removed, third.unchanged) == (
        "journal",
        1,
        1,
        1,
        3,
    )


class TestStructuralProviderContract(IndexProviderContract):
    """The kernel's structural provider keeps the index provider contract."""

    covers = "structural"
    persistent = False
    ranks = False

    @pytest.fixture
    def provider(self) -> StructuralProvider:
        """The kernel's own provider."""
        return StructuralProvider()


class TestFusedProviderContract(IndexProviderContract):
    """A fused provider over a ranking member keeps the contract (and ranks)."""

    covers = "fused"
    persistent = False

    @pytest.fixture
    def provider(self) -> IndexProvider:
        """Two ranking members (a structural member would rank every document)."""
        from taskctx.fusion import FusedProvider

        second = RecordingProvider()
        second.name = "recording-2"
        return FusedProvider("fused", (RecordingProvider(), second))


class _CollectorWatch(MemorySource):
    """A source that notes whether the garbage collector runs while it is enumerated."""

    def __init__(self, items: dict[str, str], *, fail: bool = False) -> None:
        super().__init__(items)
        self.seen: list[bool] = []
        self.fail = fail

    async def async_enumerate_descriptors(self, request: EnumerationRequest) -> DescriptorPage:
        self.seen.append(gc.isenabled())
        if self.fail:
            raise RuntimeError("source down")
        return await super().async_enumerate_descriptors(request)


def _sync_watching(source: _CollectorWatch, index: ContextIndex) -> None:
    state = index.state(
        PartitionKey(binding_id="b", source_identity="s", provider="structural"),
        StructuralProvider(),
        persistent=False,
    )

    async def load(descriptor: SourceDescriptor) -> ExactRead | None:
        return None

    async def run() -> None:
        await index.sync(state, source, await source.async_revision(), load)

    asyncio.run(run())


def test_a_sync_pauses_the_collector_and_leaves_it_as_found() -> None:
    """Inside a sync the collector is off; after it (and after a failed one) it is on
    again; a collector the application turned off stays off; the switch leaves it be."""
    assert gc.isenabled()
    watched = _CollectorWatch(numbered(3))
    _sync_watching(watched, ContextIndex())
    assert watched.seen == [False]
    assert gc.isenabled()
    failing = _CollectorWatch(numbered(3), fail=True)
    with pytest.raises(RuntimeError, match="source down"):
        _sync_watching(failing, ContextIndex())
    assert failing.seen == [False]
    assert gc.isenabled()
    running = _CollectorWatch(numbered(3))
    _sync_watching(running, ContextIndex(pause_collector=False))
    assert running.seen == [True]
    gc.disable()
    try:
        off = _CollectorWatch(numbered(3))
        _sync_watching(off, ContextIndex())
        assert off.seen == [False]
        assert not gc.isenabled()
    finally:
        gc.enable()
