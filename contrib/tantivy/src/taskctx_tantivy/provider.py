"""``TantivyProvider``: a lexical IndexProvider on tantivy, and its partitions.

Tokens
    Documents and queries go through ``taskctx_fts.tokenize`` (NFKC and case folding,
    English stop words, Snowball English stems, CJK bigrams plus single CJK characters
    in documents), so ``tantivy`` and ``fts`` see the same tokens and a CJK query finds
    CJK text. The title field is the title plus the path, as in ``fts``.

Ranking
    tantivy's BM25 (k1 = 1.2, b = 0.75) summed over the query's distinct tokens, in one
    field where the title's tokens count ``title_weight`` times (they are indexed that
    many times, default 2) and the body's once (:mod:`taskctx_tantivy.ranking`). One
    field, not two: tantivy scores each field as its own BM25, and summing a short title
    field's scores with the body's ranked SciFact at nDCG@10 0.627 where one field gives
    0.692 (fts: 0.688), because a title term saturates apart from the body.
    Equal scores are ordered by doc id; ``considered`` is the exact number of documents
    holding any query token (within ``doc_ids``). A query without a searchable token is
    reported so (``searchable=False``), never as zero matches. User text is never query
    syntax: no parser reads it.

Persistence
    A partition is ``<directory>/tantivy/`` (in memory without a directory),
    incremental by content version: ``indexed_versions()`` reads the stored versions,
    so a new process re-indexes only what changed. Each ``apply`` is one tantivy commit
    (the kernel's chunks of one sync are one commit each, never one per document),
    whole on its own; its writer holds the index lock across processes only while it
    writes (:mod:`taskctx_tantivy.store`). ``generation()`` moves with every commit by
    anyone, so the kernel re-diffs when another process applied. An index that cannot be
    opened is rebuilt empty and ``stats()['recovered']`` says why.

Deleted documents leave tantivy's term statistics only when their segment is merged, so
after partial updates a score can differ slightly from a fresh build's; which documents
match, and ``considered``, are always exact.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, cast

import tantivy
from taskctx_fts.gate import query_tokens
from taskctx_fts.tokenize import TOKENIZER_VERSION, document_text

from taskctx.protocols import IndexDocument, PartitionKey, SearchHit, SearchResult
from taskctx_tantivy import ranking
from taskctx_tantivy.store import (
    DIR_NAME,
    FORMAT_VERSION,
    TantivyIndexError,
    TantivyLockTimeoutError,
    TantivyStore,
    key_of,
)

__all__ = [
    "DEFAULT_LOCK_TIMEOUT",
    "PROVIDER_VERSION",
    "TantivyIndexError",
    "TantivyLockTimeoutError",
    "TantivyPartition",
    "TantivyProvider",
]

PROVIDER_VERSION = f"tantivy-{FORMAT_VERSION}/tokenizer-{TOKENIZER_VERSION}"
"""Part of the partition key: changes with the fields or the tokenizer."""
DEFAULT_LOCK_TIMEOUT = 30.0
"""Seconds an apply waits for another writer of the same index before it fails."""

_NOTHING = SearchResult.no_matches()


class TantivyPartition:
    """One partition: its tantivy index and what this process knows of its versions."""

    __slots__ = (
        "_ids",
        "_lock",
        "_seen",
        "_versions",
        "_versions_at",
        "key",
        "last_apply_seconds",
        "store",
        "title_weight",
    )

    def __init__(
        self,
        key: PartitionKey | None,
        directory: Path | None,
        *,
        title_weight: int = 2,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    ) -> None:
        self.key = key
        self.title_weight = title_weight
        path = None if directory is None else Path(directory) / DIR_NAME
        self.store = TantivyStore(path, lock_timeout=lock_timeout)
        self.last_apply_seconds: float | None = None
        self._lock = threading.RLock()
        self._seen: str | None = None  # the state the searcher was last reloaded at
        self._versions: dict[str, str] = {}
        self._versions_at: str | None = None  # the state _versions and _ids are true at
        self._ids: dict[int, str | None] = {}  # key -> doc id (None: two ids share the key)
        if self.store.index.searcher().num_docs == 0:  # nothing to read: the versions are known
            self._versions_at = self._fresh()

    @property
    def recovered(self) -> str | None:
        """Why the index was rebuilt empty when it was opened, or None."""
        return self.store.recovered

    def _fresh(self) -> str:
        """The index's state, the searcher reloaded first if anyone committed since."""
        state = self.store.state()
        if state != self._seen:
            self.store.index.reload()
            self._seen = state
        return state

    # -- the IndexPartition protocol -------------------------------------------------------

    def generation(self) -> str:
        """Moves whenever any process commits to (or merges) this index."""
        with self._lock:
            return self.store.state()

    def indexed_versions(self) -> Mapping[str, str]:
        """doc_id -> content version of every document in the index."""
        with self._lock:
            state = self._fresh()
            if self._versions_at != state:
                self._versions = self.store.documents()
                self._ids = {}
                self._name(self._versions)
                self._versions_at = state
            return dict(self._versions)

    def _name(self, doc_ids: Iterable[str]) -> None:
        for doc_id in doc_ids:
            key = key_of(doc_id)
            self._ids[key] = doc_id if self._ids.get(key, doc_id) == doc_id else None

    def apply(self, upserts: Sequence[IndexDocument], deletes: Sequence[str]) -> None:
        """Insert or replace ``upserts`` and remove ``deletes``: one commit."""
        if not upserts and not deletes:
            return
        started = time.perf_counter()
        upserts = list({doc.doc_id: doc for doc in upserts}.values())  # the last one wins
        documents = [self._document(doc) for doc in upserts]
        with self._lock:
            known = self._versions_at == self._fresh()
            with self.store.writing(len(documents)) as writer:
                known = known and self.store.state() == self._versions_at  # under the lock
                for doc_id in (*deletes, *(doc.doc_id for doc in upserts)):
                    writer.delete_documents_by_term("doc_id", doc_id)
                for document in documents:
                    writer.add_document(document)
            state = self._fresh()
            if known:  # nobody else committed in between: the versions follow our writes
                for doc_id in deletes:
                    self._versions.pop(doc_id, None)
                self._versions.update((doc.doc_id, doc.content_version) for doc in upserts)
                self._name(doc.doc_id for doc in upserts)  # a deleted id's key stays: harmless
                self._versions_at = state
            else:
                self._versions_at = None
        self.last_apply_seconds = time.perf_counter() - started

    def _document(self, doc: IndexDocument) -> tantivy.Document:
        title = document_text(f"{doc.title or ''} {doc.path}")
        text = " ".join((*(title,) * self.title_weight, document_text(doc.text or "")))
        made = tantivy.Document(doc_id=doc.doc_id, version=doc.content_version, text=text)
        made.add_unsigned("key", key_of(doc.doc_id))
        return made

    def search(self, query: str, doc_ids: Sequence[str] | None, limit: int | None) -> SearchResult:
        """Rank documents for ``query`` (within ``doc_ids``); the best ``limit``, or all."""
        tokens = query_tokens(query, doc_ids)
        if isinstance(tokens, SearchResult):
            return tokens
        with self._lock:
            named = self._fresh() == self._versions_at
            searcher = self.store.index.searcher()
            if searcher.num_docs == 0:
                return _NOTHING
            built = ranking.build_query(self.store.schema, tokens, doc_ids)
            ids = self._names_from(searcher) if named else self._names_stored(searcher)
            try:
                ranked, count = ranking.top(
                    searcher, built, None if limit is None else max(0, limit), ids
                )
            except ValueError as exc:
                raise TantivyIndexError(f"tantivy index {self.store.where}: {exc}") from None
        hits = tuple(SearchHit(doc_id=doc_id, score=score) for score, doc_id in ranked)
        return SearchResult(hits=hits, considered=count)

    def _names_from(
        self, searcher: tantivy.Searcher
    ) -> Callable[[list[tantivy.DocAddress]], list[str]]:
        """Hits named by their keys (one fast-field read), while ``_ids`` is current."""
        stored = self._names_stored(searcher)

        def names(addresses: list[tantivy.DocAddress]) -> list[str]:
            keys = cast("list[int]", searcher.fast_field_values("key", addresses))
            found = [self._ids.get(key) for key in keys]
            if None in found:  # a key shared by two ids (or unknown): read those documents
                again = stored([a for a, name in zip(addresses, found, strict=True) if not name])
                return [name or again.pop(0) for name in found]
            return found  # type: ignore[return-value]

        return names

    @staticmethod
    def _names_stored(
        searcher: tantivy.Searcher,
    ) -> Callable[[list[tantivy.DocAddress]], list[str]]:
        """Hits named by their stored doc ids (one document read each)."""

        def names(addresses: list[tantivy.DocAddress]) -> list[str]:
            return [str(searcher.doc(address).get_first("doc_id")) for address in addresses]

        return names

    def stats(self) -> Mapping[str, Any]:
        """Documents, segments, bytes on disk, the last apply's seconds, the directory."""
        with self._lock:
            self._fresh()
            searcher = self.store.index.searcher()
            return {
                "documents": searcher.num_docs,
                "segments": searcher.num_segments,
                "bytes_on_disk": self.store.bytes_on_disk(),
                "last_apply_seconds": self.last_apply_seconds,
                "path": None if self.store.path is None else str(self.store.path),
                "recovered": self.store.recovered,
            }

    def close(self) -> None:
        """Let go of the index (its files are unmapped)."""
        with self._lock:
            self.store.close()


