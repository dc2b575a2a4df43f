"""``FtsProvider``: the lexical IndexProvider on SQLite FTS5, and its partitions.

A partition is ``<directory>/fts.db`` (in memory without a directory), persistent and
incremental: ``indexed_versions()`` reads what the file holds, so a new process
re-indexes only documents whose content version changed. The title field is the
document's title plus its path (split into words), the body its whole text.

``search`` ranks by BM25 with field weights using the two-phase plan of
``taskctx_fts.plan``; ``considered`` is the exact number of documents matching any
query term (within ``doc_ids`` when given). A query without a searchable token is
reported as such (``searchable=False``), never as zero matches.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from taskctx.codes import CoverageReason
from taskctx.protocols import IndexDocument, PartitionKey, SearchHit, SearchResult
from taskctx_fts import plan
from taskctx_fts.gate import query_tokens
from taskctx_fts.schema import FORMAT
from taskctx_fts.store import DB_NAME, FtsStore, NewDocument, is_corruption
from taskctx_fts.terms import DEFAULT_BUDGET, TermCache
from taskctx_fts.tokenize import document_text

__all__ = [
    "INDEX_REBUILT",
    "NOT_SEARCHABLE",
    "OPTIMIZE_AFTER",
    "PROVIDER_VERSION",
    "FtsPartition",
    "FtsProvider",
]

PROVIDER_VERSION = FORMAT
"""Part of the partition key: changes with the on-disk format or the tokenizer."""

NOT_SEARCHABLE = CoverageReason.QUERY_NOT_SEARCHABLE
INDEX_REBUILT = CoverageReason.INDEX_REBUILT
OPTIMIZE_AFTER = 1000
"""Documents written through a partition (inserted, replaced or deleted) before it merges
the FTS5 segments (``optimize``): at least this many, and at least as many as the file
held at the last merge, so a sync applied in many chunks merges a doubling index a few
times (each merge rewrites the whole index), not once per chunk. An apply of this many
documents folds the WAL back in any case, so the WAL never stays a chunk large."""

_NOTHING = SearchResult.no_matches()
_KEPT_RESULTS = 64
"""How many unfiltered search results a partition keeps for repeated queries."""


def _bits(rowids: Sequence[int]) -> int:
    mask = bytearray((max(rowids, default=0) >> 3) + 1)
    for rowid in rowids:
        mask[rowid >> 3] |= 1 << (rowid & 7)
    return int.from_bytes(mask, "little")


class FtsPartition:
    """One partition: a store, its term cache and the query plan on top."""

    __slots__ = (
        "_lock",
        "_results",
        "_results_at",
        "_unmerged",
        "_writes",
        "cache",
        "fraction",
        "key",
        "last_apply_seconds",
        "store",
        "weights",
    )

    def __init__(
        self,
        key: PartitionKey | None,
        directory: Path | None,
        *,
        weights: tuple[float, float] = (2.0, 1.0),
        fraction: float = plan.SELECTIVE_FRACTION,
        budget: int = DEFAULT_BUDGET,
    ) -> None:
        self.key = key
        self.weights = weights
        self.fraction = fraction
        self.store = FtsStore(None if directory is None else Path(directory) / DB_NAME)
        self.cache = TermCache(self.store, weights, budget)
        self.last_apply_seconds: float | None = None
        self._lock = threading.RLock()
        self._writes = 0
        self._unmerged = 0  # documents written through this partition since its last merge
        self._results: dict[tuple[tuple[str, ...], int | None], SearchResult] = {}
        self._results_at: tuple[int, int] | None = None

    @property
    def recovered(self) -> str | None:
        """Why the file was rebuilt empty (damaged, another format), or None."""
        return self.store.recovered

    def _rebuild(self, error: BaseException) -> None:
        self._writes += 1
        self.store.rebuild(f"{type(error).__name__}: {error}")
        self.cache.refresh()

    # -- the IndexPartition protocol -------------------------------------------------------

    def generation(self) -> str:
        """Moves whenever any process applies to this file, or it is rebuilt."""
        with self._lock:
            try:
                return self.store.generation()
            except sqlite3.DatabaseError as error:
                if not is_corruption(error):
                    raise
                self._rebuild(error)
                return "rebuilt"

    def indexed_versions(self) -> Mapping[str, str]:
        """doc_id -> content version of every document in the file."""
        with self._lock:
            try:
                return self.store.versions()
            except sqlite3.DatabaseError as error:
                if not is_corruption(error):
                    raise
                self._rebuild(error)
                return {}

    def apply(self, upserts: Sequence[IndexDocument], deletes: Sequence[str]) -> None:
        """Insert or replace ``upserts`` and remove ``deletes``, in one transaction."""
        started = time.perf_counter()
        documents = [
            NewDocument(
                doc.doc_id,
                doc.path,
                doc.scope,
                doc.content_version,
                document_text(f"{doc.title or ''} {doc.path}"),
                document_text(doc.text or ""),
            )
            for doc in upserts
        ]
        with self._lock:
            self._writes += 1  # before writing: a failed write may still have changed it
            try:
                self.cache.check()
                was_empty = self.cache.documents == 0
                changes = self.store.apply(documents, deletes)
            except sqlite3.DatabaseError as error:
                if is_corruption(error):  # the kernel's view is stale now: fail the sync
                    self._rebuild(error)
                raise
            self.cache.apply(changes)
            del documents, changes  # the token copies need not live through a merge
            self._merge_after(len(upserts) + len(deletes), was_empty)
        self.last_apply_seconds = time.perf_counter() - started

    def _merge_after(self, written: int, was_empty: bool) -> None:
        """Count ``written`` documents; merge the segments once enough were written, and
        fold the WAL back after any apply of ``OPTIMIZE_AFTER`` documents or more.

        An apply into an empty file wrote one segment in one transaction, which is what a
        merge leaves (measured up to 50,000 documents): when it is due to merge, it counts
        as merged without rewriting that segment (a first sync's last step, otherwise)."""
        self._unmerged += written
        if self._unmerged >= max(OPTIMIZE_AFTER, self.cache.documents - self._unmerged):
            if was_empty:
                self.store.checkpoint()
            else:
                self.store.optimize()
            self._unmerged = 0
        elif written >= OPTIMIZE_AFTER:
            self.store.checkpoint()

    def search(self, query: str, doc_ids: Sequence[str] | None, limit: int | None) -> SearchResult:
        """Rank documents for ``query`` (within ``doc_ids``); the best ``limit``, or all."""
        tokens = query_tokens(query, doc_ids)
        if isinstance(tokens, SearchResult):
            return tokens
        if limit is not None:
            limit = max(0, limit)
        with self._lock:
            try:
                if doc_ids is None:
                    return self._search_unfiltered(tuple(tokens), limit)
                return self._search(tokens, doc_ids, limit)
            except sqlite3.DatabaseError as error:
                if not is_corruption(error):
                    raise
                self._rebuild(error)
                return SearchResult(
                    hits=(),
                    considered=None,
                    reasons=(INDEX_REBUILT,),
                    warnings=(
                        "the full-text index was damaged and has been rebuilt empty; "
                        "matches are unknown until the source is indexed again",
                    ),
                )

    def stats(self) -> Mapping[str, Any]:
        """Documents, tokens, distinct terms, bytes on disk, the last apply's seconds."""
        with self._lock:
            self.cache.check()
            return {
                "documents": self.cache.documents,
                "tokens": self.cache.tokens,
                "terms": self.store.term_count(),
                "bytes_on_disk": self.store.bytes_on_disk(),
                "last_apply_seconds": self.last_apply_seconds,
                "cached_postings": self.cache.entries,
                "path": None if self.store.path is None else str(self.store.path),
                "recovered": self.store.recovered,
            }

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self.store.close()

    # -- ranking ---------------------------------------------------------------------------

    def _search_unfiltered(self, tokens: tuple[str, ...], limit: int | None) -> SearchResult:
        """:meth:`_search` over every document, answered again from memory while the file
        is provably the one it was ranked in: no write through this partition since, and
        SQLite's ``data_version`` unmoved (no other connection committed)."""
        self.cache.check()
        at = (self.cache.version, self._writes)
        if at != self._results_at:
            self._results.clear()
            self._results_at = at
        key = (tokens, limit)
        result = self._results.get(key)
        if result is None:
            result = self._search(tokens, None, limit)
            if len(self._results) >= _KEPT_RESULTS:
                self._results.clear()
            self._results[key] = result
        return result

    def _search(
        self, tokens: Sequence[str], doc_ids: Sequence[str] | None, limit: int | None
    ) -> SearchResult:
        cache, store = self.cache, self.store
        cache.check()
        if cache.documents == 0:
            return _NOTHING
        restricted = doc_ids is not None
        allowed = 0
        if doc_ids is not None:
            rowids = store.restrict(doc_ids)
            if not rowids:
                return _NOTHING
            allowed = _bits(rowids)
        query = plan.make_plan(
            tokens, cache.frequency, cache.cacheable, cache.documents, self.fraction
        )
        if query.empty:
            return _NOTHING
        if limit is None:  # every match: FTS5 ranks all terms itself
            rows = store.top(plan.match_expression(query.terms), self.weights, None, restricted)
            hits = plan.rank(((score, doc_id) for _, score, doc_id, _ in rows), None)
            return SearchResult(hits=_hits(hits), considered=len(rows))
        wanted = plan.candidates_for(limit)
        selective = plan.match_expression(query.selective)
        rows = store.top(selective, self.weights, wanted, restricted)
        common = []
        common_bits = 0
        for term in query.common:
            postings = cache.postings_of(term)
            common.append((plan.idf(cache.frequency(term), cache.documents), postings.frequency))
            common_bits |= postings.bits
        if restricted:
            common_bits &= allowed
        matched = (
            [row[0] for row in rows]
            if len(rows) < wanted
            else store.matching(selective, restricted)
        )
        considered = plan.count_matching(matched, common_bits)
        if len(rows) < limit and considered > len(rows):
            # Too few documents hold a selective term: rank every term in FTS5 (exact).
            rows = store.top(plan.match_expression(query.terms), self.weights, wanted, restricted)
            scored = [(score, doc_id) for _, score, doc_id, _ in rows]
        else:
            scored = plan.rescore(rows, common, cache.average_length)
        return SearchResult(hits=_hits(plan.rank(scored, limit)), considered=considered)


def _hits(ranked: Sequence[tuple[float, str]]) -> tuple[SearchHit, ...]:
    return tuple(SearchHit(doc_id=doc_id, score=score) for score, doc_id in ranked)


class FtsProvider:
    """The ``fts`` lexical provider: SQLite FTS5, BM25 with title/path and body weights."""

    name = "fts"
    kind: Literal["lexical"] = "lexical"
    needs_text = True
    version = PROVIDER_VERSION

    def __init__(
        self,
        *,
        title_weight: float = 2.0,
        body_weight: float = 1.0,
        selective_fraction: float = plan.SELECTIVE_FRACTION,
        postings_budget: int = DEFAULT_BUDGET,
    ) -> None:
        self.weights = (float(title_weight), float(body_weight))
        self.selective_fraction = selective_fraction
        self.postings_budget = postings_budget

    def open_partition(self, key: PartitionKey, directory: Path | None) -> FtsPartition:
        """Open (or create) ``<directory>/fts.db``; in memory when ``directory`` is None."""
        return FtsPartition(
            key,
            directory,
            weights=self.weights,
            fraction=self.selective_fraction,
            budget=self.postings_budget,
        )
