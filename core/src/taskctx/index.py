"""ContextIndex: partitions keyed by (binding, source identity, profile, provider).

A partition is synced to one source revision. A warm sync (same revision) does no
work; a changed revision costs what changed: the source's change journal when it has
one, otherwise one enumeration diffed by content version, and only changed documents
are handed to the provider (and only they are read when the provider needs text).

Text is stored only under the content version of the bytes it was read from: an item
that changed between enumeration and its read is left out and the sync stops with
``RevisionMovedError``, so the reader re-pins once (or fails closed) and the next sync
indexes the new bytes under their own version.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence, Set
from pathlib import Path
from typing import Any, Literal

import attrs

from taskctx.frozen import share_fields_sets
from taskctx.gcpause import collector_paused
from taskctx.indexfeed import (
    DEFAULT_BOUND,
    READ_BATCH,
    SOURCE_TEXT_CHARS,
    ApplyBound,
    BatchTextLoader,
    EarlyFeed,
    Progress,
    SourceTexts,
    TextLoader,
    feed,
)
from taskctx.model import (
    ContextFilters,
    CoverageReason,
    DescriptorPage,
    Enumeration,
    EnumerationRequest,
    SourceDescriptor,
)
from taskctx.partition import (
    INCREMENTAL_LIMIT,
    DescriptorKey,
    DescriptorList,
    PackedDescriptor,
    PartitionState,
    SortedKeys,
    SyncReport,
    doc_id_of,
    keys_of,
    pack,
    passes_filters,
    version_of,
)
from taskctx.progress import report
from taskctx.protocols import (
    ChangeSet,
    ContextSource,
    IndexDocument,
    IndexPartition,
    IndexProvider,
    PartitionKey,
    SearchHit,
    SearchResult,
    SupportsChanges,
)
from taskctx.statefiles import StateDir

_log = logging.getLogger(__name__)

__all__ = [
    "INCREMENTAL_LIMIT",
    "NO_LEXICAL_PROVIDER",
    "READ_BATCH",
    "ApplyBound",
    "BatchTextLoader",
    "CandidateSet",
    "ContextIndex",
    "PartitionState",
    "RevisionMovedError",
    "SortedKeys",
    "StructuralProvider",
    "SyncReport",
    "TextLoader",
    "doc_id_of",
    "passes_filters",
]

NO_LEXICAL_PROVIDER = CoverageReason.NO_LEXICAL_PROVIDER


class RevisionMovedError(Exception):
    """The source moved away from the revision being synced (internal signal).

    Raised when enumeration saw another revision, or when an item read for indexing was
    no longer at its descriptor's content version (``changed`` names those items).
    """

    def __init__(
        self, expected: str, seen: str, changed: Sequence[tuple[str, str | None]] = ()
    ) -> None:
        message = f"source revision moved from {expected!r} to {seen!r} during sync"
        if changed:
            path, scope = changed[0]
            first = path if scope is None else f"{path}#{scope}"
            message += f"; {len(changed)} item(s) changed while being indexed (first: {first!r})"
        super().__init__(message)
        self.expected = expected
        self.seen = seen
        self.changed = tuple(changed)


@attrs.define(slots=True)
class _StructuralPartition:
    versions: dict[str, str] = attrs.field(factory=dict)

    def indexed_versions(self) -> Mapping[str, str]:
        return self.versions

    def apply(self, upserts: Sequence[IndexDocument], deletes: Sequence[str]) -> None:
        for doc_id in deletes:
            self.versions.pop(doc_id, None)
        for doc in upserts:
            self.versions[doc.doc_id] = doc.content_version

    def search(self, query: str, doc_ids: Sequence[str] | None, limit: int | None) -> SearchResult:
        ids = list(self.versions) if doc_ids is None else list(doc_ids)
        hits = tuple(SearchHit(doc_id=doc_id, score=0.0) for doc_id in ids[:limit])
        return SearchResult(hits=hits, considered=len(ids), reasons=(NO_LEXICAL_PROVIDER,))

    def stats(self) -> Mapping[str, Any]:
        return {"documents": len(self.versions)}

    def close(self) -> None:
        return None


@attrs.define(slots=True, frozen=True)
class StructuralProvider:
    """The kernel's provider: structure only, no ranking; candidates in path order."""

    name: str = "structural"
    kind: Literal["structural"] = "structural"
    needs_text: bool = False

    def open_partition(self, key: PartitionKey, directory: Path | None) -> IndexPartition:
        """An in-memory partition (structure is cheap to rebuild from descriptors)."""
        return _StructuralPartition()


