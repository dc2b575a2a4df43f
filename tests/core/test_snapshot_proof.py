"""Every read proves it came from the pinned version, scoped reads included, or fails closed.

In-memory sources whose items change between enumeration and readback (or while the
index reads them), and sources and scoped readers that report no content version: the
kernel never delivers a block of other bytes under a snapshot, and never indexes text
under a version it was not made from.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import pytest

from taskctx import (
    ContextBudget,
    ContextReadIntent,
    ContextRef,
    PluginHost,
    StaleReaderError,
    TaskContext,
    hookimpl,
)
from taskctx.errors import UnverifiedReadError
from taskctx.index import ContextIndex, RevisionMovedError
from taskctx.model import (
    Completeness,
    DescriptorPage,
    EnumerationRequest,
    ExactRead,
    OmissionReason,
    SourceDescriptor,
)
from taskctx.protocols import (
    ContextSource,
    IndexDocument,
    IndexPartition,
    PartitionKey,
    SearchHit,
    SearchResult,
)
from taskctx.sections import parse_char_scope, parse_line_scope, slice_lines
from taskctx.testing import MemorySource, sha256_of
from tests.core.sources import AlwaysMovingSource, MovesOnceSource

Cue = Callable[[], object]
LONG = "".join(f"old line {n}\n" for n in range(1, 11))
NEW = "".join(f"new line {n}\n" for n in range(1, 11))


class CuedMemory(MemorySource):
    """A MemorySource whose items change on cue: after an enumeration ended, or before the
    Nth read (whole or scoped); it serves ``part:`` scopes in ``async_read_exact`` and
    also describes every item's ``lines:1-2`` as a scoped descriptor."""

    kind = "cued"

    def __init__(self, items: Mapping[str, str | bytes], **kwargs: Any) -> None:
        super().__init__(items, **kwargs)
        self.after_enumeration: list[Cue] = []
        self.before_read: dict[int, Cue] = {}
        self.read_count = 0
        self.pins_seen: list[tuple[str | None, str | None]] = []

    async def async_enumerate_descriptors(self, request: EnumerationRequest) -> DescriptorPage:
        page = await super().async_enumerate_descriptors(request)
        scoped = [
            d.model_copy(update={"scope": "lines:1-2", "chars": None, "position": 0})
            for d in page.descriptors
        ]
        page = page.model_copy(update={"descriptors": (*page.descriptors, *scoped)})
        if page.next_cursor is None and self.after_enumeration:
            self.after_enumeration.pop(0)()
        return page

    async def async_read_exact(self, ref: ContextRef, limit: int | None = None) -> ExactRead:
        self.read_count += 1
        self.pins_seen.append((ref.scope, ref.version))
        if self.read_count in self.before_read:
            self.before_read.pop(self.read_count)()
        whole = await super().async_read_exact(ref.with_scope(None), None if ref.scope else limit)
        if ref.scope is None or not ref.scope.startswith("part:"):
            return whole
        return ExactRead.from_text(
            ref.path,
            (whole.text or "")[:5],
            limit,
            scope=ref.scope,
            content_version=whole.content_version,
        )


class OwnScoped(CuedMemory):
    """Serves line scopes itself, reporting the version of the bytes it sliced."""

    kind = "own_scoped"

    async def async_read_scoped(self, ref: ContextRef, limit: int | None) -> ExactRead:
        whole = await self.async_read_exact(ref.with_scope(None), None)
        first, last = parse_line_scope(ref.scope or "")
        return ExactRead.from_text(
            ref.path,
            slice_lines(whole.text or "", first, last),
            limit,
            scope=ref.scope,
            content_version=whole.content_version,
        )


class ScopedNoVersion(CuedMemory):
    """Serves line scopes itself and reports no content version for them."""

    kind = "scoped_no_version"

    async def async_read_scoped(self, ref: ContextRef, limit: int | None) -> ExactRead:
        whole = await self.async_read_exact(ref.with_scope(None), None)
        first, last = parse_line_scope(ref.scope or "")
        text = slice_lines(whole.text or "", first, last)
        return ExactRead.from_text(ref.path, text, limit, scope=ref.scope)


