"""Measuring lexical providers side by side on one corpus (the index benches' shared steps).

Per provider: one cold build, nDCG@10, queries/s (the first pass and the median of warm
passes), one-document updates and the query after each, its stats, and optionally what a
second opener of the same partition pays before it can search.
"""

from __future__ import annotations

import gc
import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.common import skipped_result, summarize
from bench.fts import SCIFACT_DIR, Corpus, load_scifact, ndcg_at, synthetic_corpus
from taskctx.protocols import IndexPartition, IndexProvider, PartitionKey

__all__ = [
    "QUICK",
    "IndexParams",
    "corpus_facts",
    "corpus_for",
    "key_for",
    "measure",
    "same_share",
    "scifact_absent",
    "timed_pass",
]


@dataclass(frozen=True)
class IndexParams:
    """Passes, sample sizes and the synthetic corpus size (0: SciFact)."""

    limit: int = 10
    passes: int = 5
    updates: int = 30
    seed: int = 20_261_204
    synthetic_docs: int = 0
    synthetic_queries: int = 0


QUICK = IndexParams(passes=2, updates=3, synthetic_docs=300, synthetic_queries=40)
"""The quick run of an index bench: fts's small synthetic corpus, few passes."""


def key_for(provider: str) -> PartitionKey:
    """The bench's partition key for ``provider``."""
    return PartitionKey(binding_id="bench", source_identity="bench:scifact", provider=provider)


def timed_pass(
    partition: IndexPartition, texts: list[str], limit: int
) -> tuple[float, list[list[str]]]:
    """Seconds of one search of every text (top ``limit``), and the rankings."""
    gc.collect()
    start = time.perf_counter()
    ranked = [[hit.doc_id for hit in partition.search(t, None, limit).hits] for t in texts]
    return time.perf_counter() - start, ranked


def _close(provider: IndexProvider) -> None:
    """Close what the provider holds, if it holds anything (postgres: its pools)."""
    close = getattr(provider, "close", None)
    if callable(close):
        close()


def _updates(
    partition: IndexPartition, corpus: Corpus, texts: list[str], p: IndexParams
) -> tuple[list[float], list[float], bool]:
    """Seconds of each one-document update and of the query after it; all visible."""
    update_s: list[float] = []
    next_query_s: list[float] = []
    visible = True
    sample = random.Random(p.seed).sample(corpus.documents, min(p.updates, len(corpus.documents)))
    for number, doc in enumerate(sample):
        marker = f"zqxupdate{number}"
        text = f"{doc.text or ''} Revised in the benchmark: {marker}."
        changed = doc.model_copy(update={"text": text, "content_version": f"v-{marker}"})
        start = time.perf_counter()
        partition.apply([changed], [])
        update_s.append(time.perf_counter() - start)
        start = time.perf_counter()
        partition.search(texts[number % len(texts)], None, p.limit)
        next_query_s.append(time.perf_counter() - start)
        found = [hit.doc_id for hit in partition.search(marker, None, 1).hits]
        visible = visible and found == [doc.doc_id]
    return update_s, next_query_s, visible


def _second_opener(make: Callable[[], IndexProvider], name: str, folder: Path) -> dict[str, Any]:
    """A new provider opens the same key: seconds until it knows what it holds."""
    other = make()
    start = time.perf_counter()
    again = other.open_partition(key_for(name), folder / "elsewhere")
    held = len(again.indexed_versions())
    seconds = time.perf_counter() - start
    again.close()
    _close(other)
    return {"seconds": seconds, "documents_held": held}


def measure(
    make: Callable[[], IndexProvider],
    name: str,
    corpus: Corpus,
    p: IndexParams,
    folder: Path,
    *,
    second_opener: bool = False,
) -> dict[str, Any]:
    """One provider on ``corpus``: build, quality, cold and warm passes, updates, stats
    (and what a second opener of the partition pays, when asked)."""
    texts, ids = list(corpus.queries.values()), list(corpus.queries)
    provider = make()
    partition = provider.open_partition(key_for(name), folder)
    gc.collect()
    start = time.perf_counter()
    partition.apply(corpus.documents, [])
    build_s = time.perf_counter() - start
    cold_s, cold = timed_pass(partition, texts, p.limit)
    warm = [timed_pass(partition, texts, p.limit) for _ in range(p.passes)]
    ranked = warm[-1][1]
    ndcg = statistics.fmean(ndcg_at(r, corpus.qrels[q]) for q, r in zip(ids, ranked, strict=True))
    update_s, next_query_s, visible = _updates(partition, corpus, texts, p)
    second = _second_opener(make, name, folder) if second_opener else None
    stats = dict(partition.stats())
    partition.close()
    _close(provider)
    warm_times = summarize([seconds for seconds, _ in warm])
    return {
        "build_s": build_s,
        "documents_per_s": len(corpus.documents) / build_s,
        "ndcg_at_10": ndcg,
        "cold_qps": len(texts) / cold_s,
        "warm_qps": len(texts) / warm_times["median_s"],
        "warm_passes": warm_times,
        "update": summarize(update_s),
        "query_after_update": summarize(next_query_s),
        "second_opener": second,
        "stats": {k: v for k, v in stats.items() if isinstance(v, int | float | str)},
        "passes_agree": cold == ranked and all(r == ranked for _, r in warm),
        "update_visible": visible,
        "rankings": ranked,
    }


def corpus_for(p: IndexParams) -> Corpus | None:
    """The synthetic corpus ``p`` asks for, else SciFact (None when it is absent)."""
    if p.synthetic_docs:
        return synthetic_corpus(p.synthetic_docs, p.synthetic_queries, p.seed)
    if not (SCIFACT_DIR / "corpus.jsonl").is_file():
        return None
    return load_scifact(SCIFACT_DIR)


def scifact_absent(name: str, p: IndexParams, quick: bool, notes: Sequence[str]) -> dict[str, Any]:
    """The result of an index bench when SciFact is not in the eval data."""
    return skipped_result(
        name, quick=quick, params=asdict(p), notes=notes,
        reason=f"BEIR SciFact folder {str(SCIFACT_DIR)!r} is absent",
    )  # fmt: skip


def corpus_facts(corpus: Corpus) -> dict[str, Any]:
    """Where the corpus came from and its sizes, for a result."""
    return {
        "source": corpus.source,
        "documents": len(corpus.documents),
        "queries": len(corpus.queries),
    }


def same_share(first: list[list[str]], second: list[list[str]]) -> float:
    """The share of queries whose two rankings are identical."""
    return sum(a == b for a, b in zip(first, second, strict=True)) / len(first)