@attrs.define(slots=True)
class CandidateSet:
    """Candidates of one binding for one read, in rank order, and coverage facts.

    ``descriptors`` may be the partition's own list: callers must not mutate it.
    ``scores`` is None when the order is structural (nothing was ranked).
    """

    descriptors: Sequence[SourceDescriptor]
    scores: Sequence[float] | None
    considered: int | None
    enumeration: Enumeration
    searchable: bool = True
    reasons: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    truncated: bool = False
    """True when more matches exist than ``descriptors`` holds (ranked up to a limit)."""


@attrs.define(slots=True)
class ContextIndex:
    """The partitions of one TaskContext, persisted under ``directory`` by their providers."""

    directory: Path | None = None
    states: dict[PartitionKey, PartitionState] = attrs.field(factory=dict)
    apply_bound: ApplyBound = DEFAULT_BOUND
    """The most one ``apply`` call of a sync is handed (text characters, documents)."""
    pause_collector: bool = True
    """Pause the cyclic garbage collector while a sync does work
    (:func:`~taskctx.gcpause.collector_paused`); False leaves it running."""

    def state(
        self,
        key: PartitionKey,
        provider: IndexProvider,
        *,
        persistent: bool = True,
        home: Path | StateDir | None = None,
    ) -> PartitionState:
        """The partition state for ``key``, opened on first use (on disk if ``persistent``).

        ``home`` is where the source wants its indexes (a workspace's ``.taskctx/index``,
        as a :class:`~taskctx.statefiles.StateDir` below its root); otherwise the context's
        own index directory. The partition folder is made without following links below
        the trusted base; a link there raises :class:`~taskctx.errors.StatePathError`.
        """
        state = self.states.get(key)
        if state is None:
            directory = None
            base = home if home is not None else self.directory
            if persistent and base is not None:
                # the partition folder is made beneath the trusted base without following
                # a link planted in the state folders (a ``.taskctx`` symlink in a workspace)
                where = base if isinstance(base, StateDir) else StateDir(base)
                try:
                    directory = where.child(key.slug()).ensure()
                except OSError as exc:  # not a link (refused above): a folder not writable
                    _log.warning(
                        "index of binding %r kept in memory: state folder %s cannot be "
                        "made (%s); set TASKCTX_STATE_DIR or state_dir to a writable folder",
                        key.binding_id,
                        where.path,
                        exc.strerror or exc,
                    )
            state = PartitionState(key, provider, provider.open_partition(key, directory))
            self.states[key] = state
        return state

    async def sync(
        self,
        state: PartitionState,
        source: ContextSource,
        revision: str,
        load_text: TextLoader,
        progress: Progress | None = None,
    ) -> PartitionState:
        """Bring ``state`` to ``revision``; raise RevisionMovedError if the source moved.

        Concurrent syncs of one partition are serialised, so a change is applied once.
        ``state.last_sync`` reports what this sync did.
        """
        if state.revision == revision and _generation(state.partition) == state.generation_seen:
            state.last_sync = SyncReport(mode="warm", unchanged=len(state.descriptors))
            return state
        task = f"indexing {state.key.binding_id}"

        def tick(done: int, total: int) -> None:
            report(task, done, total)  # whoever listens (taskctx.progress), then the caller
            if progress is not None:
                progress(done, total)

        async with state.lock():
            with collector_paused(self.pause_collector):
                return await self._sync_locked(state, source, revision, load_text, tick)

    async def _sync_locked(
        self,
        state: PartitionState,
        source: ContextSource,
        revision: str,
        load_text: TextLoader,
        progress: Progress | None,
    ) -> PartitionState:
        moved = _generation(state.partition) != state.generation_seen
        if state.revision == revision and not moved:
            state.last_sync = SyncReport(mode="warm", unchanged=len(state.descriptors))
            return state
        started = time.perf_counter()
        # a partition another context or process changed (or that was rebuilt) is diffed
        # against what it holds now; a journal only says what changed in the source
        if state.revision is not None and not moved and isinstance(source, SupportsChanges):
            changes = await source.async_changes(state.revision)
            if changes is not None and changes.revision == revision:
                return await self._sync_journal(
                    state, source, changes, load_text, progress, started
                )
        known = dict(state.partition.indexed_versions())  # a copy: apply() may change it
        texts = SourceTexts(SOURCE_TEXT_CHARS if state.provider.needs_text else 0, known)
        early = EarlyFeed(lambda held: self._apply(state, held, [], load_text, None, texts), known)
        fresh, enumeration, reasons = await _enumerate_all(source, revision, texts, early)
        kept = state.rows
        changed = [(key, row) for key, row in fresh.items() if kept.get(key) != row]
        gone = [key for key in kept if key not in fresh]
        # what the partition holds decides what it needs, whoever wrote it last
        to_index = DescriptorList(
            fresh,
            [key for key, row in fresh.items() if known.get(doc_id_of(*key)) != version_of(row)],
        )
        unindex = [key for key in keys_of(known) if key not in fresh]
        moved_items = await self._apply(state, to_index, unindex, load_text, progress, texts)
        texts.clear()  # what the feed did not take goes now
        await _stop_if_moved(state, source, revision, early.moved + moved_items)
        state.replace_packed(changed, gone)
        state.enumeration, state.enumeration_reasons = enumeration, reasons
        state.revision = revision
        state.generation_seen = _generation(state.partition)
        added = early.added + sum(1 for key in to_index.keys if doc_id_of(*key) not in known)
        state.last_sync = SyncReport(
            mode="diff",
            added=added,
            updated=len(to_index) + early.fed - added,
            removed=len(unindex),
            unchanged=len(fresh) - len(to_index) - early.fed,
            seconds=time.perf_counter() - started,
        )
        return state

    async def _sync_journal(
        self,
        state: PartitionState,
        source: ContextSource,
        changes: ChangeSet,
        load_text: TextLoader,
        progress: Progress | None,
        started: float,
    ) -> PartitionState:
        """Bring ``state`` to ``changes.revision`` by applying the source's change journal."""
        added = sum(1 for d in changes.upserts if d.key not in state.descriptors)
        texts = SourceTexts()
        texts.keep(changes.upserts, changes.texts)
        moved_items = await self._apply(
            state, changes.upserts, changes.deletes, load_text, progress, texts
        )
        await _stop_if_moved(state, source, changes.revision, moved_items)
        state.replace(changes.upserts, changes.deletes)
        state.revision = changes.revision
        state.generation_seen = _generation(state.partition)
        state.last_sync = SyncReport(
            mode="journal",
            added=added,
            updated=len(changes.upserts) - added,
            removed=len(changes.deletes),
            unchanged=len(state.descriptors) - len(changes.upserts),
            seconds=time.perf_counter() - started,
        )
        return state

    async def _apply(
        self,
        state: PartitionState,
        upserts: Sequence[SourceDescriptor],
        deletes: Sequence[DescriptorKey],
        load_text: TextLoader,
        progress: Progress | None = None,
        texts: SourceTexts | None = None,
    ) -> list[SourceDescriptor]:
        """Hand changed documents to the provider in chunks within ``apply_bound``; the
        descriptors read at another content version than their own (not handed over).
        ``texts``: what the source handed with the descriptors (those are not read).

        A sync that fails midway may leave earlier chunks applied: the state then forgets
        its revision, as a stopped sync does, so no read trusts the partition to match it.
        """
        if not upserts and not deletes:
            return []
        try:
            return await feed(
                state.partition,
                state.provider.needs_text,
                upserts,
                deletes,
                load_text,
                progress,
                self.apply_bound,
                texts,
            )
        except BaseException:
            state.revision = None
            state.generation_seen = None
            raise

    def candidates(
        self,
        state: PartitionState,
        query: str,
        filters: ContextFilters,
        limit: int | None = None,
        *,
        exclude: Set[DescriptorKey] = frozenset(),
    ) -> CandidateSet:
        """Candidates in rank order (lexical providers) or structural order (no query/ranker).

        ``exclude`` keeps items out of the matching set (a binding's required core).
        ``limit`` bounds how many ranked hits are asked of the provider; the set says
        ``truncated`` when more matched, so a later page asks again with a larger limit.
        """
        in_scope = state.filtered(filters)
        if exclude:
            in_scope = DescriptorList(state.rows, [k for k in in_scope.keys if k not in exclude])
        structural = state.provider.kind == "structural"
        if structural or not query.strip():
            reasons = state.enumeration_reasons
            if structural and query.strip():
                reasons = (*reasons, NO_LEXICAL_PROVIDER)
            return CandidateSet(
                descriptors=in_scope,
                scores=None,
                considered=len(in_scope),
                enumeration=state.enumeration,
                reasons=reasons,
            )
        restrict = (
            None if len(in_scope) == len(state.rows) else [doc_id_of(*k) for k in in_scope.keys]
        )
        result = state.partition.search(query, restrict, limit)
        ranked: list[SourceDescriptor] = []
        scores: list[float] = []
        for hit in result.hits:
            descriptor = state.by_doc_id(hit.doc_id)
            if descriptor is not None:
                ranked.append(descriptor)
                scores.append(hit.score)
        return CandidateSet(
            descriptors=ranked,
            scores=scores,
            considered=result.considered,
            enumeration=Enumeration.RANKED,
            searchable=result.searchable,
            reasons=(*state.enumeration_reasons, *result.reasons),
            warnings=result.warnings,
            truncated=limit is not None
            and len(result.hits) >= limit
            and (result.considered is None or result.considered > len(result.hits)),
        )

    def close(self) -> None:
        """Close every open partition."""
        for state in self.states.values():
            state.partition.close()
        self.states.clear()


