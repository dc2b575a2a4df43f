"""The ``postgres`` lexical provider beside ``fts`` on BEIR SciFact, in one run (issue 19).

Per provider, on the same documents and queries: one cold build, nDCG@10 over the 300 test
queries, queries/s (the first pass and the median of warm passes, top 10), one-document
updates and the query after each; for ``postgres`` also what a second opener of the same
partition (another TaskContext, another machine) pays before it can search: it re-indexes
nothing. Target (issue 19): postgres nDCG@10 >= 0.66 on SciFact. The server is the one
``TASKCTX_PG_DSN`` names, else a throwaway cluster started for the run. ``--quick`` uses
fts's small synthetic corpus.
"""

from __future__ import annotations

import gc
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from taskctx_fts import FtsProvider

from bench.common import result_header, skipped_result, summarize
from bench.fts import SCIFACT_DIR, Corpus, load_scifact, ndcg_at, synthetic_corpus
from bench.postgres import server_dsn, throwaway_databases, unless_missing
from taskctx.protocols import IndexPartition, IndexProvider, PartitionKey

__all__ = ["DESCRIPTION", "FULL", "NAME", "QUICK", "IndexParams", "run", "summary_lines"]

NAME = "postgres_index"
DESCRIPTION = (
    "postgres lexical provider beside fts on SciFact: nDCG@10, cold build, "
    "second opener, one-doc update, queries/s"
)
TARGET_NDCG = 0.66
PROVIDERS = ("fts", "postgres")


@dataclass(frozen=True)
class IndexParams:
    """Passes, sample sizes and the synthetic corpus size (0: SciFact)."""

    limit: int = 10
    passes: int = 5
    updates: int = 30
    seed: int = 20_261_204
    synthetic_docs: int = 0
    synthetic_queries: int = 0


FULL = IndexParams()
QUICK = IndexParams(passes=2, updates=3, synthetic_docs=300, synthetic_queries=40)

NOTES = (
    "Both providers run the same steps in one process, one after the other, each on a "
    "fresh partition: fts in a temporary folder, postgres in a new database on 127.0.0.1.",
    "build: one apply() of every document (tokenizing included; postgres also VACUUMs "
    "after it, as every apply of >= 1,000 documents does).",
    "queries: search(query, None, limit) over every query; cold: the first pass after "
    "the build; warm: median of `passes` passes; gc.collect() before each pass.",
    "second opener: a new provider object opens the same key and reads indexed_versions() "
    "(what a second machine's TaskContext does before it diffs).",
    "update: apply() of one document whose text gained a sentence, median over random "
    "documents, then one query.",
    "PostgreSQL server: TASKCTX_PG_DSN, else a throwaway cluster (fsync=off) started by "
    "this bench; SQLite (fts): WAL, on the same disk.",
)


def _key(provider: str) -> PartitionKey:
    return PartitionKey(binding_id="bench", source_identity="bench:scifact", provider=provider)


def _pass(partition: IndexPartition, texts: list[str], limit: int) -> tuple[float, list[list[str]]]:
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
    again = other.open_partition(_key(name), folder / "elsewhere")
    held = len(again.indexed_versions())
    seconds = time.perf_counter() - start
    again.close()
    _close(other)
    return {"seconds": seconds, "documents_held": held}


def _measure(
    make: Callable[[], IndexProvider], name: str, corpus: Corpus, p: IndexParams, folder: Path
) -> dict[str, Any]:
    texts, ids = list(corpus.queries.values()), list(corpus.queries)
    provider = make()
    partition = provider.open_partition(_key(name), folder)
    gc.collect()
    start = time.perf_counter()
    partition.apply(corpus.documents, [])
    build_s = time.perf_counter() - start
    cold_s, cold = _pass(partition, texts, p.limit)
    warm = [_pass(partition, texts, p.limit) for _ in range(p.passes)]
    ranked = warm[-1][1]
    ndcg = statistics.fmean(ndcg_at(r, corpus.qrels[q]) for q, r in zip(ids, ranked, strict=True))
    update_s, next_query_s, visible = _updates(partition, corpus, texts, p)
    second = _second_opener(make, name, folder) if name == "postgres" else None
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


def _corpus(p: IndexParams) -> Corpus | None:
    if p.synthetic_docs:
        return synthetic_corpus(p.synthetic_docs, p.synthetic_queries, p.seed)
    if not (SCIFACT_DIR / "corpus.jsonl").is_file():
        return None
    return load_scifact(SCIFACT_DIR)


