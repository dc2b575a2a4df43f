"""The ``tantivy`` lexical provider beside ``fts`` and beside raw tantivy, on BEIR SciFact.

Per provider, on the same documents and queries in one run: one cold build, nDCG@10 over
the 300 test queries, queries/s (first and warm passes, top 10), one-document updates and
disk size. Then, on the tantivy index those steps left, warm passes of the provider and
of raw tantivy alternate: the same tantivy queries built before the timer, searched
with the library's own ``Searcher.search`` and their doc ids read from the stored
fields, which is the floor the provider adds its tokenizing, checks and result models to.

Targets (issue 20): tantivy nDCG@10 >= 0.68; provider queries/s within 1.5x of raw
tantivy's on the same index. The build and the update are reported beside fts.
``--quick`` uses fts's small synthetic corpus.
"""

from __future__ import annotations

import gc
import statistics
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import tantivy
from taskctx_fts import FtsProvider
from taskctx_fts.tokenize import tokenize
from taskctx_tantivy import TantivyProvider
from taskctx_tantivy.ranking import build_query
from taskctx_tantivy.store import DIR_NAME

from bench.common import result_header, summarize
from bench.fts import ndcg_at
from bench.lexical_providers import (
    QUICK,
    IndexParams,
    corpus_facts,
    corpus_for,
    key_for,
    measure,
    same_share,
    scifact_absent,
    timed_pass,
)
from taskctx.protocols import IndexProvider

__all__ = ["DESCRIPTION", "FULL", "NAME", "QUICK", "run", "summary_lines"]

NAME = "tantivy_index"
DESCRIPTION = (
    "tantivy lexical provider beside fts and raw tantivy on SciFact: nDCG@10, queries/s, "
    "cold build, one-doc update, size"
)
TARGET_NDCG = 0.68
TARGET_RAW_RATIO = 1.5
"""Raw tantivy's queries/s over the provider's, at most."""
PROVIDERS = ("fts", "tantivy")
FULL = IndexParams()

NOTES = (
    "Both providers run the same steps in one process, one after the other, each on a "
    "fresh partition in a temporary folder on the same disk.",
    "build: one apply() of every document (tokenizing included); tantivy: one commit.",
    "queries: search(query, None, limit) over every query; cold: the first pass after the "
    "build; warm: median of `passes` passes; gc.collect() before each pass.",
    "update: apply() of one document whose text gained a sentence, median over random "
    "documents, then one query. size: stats()['bytes_on_disk'] after the updates.",
    "raw tantivy: on the same index directory, tantivy.Index.open(); the same tokens "
    "(tokenized before the timer); each query built in the timer with "
    "Query.term_query/boolean_query, searched with Searcher.search(query, limit) "
    "(count=True, as the provider counts matches), and each hit's doc_id read from its "
    "stored document. raw_prebuilt: the same with the queries built before the timer "
    "(the engine's floor). Provider, raw and raw_prebuilt passes alternate; medians.",
)


def _raw_beside_provider(folder: Path, texts: list[str], p: IndexParams) -> dict[str, Any]:
    """Alternating warm passes of the provider, raw tantivy building each query, and raw
    tantivy searching queries built before the timer, all on one index."""
    partition = TantivyProvider().open_partition(key_for("tantivy"), folder)
    partition.indexed_versions()  # as the kernel's sync does before it searches
    index = tantivy.Index.open(str(folder / DIR_NAME))
    schema = index.schema
    tokens = [tokenize(text) for text in texts]
    prebuilt = [build_query(schema, t, None) for t in tokens]
    searcher = index.searcher()

    def ids(query: tantivy.Query) -> list[str]:
        hits = searcher.search(query, p.limit).hits
        return [str(searcher.doc(address).get_first("doc_id")) for _, address in hits]

    def raw_pass(build: bool) -> tuple[float, list[list[str]]]:
        gc.collect()
        start = time.perf_counter()
        if build:
            ranked = [ids(build_query(schema, t, None)) for t in tokens]
        else:
            ranked = [ids(query) for query in prebuilt]
        return time.perf_counter() - start, ranked

    runs: dict[str, list[float]] = {"provider": [], "raw": [], "raw_prebuilt": []}
    ranked: list[list[str]] = []
    for number in range(max(p.passes, 3) + 1):  # the first round warms all three
        provider_s = timed_pass(partition, texts, p.limit)[0]
        raw_s, ranked = raw_pass(build=True)
        prebuilt_s = raw_pass(build=False)[0]
        if number:
            runs["provider"].append(provider_s)
            runs["raw"].append(raw_s)
            runs["raw_prebuilt"].append(prebuilt_s)
    partition.close()
    measured: dict[str, Any] = {}
    for name, samples in runs.items():
        measured[name] = summarize(samples)
        measured[name]["qps"] = len(texts) / measured[name]["median_s"]
    measured["raw_rankings"] = ranked
    return measured


