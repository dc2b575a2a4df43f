"""A deterministic llm embedding model for the tests, registered through llm's own hooks.

``HashEmbeddings`` turns a text into the counts of its lowercase word tokens (letters and
digits; ``_`` splits) hashed into ``dimensions`` buckets (4096 for ``taskctx-test-hash``, 64 for
``taskctx-test-hash-64``). Texts sharing words have a
positive cosine similarity, texts sharing none have 0 (unless two words share a bucket:
:func:`collisions` lets a test check its vocabulary has none). No network, no files.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from typing import Any, ClassVar

import llm
from llm.models import EmbeddingModel

__all__ = [
    "HASH_MODEL",
    "SMALL_MODEL",
    "HashEmbeddings",
    "HashEmbeddingsPlugin",
    "bucket",
    "collisions",
    "tokens",
]

HASH_MODEL = "taskctx-test-hash"
SMALL_MODEL = "taskctx-test-hash-64"
_TOKEN = re.compile(r"[^\W_]+")


def tokens(text: str) -> list[str]:
    """The lowercase word tokens of ``text``."""
    return _TOKEN.findall(text.lower())


def bucket(token: str, dimensions: int) -> int:
    """The bucket a token counts in."""
    digest = hashlib.blake2b(token.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little") % dimensions


def collisions(texts: Iterable[str], dimensions: int = 4096) -> dict[int, set[str]]:
    """Buckets that two or more distinct tokens of ``texts`` share."""
    shared: dict[int, set[str]] = {}
    for token in {t for text in texts for t in tokens(text)}:
        shared.setdefault(bucket(token, dimensions), set()).add(token)
    return {b: words for b, words in shared.items() if len(words) > 1}


class HashEmbeddings(EmbeddingModel):
    """Word counts hashed into ``dimensions`` buckets; counts every call and text.

    The counters and the failure switch are class-level so a test sees what every
    instance (another process's aside) did: ``HashEmbeddings.reset()`` clears them.
    """

    calls: ClassVar[int] = 0
    """``embed_batch`` calls (one per batch)."""
    embedded: ClassVar[list[str]] = []
    """Every text embedded, in order."""
    failing: ClassVar[str | None] = None
    """When set, every call raises ``ConnectionError`` with this message."""

    def __init__(self, model_id: str = HASH_MODEL, dimensions: int = 4096) -> None:
        self.model_id = model_id
        self.dimensions = dimensions

    def __str__(self) -> str:
        return f"HashEmbeddings: {self.model_id}"

    @classmethod
    def reset(cls) -> None:
        """Zero the counters and stop failing."""
        cls.calls = 0
        cls.embedded = []
        cls.failing = None

    def embed_batch(
        self, items: Iterable[str | bytes], *, key: str | None = None
    ) -> Iterator[list[float]]:
        """One vector of token counts per item."""
        batch = [item.decode() if isinstance(item, bytes) else item for item in items]
        HashEmbeddings.calls += 1
        if HashEmbeddings.failing is not None:
            raise ConnectionError(HashEmbeddings.failing)
        HashEmbeddings.embedded.extend(batch)
        for text in batch:
            vector = [0.0] * self.dimensions
            for token in tokens(text):
                vector[bucket(token, self.dimensions)] += 1.0
            yield vector


class HashEmbeddingsPlugin:
    """An llm plugin registering the test models (``llm.pm.register(plugin)``)."""

    def __init__(self) -> None:
        self.models = (HashEmbeddings(HASH_MODEL, 4096), HashEmbeddings(SMALL_MODEL, 64))

    @llm.hookimpl
    def register_embedding_models(self, register: Any) -> None:
        """Register both test models."""
        for model in self.models:
            register(model)
