"""``LlmVectorProvider``: a vector IndexProvider on any llm embedding model.

What is embedded
    Each document's title (its path when it has none) and its text, joined by a newline,
    through the model the provider resolves (:mod:`taskctx_llm.embedding`). The model id
    is part of :attr:`LlmVectorProvider.version`, so another model is another partition.

Persistence
    ``<directory>/vectors.db`` (in memory without a directory), see
    :mod:`taskctx_llm.vector_store`: per document its content version, the SHA-256 of the
    exact text embedded and the unit-length float32 vector. An upsert whose text has a
    digest already stored (the same document with only a new content version, or another
    document with the same text) reuses the stored vector: unchanged text is never sent
    to the model again, in this process or the next. ``generation()`` is a counter in the
    file that every apply moves, by any process.

Nearest neighbours
    Exact cosine similarity with numpy: one float32 matrix-vector product over every
    stored vector, the matrix read from SQLite and kept until the generation moves. Not
    sqlite-vec: it is a loadable extension, and the CPython ``sqlite3`` this project runs
    on is built without ``enable_load_extension``; its ``vec0`` tables scan brute force
    too, so they would give the same (exact) neighbours at similar cost, with a native
    dependency more. (``bench/llm_index.py`` measures both where sqlite-vec loads.)
    Hits are ordered by (-score, doc id); ``considered`` is the exact number of documents
    (within ``doc_ids``) whose similarity is at least ``min_similarity``, and the hits are
    those documents (the best ``limit`` of them). A query with no word character is
    reported not searchable, without calling the model. Query text is embedded as given.

Failures
    A model that raises, or answers with vectors of the wrong shape, raises
    :class:`~taskctx_llm.embedding.EmbeddingFailedError` naming the model (from ``apply``
    nothing is written). In a :class:`taskctx.fusion.FusedProvider` that marks the vector
    member optional with ``degrade=True`` (:func:`taskctx_llm.hybrid.hybrid_provider`) a
    failing search drops the member with a warning the reader turns into an
    ``index_degraded`` diagnostic.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from taskctx.protocols import PartitionKey

if TYPE_CHECKING:
    from taskctx_llm.vector_partition import LlmVectorPartition

__all__ = ["DEFAULT_MIN_SIMILARITY", "LlmVectorProvider"]

DEFAULT_MIN_SIMILARITY = 1e-4
"""The least cosine similarity a document needs to count as a match.

Not a relevance threshold: where unrelated texts fall depends on the model (near 0 for
many recent ones, near 0.7 for ``text-embedding-ada-002``), so a relevance cut belongs to
the binding's configuration for its model. The default only keeps out documents that share
no direction with the query (similarity 0, such as an empty text's zero vector, or below),
with a margin over float32 rounding of a dot product of a few thousand dimensions
(about 1e-5)."""


class LlmVectorProvider:
    """The ``vector`` provider: embeddings from an llm embedding model, exact cosine.

    ``model_id`` None: ``$TASKCTX_EMBEDDING_MODEL``, else llm's default embedding model,
    resolved whenever :attr:`version` is read (nothing is loaded until a partition opens).
    """

    kind: Literal["vector"] = "vector"
    needs_text = True

    def __init__(
        self,
        model_id: str | None = None,
        *,
        name: str = "vector",
        batch_size: int = 64,
        min_similarity: float = DEFAULT_MIN_SIMILARITY,
    ) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
            raise ValueError(f"vector: batch_size must be a whole number >= 1, not {batch_size!r}")
        if not math.isfinite(min_similarity) or not -1.0 <= min_similarity <= 1.0:
            raise ValueError(
                f"vector: min_similarity must be a cosine similarity in [-1, 1], "
                f"not {min_similarity!r}"
            )
        self.name = name
        self.model_id = model_id
        self.batch_size = batch_size
        self.min_similarity = float(min_similarity)

    @property
    def version(self) -> str:
        """Part of the partition key: the file format and the resolved model id (another
        model is another partition; ``min_similarity`` only cuts searches)."""
        from taskctx_llm.embedding import resolve_model_id
        from taskctx_llm.vector_store import FORMAT_VERSION

        model = resolve_model_id(self.model_id) or "unconfigured"
        return f"vectors-{FORMAT_VERSION}/model-{model}"

    def open_partition(self, key: PartitionKey, directory: Path | None) -> LlmVectorPartition:
        """Open (or create) ``<directory>/vectors.db``; in memory when ``directory`` is
        None. Raises an ``EmbeddingModelError`` when no model or an unknown one is named."""
        from taskctx_llm.embedding import Embedder, load_embedding_model
        from taskctx_llm.vector_partition import LlmVectorPartition

        embedder = Embedder(load_embedding_model(self.model_id), self.batch_size)
        return LlmVectorPartition(key, directory, embedder, min_similarity=self.min_similarity)