async def _stop_if_moved(
    state: PartitionState, source: ContextSource, revision: str, moved: Sequence[SourceDescriptor]
) -> None:
    """Stop a sync some of whose items changed while being read for indexing.

    What was read at its descriptor's version stays applied (a long first sync keeps its
    progress), but the partition no longer matches the revision's descriptors: the state
    forgets its revision, so the next sync diffs against what the partition holds and
    indexes the changed items from their new bytes.
    """
    if not moved:
        return
    state.revision = None
    state.generation_seen = None
    seen = await source.async_revision()
    raise RevisionMovedError(revision, seen, [d.key for d in moved])


def _generation(partition: IndexPartition) -> str | None:
    """The partition's generation, if it offers one (shared, persistent partitions do)."""
    generation = getattr(partition, "generation", None)
    return str(generation()) if callable(generation) else None


async def _enumerate_all(
    source: ContextSource, revision: str, texts: SourceTexts, early: EarlyFeed
) -> tuple[dict[DescriptorKey, PackedDescriptor], Enumeration, tuple[str, ...]]:
    """Every descriptor of ``revision``, packed as it arrives (a page's models are let
    go before the next page is asked for), by key in enumeration order; the texts the
    pages hand over are kept in ``texts``, indexed by ``early`` whenever it is full."""
    rows: dict[DescriptorKey, PackedDescriptor] = {}
    cursor: str | None = None
    enumeration = Enumeration.EXHAUSTIVE
    reasons: list[str] = []
    while True:
        page: DescriptorPage = await source.async_enumerate_descriptors(
            EnumerationRequest(cursor=cursor, revision=revision)
        )
        if page.revision != revision:
            raise RevisionMovedError(revision, page.revision)
        share_fields_sets(page.descriptors)  # the partition keeps them all
        for descriptor in page.descriptors:
            rows[descriptor.key] = pack(descriptor)
        position = texts.keep(page.descriptors, page.texts)
        while position < len(page.descriptors):
            await early(rows, texts)
            position = texts.keep(page.descriptors, page.texts, position)
        if page.enumeration is not Enumeration.EXHAUSTIVE:
            enumeration = page.enumeration
        reasons.extend(r for r in page.reasons if r not in reasons)
        if page.next_cursor is None:
            return rows, enumeration, tuple(reasons)
        if page.next_cursor == cursor:
            raise RuntimeError(f"source {source.kind!r} returned the same cursor twice")
        cursor = page.next_cursor