class WholeNoVersion(CuedMemory):
    """Reports no content version on any read."""

    kind = "whole_no_version"

    async def async_read_exact(self, ref: ContextRef, limit: int | None = None) -> ExactRead:
        read = await super().async_read_exact(ref, limit)
        return read.model_copy(update={"content_version": None})


class TailReader:
    """A registered ScopedRead for ``tail:N``: the last N characters, reporting the
    version of the whole item it read (or none, when ``report`` is False)."""

    name = "tail"
    scope_kinds: tuple[str, ...] = ("tail",)
    media_types: tuple[str, ...] = ()

    def __init__(self, report: bool = True) -> None:
        self.report = report

    async def async_read_scoped(
        self, source: ContextSource, ref: ContextRef, limit: int | None
    ) -> ExactRead:
        """The tail of the whole item, read through the source."""
        whole = await source.async_read_exact(ref.with_scope(None), None)
        count = int((ref.scope or "tail:0").split(":", 1)[1])
        text = (whole.text or "")[-count:]
        version = whole.content_version if self.report else None
        return ExactRead.from_text(ref.path, text, limit, scope=ref.scope, content_version=version)


def host_with(*plugins: object) -> PluginHost:
    """A built-ins-only host with ``plugins`` registered."""
    host = PluginHost(allow=[])
    for number, plugin in enumerate(plugins):
        host.register(plugin, name=f"test-plugin-{number}")
    return host


def reader_plugin(reader: TailReader) -> object:
    """A plugin registering ``reader``."""

    class Plugin:
        @hookimpl
        def register_scoped_readers(self, register: Callable[[Any], None]) -> None:
            register(reader)

    return Plugin()


def context(source: MemorySource, host: PluginHost, tmp_path: Path) -> TaskContext:
    """A TaskContext with ``source`` bound as ``src``."""
    ctx = TaskContext("proof", host=host, state_dir=tmp_path / "state")
    ctx.attach(source, binding_id="src")
    return ctx


def explicit(path: str, scope: str | None) -> ContextReadIntent:
    """One explicit ref and nothing optional."""
    ref = ContextRef(binding="src", path=path, scope=scope)
    return ContextReadIntent(query="", explicit_refs=(ref,), optional_selection="none")


BUDGET = ContextBudget(max_chars=10_000, max_blocks=10)
SERVED_BY = [
    pytest.param(CuedMemory, "lines:3-4", id="kernel-lines-reader"),
    pytest.param(OwnScoped, "lines:3-4", id="source-async_read_scoped"),
    pytest.param(CuedMemory, "tail:7", id="registered-scoped-reader"),
    pytest.param(CuedMemory, "part:1", id="async_read_exact-fallback"),
]


# -- readback --------------------------------------------------------------------------------


@pytest.mark.parametrize(("source_class", "scope"), SERVED_BY)
def test_scoped_read_of_a_changed_item_fails_closed(
    tmp_path: Path, source_class: type[CuedMemory], scope: str
) -> None:
    """Whoever serves the scope, an item changed after enumeration fails the read with
    StaleReaderError instead of delivering new bytes under the old snapshot."""
    source = source_class({"a.txt": LONG, "b.txt": "stable"})
    source.after_enumeration.append(lambda: source.put("a.txt", NEW))
    ctx = context(source, host_with(reader_plugin(TailReader())), tmp_path)
    with pytest.raises(StaleReaderError, match=r"a\.txt"):
        ctx.reader("c", budget=BUDGET).read(explicit("a.txt", scope))


@pytest.mark.parametrize(("source_class", "scope"), SERVED_BY)
def test_scoped_read_of_a_stable_item_is_delivered(
    tmp_path: Path, source_class: type[CuedMemory], scope: str
) -> None:
    """The same scoped reads deliver when nothing changed (the check refuses only
    other bytes), and the source is handed the pinned content version."""
    source = source_class({"a.txt": LONG, "b.txt": "stable"})
    ctx = context(source, host_with(reader_plugin(TailReader())), tmp_path)
    package = ctx.reader("c", budget=BUDGET).read(explicit("a.txt", scope))
    (block,) = package.blocks
    assert block.ref.scope == scope
    assert block.content
    assert "new" not in block.content
    assert sha256_of(LONG) in {version for _, version in source.pins_seen}