class TantivyProvider:
    """The ``tantivy`` lexical provider: tantivy's BM25 over the fts tokens."""

    name = "tantivy"
    kind: Literal["lexical"] = "lexical"
    needs_text = True

    def __init__(
        self, *, title_weight: int = 2, lock_timeout: float = DEFAULT_LOCK_TIMEOUT
    ) -> None:
        if not isinstance(title_weight, int) or isinstance(title_weight, bool) or title_weight < 0:
            raise ValueError(
                f"tantivy: title_weight must be a whole number >= 0 (the times a title's "
                f"tokens are indexed), not {title_weight!r}"
            )
        if not lock_timeout >= 0:  # also refuses NaN
            raise ValueError(
                f"tantivy: lock_timeout must be seconds >= 0 (how long an apply waits for "
                f"another writer), not {lock_timeout!r}"
            )
        self.title_weight = title_weight
        self.lock_timeout = float(lock_timeout)
        # the weight shapes what is indexed, so another weight is another partition
        self.version = PROVIDER_VERSION + ("" if title_weight == 2 else f"/title-{title_weight}")

    def open_partition(self, key: PartitionKey, directory: Path | None) -> TantivyPartition:
        """Open (or create) ``<directory>/tantivy/``; in memory when ``directory`` is None."""
        return TantivyPartition(
            key, directory, title_weight=self.title_weight, lock_timeout=self.lock_timeout
        )