def run_index(p: IndexParams, *, quick: bool) -> dict[str, Any]:
    """Both providers on one corpus; the postgres over fts ratio of each speed."""
    from taskctx_postgres.lexical import PostgresLexicalProvider

    header = result_header(NAME, quick=quick, params=asdict(p), notes=NOTES)
    corpus = _corpus(p)
    if corpus is None:
        return skipped_result(
            NAME, quick=quick, params=asdict(p), notes=NOTES,
            reason=f"BEIR SciFact folder {str(SCIFACT_DIR)!r} is absent",
        )  # fmt: skip
    with server_dsn() as dsn, throwaway_databases(dsn) as databases:
        url = databases.new()
        with tempfile.TemporaryDirectory(prefix="taskctx-bench-pgidx-") as tmp:
            makers: dict[str, Callable[[], IndexProvider]] = {
                "fts": FtsProvider,
                "postgres": lambda: PostgresLexicalProvider(url),
            }
            measured = {
                name: _measure(makers[name], name, corpus, p, Path(tmp) / name)
                for name in PROVIDERS
            }
    fts, pg = (measured[name].pop("rankings") for name in PROVIDERS)
    same = sum(a == b for a, b in zip(fts, pg, strict=True)) / len(fts)
    judged = not quick and not p.synthetic_docs
    met = measured["postgres"]["ndcg_at_10"] >= TARGET_NDCG
    second = measured["postgres"]["second_opener"]
    return {
        **header,
        "skipped": False,
        "corpus": {"source": corpus.source, "documents": len(corpus.documents),
                   "queries": len(corpus.queries)},
        "providers": measured,
        "same_top_k_share": same,
        "ratios_postgres_over_fts": _ratios(measured),
        "targets": {"min_postgres_ndcg_at_10": TARGET_NDCG, "ndcg": met, "applies": judged,
                    "met": met if judged else None},
        "checks": {
            **{f"{n}_passes_agree": measured[n]["passes_agree"] for n in PROVIDERS},
            **{f"{n}_update_visible": measured[n]["update_visible"] for n in PROVIDERS},
            "second_opener_reuses_all": second["documents_held"] == len(corpus.documents),
        },
    }  # fmt: skip


def _ratios(measured: dict[str, dict[str, Any]]) -> dict[str, float]:
    """postgres over fts: times (above 1: postgres is slower) and queries/s (below 1)."""
    fts, pg = measured["fts"], measured["postgres"]
    return {
        "build_s": pg["build_s"] / fts["build_s"],
        "update_s": pg["update"]["median_s"] / fts["update"]["median_s"],
        "warm_qps": pg["warm_qps"] / fts["warm_qps"],
        "cold_qps": pg["cold_qps"] / fts["cold_qps"],
    }


def run(quick: bool) -> dict[str, Any]:
    """The benchmark entry point of ``python -m bench``."""
    params = QUICK if quick else FULL
    return unless_missing(NAME, NOTES, params, quick, lambda: run_index(params, quick=quick))


def summary_lines(result: dict[str, Any]) -> list[str]:
    """Per measure: fts, postgres and the ratio."""
    if result.get("skipped"):
        return [f"skipped: {result['reason']}"]
    fts, pg = result["providers"]["fts"], result["providers"]["postgres"]
    ratios = result["ratios_postgres_over_fts"]
    corpus = result["corpus"]
    verdict = "not judged" if not result["targets"]["applies"] else (
        "met" if result["targets"]["ndcg"] else "MISSED"
    )  # fmt: skip
    second = pg["second_opener"]
    return [
        f"{corpus['source']}: {corpus['documents']} documents, {corpus['queries']} queries",
        f"{'measure':<22} {'fts':>10} {'postgres':>10} {'pg/fts':>8}",
        f"{'nDCG@10':<22} {fts['ndcg_at_10']:>10.4f} {pg['ndcg_at_10']:>10.4f}"
        f"   (target >= {TARGET_NDCG}: {verdict})",
        f"{'cold build s':<22} {fts['build_s']:>10.2f} {pg['build_s']:>10.2f}"
        f" {ratios['build_s']:>7.2f}x",
        f"{'warm queries/s':<22} {fts['warm_qps']:>10.0f} {pg['warm_qps']:>10.0f}"
        f" {ratios['warm_qps']:>7.2f}x",
        f"{'first pass queries/s':<22} {fts['cold_qps']:>10.0f} {pg['cold_qps']:>10.0f}"
        f" {ratios['cold_qps']:>7.2f}x",
        f"{'one-doc update ms':<22} {fts['update']['median_s'] * 1e3:>10.2f}"
        f" {pg['update']['median_s'] * 1e3:>10.2f} {ratios['update_s']:>7.2f}x",
        f"postgres index tables {pg['stats']['schema_bytes'] / 1e6:.1f} MB; "
        f"second opener: {second['documents_held']} documents held, ready in "
        f"{second['seconds']:.3f} s (fts on another machine rebuilds: {fts['build_s']:.2f} s)",
        f"same top {result['params']['limit']} list for {result['same_top_k_share']:.0%} of "
        "the queries",
    ]
