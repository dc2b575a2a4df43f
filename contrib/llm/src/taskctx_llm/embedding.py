"""Which llm embedding model a vector index uses, and calling it.

Resolution
    A provider made with a model id uses it; without one, the environment variable
    ``TASKCTX_EMBEDDING_MODEL``, else llm's default embedding model (``llm embed-models
    default MODEL``). Resolving the id reads those two and nothing else: no plugin runs
    and no model is loaded. The model object is looked up in llm (its plugins' hooks)
    only when a partition is opened.

Calls
    :class:`Embedder` sends texts to ``model.embed_multi`` in batches and returns them as
    unit-length float32 rows (a zero vector stays zero); it counts what it sent and keeps a
    small LRU of query vectors. Anything the model raises, or an answer of the wrong shape,
    becomes :class:`EmbeddingFailedError` naming the model.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, cast

import llm
import numpy as np
from llm.models import EmbeddingModel

from taskctx.errors import TaskCtxError
from taskctx_llm.vector_store import Matrix

__all__ = [
    "ENV_VAR",
    "QUERY_CACHE_SIZE",
    "Embedder",
    "EmbeddingFailedError",
    "EmbeddingModelError",
    "EmbeddingModelNotConfiguredError",
    "UnknownEmbeddingModelError",
    "load_embedding_model",
    "resolve_model_id",
]

ENV_VAR = "TASKCTX_EMBEDDING_MODEL"
"""The environment variable naming the embedding model of a provider made without one."""
QUERY_CACHE_SIZE = 256
"""Query vectors an :class:`Embedder` keeps (least recently used dropped first)."""


class EmbeddingModelError(TaskCtxError):
    """The embedding model of a vector index is missing, unknown or failing."""


class EmbeddingModelNotConfiguredError(EmbeddingModelError):
    """No embedding model is named anywhere."""


class UnknownEmbeddingModelError(EmbeddingModelError, LookupError):
    """llm knows no embedding model of the configured id."""


class EmbeddingFailedError(EmbeddingModelError):
    """The embedding model raised, or answered with vectors of the wrong shape."""


def resolve_model_id(model_id: str | None) -> str | None:
    """``model_id``, else ``$TASKCTX_EMBEDDING_MODEL``, else llm's default embedding model
    (None when none is set). Loads nothing."""
    if model_id:
        return model_id
    configured = os.environ.get(ENV_VAR, "").strip()
    if configured:
        return configured
    default = cast("str | None", llm.get_default_embedding_model())  # type: ignore[no-untyped-call]
    return default or None


def load_embedding_model(model_id: str | None) -> EmbeddingModel:
    """The llm embedding model of ``model_id`` (resolved as :func:`resolve_model_id` does)."""
    resolved = resolve_model_id(model_id)
    if resolved is None:
        raise EmbeddingModelNotConfiguredError(
            "the vector index has no embedding model: name one with "
            f"LlmVectorProvider(model_id=...), the environment variable {ENV_VAR}, "
            "or llm's default embedding model (llm embed-models default MODEL_ID)"
        )
    try:
        return cast("EmbeddingModel", llm.get_embedding_model(resolved))  # type: ignore[no-untyped-call]
    except llm.UnknownModelError as exc:
        known = sorted(
            str(m.model_id)
            for m in cast("list[Any]", llm.get_embedding_models())  # type: ignore[no-untyped-call]
        )
        raise UnknownEmbeddingModelError(
            f"llm knows no embedding model {resolved!r} (install the llm plugin that provides "
            f"it; known: {', '.join(known) or 'none'})"
        ) from exc


class Embedder:
    """One model's calls for one partition: batches, counts and the query LRU."""

    __slots__ = ("_queries", "batch_size", "documents", "model", "queries", "query_hits")

    def __init__(self, model: EmbeddingModel, batch_size: int) -> None:
        self.model = model
        self.batch_size = batch_size
        self.documents = 0
        """Document texts sent to the model."""
        self.queries = 0
        """Query texts sent to the model."""
        self.query_hits = 0
        """Queries answered from the LRU."""
        self._queries: OrderedDict[str, Matrix] = OrderedDict()

    @property
    def model_id(self) -> str:
        """The model's canonical id."""
        return str(self.model.model_id)

    def embed(self, texts: Sequence[str]) -> Matrix:
        """One unit-length float32 row per text, in order."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        try:
            vectors = list(self.model.embed_multi(texts, batch_size=self.batch_size))
        except Exception as exc:  # the model is a plugin of a plugin: name it
            raise EmbeddingFailedError(
                f"embedding model {self.model_id!r} failed: {type(exc).__name__}: {exc}"
            ) from exc
        self.documents += len(texts)
        return self._matrix(vectors, len(texts))

    def embed_query(self, query: str) -> Matrix:
        """The unit-length vector of ``query`` (from the LRU when asked before)."""
        cached = self._queries.get(query)
        if cached is not None:
            self._queries.move_to_end(query)
            self.query_hits += 1
            return cached
        try:
            vectors = list(self.model.embed_multi([query], batch_size=1))
        except Exception as exc:  # the model is a plugin of a plugin: name it
            raise EmbeddingFailedError(
                f"embedding model {self.model_id!r} failed on the query: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        self.queries += 1
        vector: Matrix = self._matrix(vectors, 1)[0]
        vector.flags.writeable = False
        self._queries[query] = vector
        if len(self._queries) > QUERY_CACHE_SIZE:
            self._queries.popitem(last=False)
        return vector

    def _matrix(self, vectors: Sequence[Sequence[float]], expected: int) -> Matrix:
        """Check the model's answer (count, one length, finite) and normalise the rows."""
        lengths = {len(v) for v in vectors}
        if len(vectors) != expected or len(lengths) != 1 or 0 in lengths:
            raise EmbeddingFailedError(
                f"embedding model {self.model_id!r} answered {len(vectors)} vectors of "
                f"lengths {sorted(lengths)} for {expected} texts"
            )
        matrix = np.asarray(vectors, dtype=np.float64)
        if not np.isfinite(matrix).all():
            raise EmbeddingFailedError(
                f"embedding model {self.model_id!r} answered a vector that is not finite"
            )
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        np.divide(matrix, norms, out=matrix, where=norms > 0)
        normalised: Matrix = matrix.astype(np.float32)
        return normalised