def test_optional_scoped_candidate_of_a_changed_item_fails_closed(tmp_path: Path) -> None:
    """An optional scoped descriptor read after its item changed fails the read too."""
    source = CuedMemory({"a.txt": LONG})
    source.after_enumeration.append(lambda: source.put("a.txt", NEW))
    ctx = context(source, host_with(), tmp_path)
    budget = ContextBudget(max_chars=len(LONG) - 1, max_blocks=5)  # the whole does not fit
    with pytest.raises(StaleReaderError, match=r"a\.txt"):
        ctx.reader("c", budget=budget).read("")


@pytest.mark.parametrize(
    ("source_class", "scope", "plugins"),
    [
        pytest.param(WholeNoVersion, None, (), id="whole-read"),
        pytest.param(ScopedNoVersion, "lines:1-2", (), id="source-scoped-read"),
        pytest.param(CuedMemory, "tail:3", (reader_plugin(TailReader(report=False)),), id="reader"),
        pytest.param(WholeNoVersion, "lines:1-2", (), id="kernel-lines-over-versionless"),
    ],
)
def test_required_read_without_a_version_fails_closed(
    tmp_path: Path, source_class: type[CuedMemory], scope: str | None, plugins: tuple[object, ...]
) -> None:
    """A read that reports no content version for an item the snapshot pinned at one fails
    a required read with UnverifiedReadError naming who served it: omitting the version
    cannot bypass the check."""
    source = source_class({"a.txt": LONG})
    ctx = context(source, host_with(*plugins), tmp_path)
    with pytest.raises(UnverifiedReadError, match="no content version"):
        ctx.reader("c", budget=BUDGET).read(explicit("a.txt", scope))


@pytest.mark.parametrize("source_class", [WholeNoVersion, ScopedNoVersion])
def test_optional_read_without_a_version_is_read_failed(
    tmp_path: Path, source_class: type[CuedMemory]
) -> None:
    """Optional items whose reads report no content version are omitted as read_failed
    with a diagnostic, never delivered."""
    source = source_class({"a.txt": LONG})
    ctx = context(source, host_with(), tmp_path)
    package = ctx.reader("c", budget=ContextBudget(max_chars=len(LONG) - 1)).read("")
    failed = [o for o in package.omissions if o.reason is OmissionReason.READ_FAILED]
    assert failed, package.omissions
    assert any(d.code == "read_failed" for d in package.diagnostics)
    delivered = {str(b.ref) for b in package.blocks}
    assert not delivered & {str(o.ref) for o in failed}
    if source_class is WholeNoVersion:
        assert not package.blocks


def test_direct_line_scope_still_reads(tmp_path: Path) -> None:
    """Direct entries report their digest as content version, so their line scopes read."""
    ctx = TaskContext("proof", host=host_with(), state_dir=tmp_path / "state")
    ref = ctx.put(role="information", content=LONG).with_scope("lines:2-2")
    package = ctx.reader("c", budget=BUDGET).read(ContextReadIntent(query="", explicit_refs=(ref,)))
    assert [b.content for b in package.blocks if b.ref.scope] == ["old line 2\n"]


# -- the index -------------------------------------------------------------------------------


