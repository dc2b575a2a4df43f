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

import tempfile
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from taskctx_fts import FtsProvider

from bench.common import result_header
from bench.lexical_providers import (
    QUICK,
    IndexParams,
    corpus_facts,
    corpus_for,
    measure,
    same_share,
    scifact_absent,
)
from bench.postgres import server_dsn, throwaway_databases, unless_missing
from taskctx.protocols import IndexProvider

__all__ = ["DESCRIPTION", "FULL", "NAME", "QUICK", "IndexParams", "run", "summary_lines"]

NAME = "postgres_index"
DESCRIPTION = (
    "postgres lexical provider beside fts on SciFact: nDCG@10, cold build, "
    "second opener, one-doc update, queries/s"
)
TARGET_NDCG = 0.66
PROVIDERS = ("fts", "postgres")


FULL = IndexParams()

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


def run_index(p: IndexParams, *, quick: bool) -> dict[str, Any]:
    """Both providers on one corpus; the postgres over fts ratio of each speed."""
    from taskctx_postgres.lexical import PostgresLexicalProvider

    header = result_header(NAME, quick=quick, params=asdict(p), notes=NOTES)
    corpus = corpus_for(p)
    if corpus is None:
        return scifact_absent(NAME, p, quick, NOTES)
    with server_dsn() as dsn, throwaway_databases(dsn) as databases:
        url = databases.new()
        with tempfile.TemporaryDirectory(prefix="taskctx-bench-pgidx-") as tmp:
            makers: dict[str, Callable[[], IndexProvider]] = {
                "fts": FtsProvider,
                "postgres": lambda: PostgresLexicalProvider(url),
            }
            measured = {
                name: measure(
                    makers[name],
                    name,
                    corpus,
                    p,
                    Path(tmp) / name,
                    second_opener=name == "postgres",
                )
                for name in PROVIDERS
            }
    fts, pg = (measured[name].pop("rankings") for name in PROVIDERS)
    same = same_share(fts, pg)
    judged = not quick and not p.synthetic_docs
    met = measured["postgres"]["ndcg_at_10"] >= TARGET_NDCG
    second = measured["postgres"]["second_opener"]
    return {
        **header,
        "skipped": False,
        "corpus": corpus_facts(corpus),
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
