"""The partition of the ``vector`` provider: its file, its embedder, its search.

See :mod:`taskctx_llm.vector` for what is embedded, kept and searched, and why.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from taskctx.protocols import IndexDocument, PartitionKey, SearchHit, SearchResult
from taskctx_llm.embedding import Embedder
from taskctx_llm.vector import DEFAULT_MIN_SIMILARITY
from taskctx_llm.vector_store import (
    DB_NAME,
    DimensionMismatchError,
    Matrix,
    VectorRow,
    VectorStore,
    to_blob,
)

__all__ = ["LlmVectorPartition", "embedded_text"]

_WORD = re.compile(r"\w")


def embedded_text(doc: IndexDocument) -> str:
    """What is embedded for ``doc``: its title (or path), a newline, its text."""
    return "\n".join(part for part in (doc.title or doc.path, doc.text) if part)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class LlmVectorPartition:
    """One partition: its SQLite file, its model's embedder and the search matrix."""

    __slots__ = (
        "_embedder",
        "_lock",
        "_matrix",
        "_positions",
        "_rows",
        "_seen",
        "embedded_documents",
        "key",
        "last_apply_seconds",
        "min_similarity",
        "reused_vectors",
        "store",
    )

    def __init__(
        self,
        key: PartitionKey | None,
        directory: Path | None,
        embedder: Embedder,
        *,
        min_similarity: float = DEFAULT_MIN_SIMILARITY,
    ) -> None:
        self.key = key
        self.min_similarity = min_similarity
        self._embedder = embedder
        path = None if directory is None else Path(directory) / DB_NAME
        self.store = VectorStore(path, embedder.model_id)
        self.last_apply_seconds: float | None = None
        self.reused_vectors = 0
        self.embedded_documents = 0
        self._lock = threading.RLock()
        self._seen: str | None = None  # the generation _matrix and _rows were read at
        self._rows: tuple[str, ...] = ()
        self._positions: dict[str, int] = {}  # doc id -> its row in _matrix
        self._matrix: Matrix = np.zeros((0, 0), dtype=np.float32)

    @property
    def model_id(self) -> str:
        """The canonical id of the model whose vectors the partition holds."""
        return self._embedder.model_id

    # -- the IndexPartition protocol -------------------------------------------------------

    def generation(self) -> str:
        """Moves whenever any process applies to this partition's file."""
        return self.store.generation()

    def indexed_versions(self) -> Mapping[str, str]:
        """doc_id -> content version of every stored document."""
        return self.store.versions()

    def apply(self, upserts: Sequence[IndexDocument], deletes: Sequence[str]) -> None:
        """Store ``upserts`` (embedding only texts not stored yet) and remove ``deletes``,
        in one transaction; if the model fails, nothing is written."""
        if not upserts and not deletes:
            return
        started = time.perf_counter()
        latest = list({doc.doc_id: doc for doc in upserts}.values())  # the last one wins
        texts = [embedded_text(doc) for doc in latest]
        digests = [_digest(text) for text in texts]
        vectors = self._vectors(texts, digests)
        rows = [
            VectorRow(doc.doc_id, doc.content_version, digest, vectors[digest])
            for doc, digest in zip(latest, digests, strict=True)
        ]
        dimensions = len(rows[0].vector) // 4 if rows else 0
        with self._lock:
            self.store.apply(rows, deletes, dimensions)
        self.last_apply_seconds = time.perf_counter() - started

    def _vectors(self, texts: Sequence[str], digests: Sequence[str]) -> dict[str, bytes]:
        """digest -> vector BLOB of every text: stored ones reused, the others embedded."""
        vectors = self.store.vectors_by_digest(set(digests))
        fresh = {d: t for d, t in zip(digests, texts, strict=True) if d not in vectors}
        self.reused_vectors += len(texts) - len(fresh)  # a text twice: embedded once
        if fresh:
            embedded = self._embedder.embed(list(fresh.values()))
            self.embedded_documents += len(fresh)
            vectors.update(
                (digest, to_blob(row)) for digest, row in zip(fresh, embedded, strict=True)
            )
        return vectors

    def _current(self) -> tuple[tuple[str, ...], Matrix, dict[str, int]]:
        """The doc ids, their matrix and each id's row, read again when the generation
        moved (after any apply, by anyone: one read of every stored vector)."""
        with self._lock:
            if self.store.generation() != self._seen:
                self._seen, self._rows, self._matrix = self.store.matrix()
                self._positions = {doc_id: row for row, doc_id in enumerate(self._rows)}
            return self._rows, self._matrix, self._positions

    def search(self, query: str, doc_ids: Sequence[str] | None, limit: int | None) -> SearchResult:
        """The documents (within ``doc_ids``) at least ``min_similarity`` like ``query``,
        best first; the best ``limit`` of them, or all."""
        if not _WORD.search(query):
            return SearchResult.not_searchable()
        if doc_ids is not None and not doc_ids:
            return SearchResult.no_matches()
        ids, matrix, positions = self._current()
        if not ids:
            return SearchResult.no_matches()
        vector = self._embedder.embed_query(query)
        if vector.shape[0] != matrix.shape[1]:
            raise DimensionMismatchError(
                f"vector index {self.store.where}: model {self.model_id!r} embedded the "
                f"query in {vector.shape[0]} dimensions, the index holds {matrix.shape[1]}"
            )
        scores = (matrix @ vector).astype(np.float64)
        rows = np.arange(len(ids))
        if doc_ids is not None:  # ascending rows, so still in doc id order
            found = {positions[d] for d in doc_ids if d in positions}
            rows = np.array(sorted(found), dtype=np.intp)
        rows = rows[scores[rows] >= self.min_similarity]
        # rows ascend by doc id, so a stable sort on -score breaks ties by doc id
        ordered = rows[np.argsort(-scores[rows], kind="stable")]
        if limit is not None:
            ordered = ordered[: max(0, limit)]
        hits = tuple(SearchHit(doc_id=ids[i], score=float(scores[i])) for i in ordered)
        return SearchResult(hits=hits, considered=len(rows))

    def stats(self) -> Mapping[str, Any]:
        """Documents, dimensions, the model, bytes on disk, what was embedded and reused."""
        embedder = self._embedder
        return {
            "documents": self.store.count(),
            "dimensions": self.store.dimensions(),
            "model_id": self.model_id,
            "bytes_on_disk": self.store.bytes_on_disk(),
            "embedded_texts": self.embedded_documents + embedder.queries,
            "embedded_documents": self.embedded_documents,
            "embedded_queries": embedder.queries,
            "query_cache_hits": embedder.query_hits,
            "reused_vectors": self.reused_vectors,
            "last_apply_seconds": self.last_apply_seconds,
            "min_similarity": self.min_similarity,
            "search": "exact cosine (numpy)",
            "path": None if self.store.path is None else str(self.store.path),
            "recovered": self.store.recovered,
        }

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            self.store.close()