def run_tantivy(p: IndexParams, *, quick: bool) -> dict[str, Any]:
    """Both providers on one corpus, then the provider beside raw tantivy."""
    corpus = corpus_for(p)
    if corpus is None:
        return scifact_absent(NAME, p, quick, NOTES)
    texts, ids = list(corpus.queries.values()), list(corpus.queries)
    makers: dict[str, type[IndexProvider]] = {"fts": FtsProvider, "tantivy": TantivyProvider}
    with tempfile.TemporaryDirectory(prefix="taskctx-bench-tantivy-") as tmp:
        measured = {
            name: measure(makers[name], name, corpus, p, Path(tmp) / name) for name in PROVIDERS
        }
        beside = _raw_beside_provider(Path(tmp) / "tantivy", texts, p)
    rankings = {name: measured[name].pop("rankings") for name in PROVIDERS}
    raw_ranked = beside.pop("raw_rankings")
    beside["raw_ndcg_at_10"] = statistics.fmean(
        ndcg_at(r, corpus.qrels[q]) for q, r in zip(ids, raw_ranked, strict=True)
    )
    fts, tv = measured["fts"], measured["tantivy"]
    ratios = {
        "raw_over_provider_qps": beside["raw"]["qps"] / beside["provider"]["qps"],
        "raw_prebuilt_over_provider_qps": beside["raw_prebuilt"]["qps"] / beside["provider"]["qps"],
        "tantivy_over_fts_build_s": tv["build_s"] / fts["build_s"],
        "tantivy_over_fts_update_s": tv["update"]["median_s"] / fts["update"]["median_s"],
        "tantivy_over_fts_warm_qps": tv["warm_qps"] / fts["warm_qps"],
        "tantivy_over_fts_bytes": tv["stats"]["bytes_on_disk"] / fts["stats"]["bytes_on_disk"],
    }
    judged = not quick and not p.synthetic_docs
    ndcg_met = tv["ndcg_at_10"] >= TARGET_NDCG
    speed_met = ratios["raw_over_provider_qps"] <= TARGET_RAW_RATIO
    return {
        **result_header(NAME, quick=quick, params=asdict(p), notes=NOTES),
        "skipped": False,
        "corpus": corpus_facts(corpus),
        "providers": measured,
        "beside_raw": beside,
        "same_top_k_share_fts_tantivy": same_share(rankings["fts"], rankings["tantivy"]),
        "ratios": ratios,
        "targets": {"min_ndcg_at_10": TARGET_NDCG, "max_raw_over_provider_qps": TARGET_RAW_RATIO,
                    "ndcg": ndcg_met, "speed": speed_met, "applies": judged,
                    "met": (ndcg_met and speed_met) if judged else None},
        "checks": {
            **{f"{n}_passes_agree": measured[n]["passes_agree"] for n in PROVIDERS},
            **{f"{n}_update_visible": measured[n]["update_visible"] for n in PROVIDERS},
        },
    }  # fmt: skip


def run(quick: bool) -> dict[str, Any]:
    """The benchmark entry point of ``python -m bench``."""
    return run_tantivy(QUICK if quick else FULL, quick=quick)


def summary_lines(result: dict[str, Any]) -> list[str]:
    """Per measure: fts, tantivy and their ratio; then the provider beside raw tantivy."""
    if result.get("skipped"):
        return [f"skipped: {result['reason']}"]
    fts, tv = result["providers"]["fts"], result["providers"]["tantivy"]
    ratios, targets, corpus = result["ratios"], result["targets"], result["corpus"]
    beside = result["beside_raw"]

    def verdict(key: str) -> str:
        return "not judged" if not targets["applies"] else ("met" if targets[key] else "MISSED")

    return [
        f"{corpus['source']}: {corpus['documents']} documents, {corpus['queries']} queries",
        f"{'measure':<22} {'fts':>10} {'tantivy':>10} {'tv/fts':>8}",
        f"{'nDCG@10':<22} {fts['ndcg_at_10']:>10.4f} {tv['ndcg_at_10']:>10.4f}"
        f"   (target >= {TARGET_NDCG}: {verdict('ndcg')})",
        f"{'cold build s':<22} {fts['build_s']:>10.2f} {tv['build_s']:>10.2f}"
        f" {ratios['tantivy_over_fts_build_s']:>7.2f}x",
        f"{'warm queries/s':<22} {fts['warm_qps']:>10.0f} {tv['warm_qps']:>10.0f}"
        f" {ratios['tantivy_over_fts_warm_qps']:>7.2f}x",
        f"{'first pass queries/s':<22} {fts['cold_qps']:>10.0f} {tv['cold_qps']:>10.0f}",
        f"{'one-doc update ms':<22} {fts['update']['median_s'] * 1e3:>10.2f}"
        f" {tv['update']['median_s'] * 1e3:>10.2f} {ratios['tantivy_over_fts_update_s']:>7.2f}x",
        f"{'MB on disk':<22} {fts['stats']['bytes_on_disk'] / 1e6:>10.1f}"
        f" {tv['stats']['bytes_on_disk'] / 1e6:>10.1f} {ratios['tantivy_over_fts_bytes']:>7.2f}x",
        f"same index, alternating: provider {beside['provider']['qps']:.0f} q/s, raw tantivy "
        f"{beside['raw']['qps']:.0f} q/s: raw/provider {ratios['raw_over_provider_qps']:.2f}x "
        f"(target <= {TARGET_RAW_RATIO}: {verdict('speed')}); raw nDCG@10 "
        f"{beside['raw_ndcg_at_10']:.4f}",
        f"raw tantivy with its queries built before the timer: "
        f"{beside['raw_prebuilt']['qps']:.0f} q/s "
        f"({ratios['raw_prebuilt_over_provider_qps']:.2f}x the provider)",
        f"same top {result['params']['limit']} list as fts for "
        f"{result['same_top_k_share_fts_tantivy']:.0%} of the queries",
    ]