class KeepingPartition:
    """A text-needing partition that keeps each document's text and version."""

    def __init__(self) -> None:
        self.docs: dict[str, IndexDocument] = {}

    def indexed_versions(self) -> Mapping[str, str]:
        """doc id -> content version."""
        return {k: d.content_version for k, d in self.docs.items()}

    def apply(self, upserts: Sequence[IndexDocument], deletes: Sequence[str]) -> None:
        """Keep the upserts, drop the deletes."""
        for doc_id in deletes:
            self.docs.pop(doc_id, None)
        self.docs.update({d.doc_id: d for d in upserts})

    def search(self, query: str, doc_ids: Sequence[str] | None, limit: int | None) -> SearchResult:
        """Documents whose text holds the query, in id order."""
        pool = sorted(self.docs if doc_ids is None else doc_ids)
        hits = [d for d in pool if query in (self.docs[d].text or "")]
        return SearchResult(
            hits=tuple(SearchHit(doc_id=d, score=1.0) for d in hits[:limit]), considered=len(hits)
        )

    def stats(self) -> Mapping[str, Any]:
        """How many documents it holds."""
        return {"documents": len(self.docs)}

    def close(self) -> None:
        """Nothing to release."""


class KeepingProvider:
    """A lexical provider whose partitions outlive contexts (one per key)."""

    name = "keeping"
    kind: Literal["lexical"] = "lexical"
    needs_text = True

    def __init__(self) -> None:
        self.partitions: dict[PartitionKey, KeepingPartition] = {}

    def open_partition(self, key: PartitionKey, directory: Path | None) -> IndexPartition:
        """The partition of ``key``, the same one every time."""
        return self.partitions.setdefault(key, KeepingPartition())


def provider_plugin(provider: KeepingProvider) -> object:
    """A plugin registering ``provider``."""

    class Plugin:
        @hookimpl
        def register_index_providers(self, register: Callable[[Any], None]) -> None:
            register(provider)

    return Plugin()


def expected_text(content: str, scope: str | None) -> str:
    """What a document of ``content`` at ``scope`` must hold."""
    if scope is None:
        return content
    first, last = parse_line_scope(scope)
    return slice_lines(content, first, last)


def assert_partition_honest(provider: KeepingProvider, contents: Mapping[str, str]) -> None:
    """Every indexed document's text was made from the bytes of its content version."""
    by_version = {sha256_of(text): text for text in contents.values()}
    docs = [d for p in provider.partitions.values() for d in p.docs.values()]
    assert docs
    for doc in docs:
        made_from = by_version[doc.content_version]
        assert doc.text == expected_text(made_from, doc.scope), doc.doc_id


def test_change_during_sync_is_never_indexed_under_the_old_version(tmp_path: Path) -> None:
    """An item that flips to other bytes while the sync reads its scoped part and back
    right after (same content version) does not leave that part's other text indexed under
    the version: the sync re-runs once and indexes the part from the bytes it names."""
    source = CuedMemory({"a.txt": LONG, "b.txt": "bee\n"})
    provider = KeepingProvider()
    ctx = context(source, host_with(provider_plugin(provider)), tmp_path)
    # reads during the first sync: a.txt, b.txt, a.txt#lines:1-2, b.txt#lines:1-2
    source.before_read[3] = lambda: source.put("a.txt", NEW)
    source.before_read[4] = lambda: source.put("a.txt", LONG)
    report = ctx.sync_index()["src"]
    assert report.mode == "diff"
    assert_partition_honest(provider, {"old": LONG, "new": NEW, "b": "bee\n"})
    keys = {d.doc_id for p in provider.partitions.values() for d in p.docs.values()}
    assert len(keys) == 4, "every document is indexed after the second sync"


def test_change_during_the_first_read_repins_once(tmp_path: Path) -> None:
    """The same change during a reader's first sync re-pins once; the package delivers the
    part of the current bytes, and the index holds no text of other bytes."""
    source = CuedMemory({"a.txt": LONG})
    provider = KeepingProvider()
    ctx = context(source, host_with(provider_plugin(provider)), tmp_path)
    source.before_read[2] = lambda: source.put("a.txt", NEW)
    package = ctx.reader("c", budget=ContextBudget(max_chars=len(NEW) - 1)).read("line 1")
    assert package.snapshot.sources["src"] == "r1"
    part = package.blocks[0]  # the item is larger than the page: the part that matched
    assert part.completeness is Completeness.PART
    start, end = parse_char_scope(part.ref.scope or "")
    assert part.content == NEW[start:end]
    assert part.content.startswith("new line 1\n")
    assert all(block.content in NEW for block in package.blocks)
    assert_partition_honest(provider, {"old": LONG, "new": NEW})


