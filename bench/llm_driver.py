"""The llm index bench's measuring side: ``python -m bench.llm_driver SPEC OUT``.

Runs inside the bench's own virtualenv (MiniLM through sentence-transformers) or, for
``--quick``, in process with :class:`bench.llm_models.HashEmbedding`. Per provider (fts,
tantivy, vector, hybrid, hybrid-tantivy) it runs :func:`bench.lexical_providers.measure`;
then the model's own throughput, and exact k-NN over the same document vectors with numpy
beside sqlite-vec (:mod:`bench.llm_knn`). The result is JSON written to OUT.
"""

from __future__ import annotations

import importlib.metadata
import json
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from taskctx_fts import FtsProvider
from taskctx_llm.hybrid import hybrid_provider
from taskctx_llm.vector import LlmVectorProvider
from taskctx_tantivy import TantivyProvider

from bench.common import peak_rss_bytes, reset_peak_rss
from bench.fts import Corpus, ndcg_at
from bench.lexical_providers import IndexParams, corpus_for, measure
from bench.llm_knn import Matrix, agreement, knn_numpy, knn_sqlite_vec
from bench.llm_models import (
    HASH_ID,
    CountingEmbedding,
    HashEmbedding,
    MiniLmEmbedding,
    minilm_weights,
    registered,
)
from taskctx.protocols import IndexDocument, IndexPartition, IndexProvider, PartitionKey

__all__ = ["LEXICAL", "PROVIDERS", "VECTORS", "document_text", "main", "run_spec"]

LEXICAL = ("fts", "tantivy")
VECTORS = ("vector", "hybrid", "hybrid-tantivy")
PROVIDERS = (*LEXICAL, *VECTORS)
VERSIONED = (
    "torch", "sentence-transformers", "llm", "numpy", "sqlite-vec", "pysqlite3-binary",
    "tantivy", "PyStemmer",
)  # fmt: skip


def document_text(doc: IndexDocument) -> str:
    """The text the vector provider embeds for ``doc`` (title, then body)."""
    return "\n".join(part for part in (doc.title, doc.text) if part)


class _SummedPartition:
    """A partition whose stats add ``bytes_on_disk`` over a fused partition's members."""

    def __init__(self, inner: IndexPartition) -> None:
        self.inner = inner

    def indexed_versions(self) -> Mapping[str, str]:
        """The inner partition's versions."""
        return self.inner.indexed_versions()

    def apply(self, upserts: Sequence[IndexDocument], deletes: Sequence[str]) -> None:
        """Apply to the inner partition."""
        self.inner.apply(upserts, deletes)

    def search(self, query: str, doc_ids: Sequence[str] | None, limit: int | None) -> Any:
        """Search the inner partition."""
        return self.inner.search(query, doc_ids, limit)

    def stats(self) -> Mapping[str, Any]:
        """Each member's scalar stats as ``member.key``, and their summed bytes on disk."""
        flat: dict[str, Any] = {"bytes_on_disk": 0}
        for member, stats in self.inner.stats().items():
            if not isinstance(stats, Mapping):
                continue
            flat["bytes_on_disk"] += int(stats.get("bytes_on_disk", 0))
            flat.update({f"{member}.{key}": value for key, value in stats.items()})
        return flat

    def close(self) -> None:
        """Close the inner partition."""
        self.inner.close()


class _Summed:
    """A fused provider whose partitions report summed sizes (see :class:`_SummedPartition`)."""

    def __init__(self, inner: IndexProvider) -> None:
        self.inner = inner

    @property
    def name(self) -> str:
        """The inner provider's name."""
        return self.inner.name

    @property
    def kind(self) -> Literal["structural", "lexical", "vector", "hybrid"]:
        """The inner provider's kind."""
        return self.inner.kind

    @property
    def needs_text(self) -> bool:
        """Whether the inner provider needs text."""
        return self.inner.needs_text

    def open_partition(self, key: PartitionKey, directory: Path | None) -> IndexPartition:
        """The inner partition, its stats summed."""
        return _SummedPartition(self.inner.open_partition(key, directory))


def _makers(model_id: str) -> dict[str, Callable[[], IndexProvider]]:
    """A fresh provider of each name (a new vector provider each: no shared state)."""
    return {
        "fts": FtsProvider,
        "tantivy": TantivyProvider,
        "vector": lambda: LlmVectorProvider(model_id),
        "hybrid": lambda: _Summed(hybrid_provider(LlmVectorProvider(model_id))),
        "hybrid-tantivy": lambda: _Summed(
            hybrid_provider(LlmVectorProvider(model_id), TantivyProvider(), name="hybrid-tantivy")
        ),
    }


def _measure_one(
    model: CountingEmbedding, name: str, corpus: Corpus, p: IndexParams, folder: Path
) -> dict[str, Any]:
    """One provider measured, with its peak RSS and what the model embedded meanwhile."""
    reset_peak_rss()
    model.reset_counts()
    measured = measure(_makers(model.model_id)[name], name, corpus, p, folder / name)
    measured["peak_rss_bytes"] = peak_rss_bytes()
    measured["model"] = {"texts": model.texts, "seconds": model.seconds, "reused": model.reused}
    return measured


def _measure_providers(
    model: CountingEmbedding, corpus: Corpus, p: IndexParams, folder: Path
) -> dict[str, dict[str, Any]]:
    """Every provider in turn, each text embedded afresh by the model, except that
    ``hybrid-tantivy`` reuses the vectors ``vector`` embedded, less the queries'."""
    measured: dict[str, dict[str, Any]] = {}
    for name in LEXICAL:
        measured[name] = _measure_one(model, name, corpus, p, folder)
    model.recording = True
    measured["vector"] = _measure_one(model, "vector", corpus, p, folder)
    model.recording = False
    measured["hybrid"] = _measure_one(model, "hybrid", corpus, p, folder)
    model.reuse_all_but(set(corpus.queries.values()))
    measured["hybrid-tantivy"] = _measure_one(model, "hybrid-tantivy", corpus, p, folder)
    measured["hybrid-tantivy"]["build_reused_document_vectors"] = True
    return measured