def test_continuous_change_during_sync_fails_closed(tmp_path: Path) -> None:
    """An item that changes before every read of the sync fails it (and a reader's read)
    closed with StaleReaderError; the writer stopped, the next sync indexes honestly."""
    source = CuedMemory({"a.txt": LONG})
    provider = KeepingProvider()
    ctx = context(source, host_with(provider_plugin(provider)), tmp_path)
    versions = {f"v{n}": LONG.replace("old", f"v{n}") for n in range(12)}
    for number in range(1, 12):
        source.before_read[number] = functools.partial(source.put, "a.txt", versions[f"v{number}"])
    with pytest.raises(StaleReaderError, match="kept changing"):
        ctx.sync_index()
    with pytest.raises(StaleReaderError, match="kept changing"):
        ctx.reader("c").read("line")
    source.before_read.clear()
    ctx.sync_index()
    assert_partition_honest(provider, {"old": LONG, **versions})


def test_enumeration_moving_during_sync_index_is_retried_once(tmp_path: Path) -> None:
    """``sync_index`` re-syncs once when enumeration moves the revision, and fails with a
    StaleReaderError (not an internal error) when the source keeps moving."""
    once = MovesOnceSource({"a.txt": "alpha"})
    ctx = context(once, host_with(), tmp_path)
    assert ctx.sync_index()["src"].added == 2
    always = AlwaysMovingSource({"a.txt": "alpha"})
    ctx = context(always, host_with(), tmp_path / "other")
    with pytest.raises(StaleReaderError, match="kept changing"):
        ctx.sync_index()


def test_index_skips_reads_of_other_versions(tmp_path: Path) -> None:
    """ContextIndex hands a provider no document whose read reports another version (or
    whose source refused the pinned one), keeps the sound ones, and forgets its revision."""
    source = MemorySource({"a.txt": "alpha", "b.txt": "beta", "c.txt": "gamma"})
    provider = KeepingProvider()
    index = ContextIndex(tmp_path)
    state = index.state(PartitionKey(binding_id="b", source_identity="s", provider="k"), provider)

    async def load_text(descriptor: SourceDescriptor) -> ExactRead | None:
        if descriptor.path == "b.txt":
            return ExactRead.from_text("b.txt", "other", None, content_version=sha256_of("other"))
        if descriptor.path == "c.txt":
            raise StaleReaderError("c.txt changed since the snapshot")
        return ExactRead.from_text(
            descriptor.path, "alpha", None, content_version=descriptor.content_version
        )

    async def sync() -> None:
        await index.sync(state, source, await source.async_revision(), load_text)

    with pytest.raises(RevisionMovedError, match=r"2 item\(s\) changed") as moved:
        asyncio.run(sync())
    assert [key for key, _ in moved.value.changed] == ["b.txt", "c.txt"]
    assert state.revision is None
    (partition,) = provider.partitions.values()
    assert set(partition.docs) == {"a.txt"}


def test_versionless_reads_during_sync_make_the_binding_unavailable(tmp_path: Path) -> None:
    """A source whose reads report no content version cannot feed a text index: the read
    reports the binding unavailable, naming why, and other bindings still deliver."""
    provider = KeepingProvider()
    ctx = context(WholeNoVersion({"a.txt": LONG}), host_with(provider_plugin(provider)), tmp_path)
    ctx.attach(MemorySource({"b.txt": "bee line"}), binding_id="other")
    package = ctx.reader("c", budget=BUDGET).read("line")
    assert package.source_coverage["src"].outcome.value == "unavailable"
    (diagnostic,) = [d for d in package.diagnostics if d.binding_id == "src"]
    assert "no content version" in diagnostic.message
    assert [b.content for b in package.blocks] == ["bee line"]
    assert not any(p.docs for key, p in provider.partitions.items() if key.binding_id == "src")