def _throughput(model: CountingEmbedding, texts: list[str], label: str) -> dict[str, Any]:
    """Texts/s of the model on ``texts``, every one embedded afresh (no reuse)."""
    reusing, model.reusing = model.reusing, False
    model.reset_counts()
    vectors = list(model.embed_multi(texts))
    model.reusing = reusing
    chars = sum(len(text) for text in texts)
    return {
        "what": label,
        "texts": len(texts),
        "seconds": model.seconds,
        "texts_per_s": len(texts) / model.seconds if model.seconds else None,
        "mean_chars": chars / len(texts) if texts else 0,
        "vectors": vectors,
    }


def _matrix(vectors: Sequence[Sequence[float]]) -> Matrix:
    """Unit-length float32 rows."""
    matrix = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.where(norms == 0, 1, norms)).astype(np.float32)


def _knn(
    model: CountingEmbedding, corpus: Corpus, p: IndexParams, query_vectors: Matrix, folder: Path
) -> dict[str, Any]:
    """numpy beside sqlite-vec over the corpus's vectors (reused from the vector build when
    recorded), with agreement to numpy's top k and each searcher's nDCG@k."""
    model.reset_counts()
    docs = _matrix(list(model.embed_multi(document_text(doc) for doc in corpus.documents)))
    doc_ids, qids = [doc.doc_id for doc in corpus.documents], list(corpus.queries)

    def ndcg(ranked: list[list[int]]) -> float:
        scores = [
            ndcg_at([doc_ids[i] for i in r], corpus.qrels[q], p.limit)
            for q, r in zip(qids, ranked, strict=True)
        ]
        return float(np.mean(scores)) if scores else 0.0

    numpy_figures, truth = knn_numpy(docs, query_vectors, p.limit, p.passes)
    numpy_figures["ndcg_at_10"] = ndcg(truth)
    vec_figures, rankings = knn_sqlite_vec(docs, query_vectors, p.limit, p.passes, folder)
    for name, ranked in rankings.items():
        vec_figures[name].update(agreement(ranked, truth), ndcg_at_10=ndcg(ranked))
    return {
        "documents": len(docs),
        "dimensions": int(docs.shape[1]),
        "document_vectors_embedded_afresh": model.texts,
        "stdlib_sqlite3_loads_extensions": hasattr(sqlite3.Connection, "enable_load_extension"),
        "numpy": numpy_figures,
        "sqlite_vec": vec_figures,
        "truth": [[doc_ids[i] for i in r] for r in truth],
    }


def _versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for name in VERSIONED:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None
    return found


def _model_for(spec: Mapping[str, Any], work: Path) -> tuple[CountingEmbedding, dict[str, Any]]:
    """The spec's model, loaded, and what the result records of it."""
    if spec["model"] == HASH_ID:
        return HashEmbedding(), {"id": HASH_ID, "load_s": 0.0}
    model = MiniLmEmbedding(minilm_weights(work / "model"))
    load_s = model.load()
    facts = {"id": model.model_id, "weights": str(model.weights), "load_s": load_s}
    return model, {**facts, "max_seq_length": model.max_seq_length}


def run_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    """Measure every provider, the model's throughput and k-NN as ``spec`` asks."""
    p = IndexParams(**spec["params"])
    corpus = corpus_for(p)
    if corpus is None:
        raise RuntimeError("the SciFact corpus is absent")
    work = Path(spec["work"])
    work.mkdir(parents=True, exist_ok=True)
    model, facts = _model_for(spec, work)
    queries = list(corpus.queries.values())
    sample = [document_text(doc) for doc in corpus.documents[: spec["throughput_docs"]]]
    with registered(model, work / "llm-user"), tempfile.TemporaryDirectory(dir=work) as tmp:
        started = time.perf_counter()
        providers = _measure_providers(model, corpus, p, Path(tmp))
        query_speed = _throughput(model, queries, "queries")
        doc_speed = _throughput(model, sample, "documents")
        query_vectors = _matrix(query_speed.pop("vectors"))
        doc_speed.pop("vectors")
        knn = _knn(model, corpus, p, query_vectors, Path(tmp))
        seconds = time.perf_counter() - started
    rankings = {name: providers[name].pop("rankings") for name in PROVIDERS}
    truth = knn.pop("truth")
    return {
        "corpus": {"source": corpus.source, "documents": len(corpus.documents),
                   "queries": len(corpus.queries)},
        "model": facts,
        "providers": providers,
        "embedding": {"queries": query_speed, "documents": doc_speed},
        "knn": knn,
        "vector_same_top_k_as_numpy": agreement(rankings["vector"], truth)["same_set_share"]
        if truth else None,
        "same_top_k_share_fts_hybrid": sum(
            a == b for a, b in zip(rankings["fts"], rankings["hybrid"], strict=True)
        ) / max(len(queries), 1),
        "seconds": seconds,
        "peak_rss_bytes": peak_rss_bytes(),
        "python": sys.executable,
        "versions": _versions(),
    }  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bench.llm_driver SPEC OUT``: read the JSON spec, write the JSON result."""
    spec_file, out_file = (sys.argv[1:] if argv is None else list(argv))[:2]
    spec = json.loads(Path(spec_file).read_text(encoding="utf-8"))
    result = run_spec(spec)
    Path(out_file).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
