"""taskctx-fts on BEIR SciFact: quality, queries/s, build, size and one-document changes.

Targets (issue 4): nDCG@10 >= 0.68 over the 300 test queries, >= 1,000 queries/s single
thread (top 10), one-document update <= 10 ms. The corpus is read from
``../shared/eval/beir/scifact`` beside the repository (CC BY-NC: never copied into it);
without it the result says ``skipped``. ``--quick`` runs a small synthetic corpus.
"""

from __future__ import annotations

import gc
import json
import math
import random
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NamedTuple

from taskctx_fts import FtsPartition, FtsProvider
from taskctx_fts.plan import match_expression
from taskctx_fts.store import DB_NAME
from taskctx_fts.tokenize import clear_caches, tokenize

from bench.common import result_header, skipped_result, summarize
from bench.evaldata import eval_root
from taskctx.protocols import IndexDocument, PartitionKey

__all__ = [
    "DESCRIPTION",
    "FULL",
    "NAME",
    "QUICK",
    "SCIFACT_DIR",
    "Corpus",
    "FtsParams",
    "load_scifact",
    "ndcg_at",
    "run",
    "run_fts",
    "summary_lines",
    "synthetic_corpus",
]

NAME = "fts"
DESCRIPTION = "taskctx-fts on BEIR SciFact: nDCG@10, queries/s, build, size, one-doc update"
SCIFACT_DIR = eval_root() / "beir" / "scifact"
"""SciFact in the eval data (:func:`bench.evaldata.eval_root`; never part of the repository)."""

TARGET_NDCG = 0.68
TARGET_QPS = 1000.0
TARGET_UPDATE_S = 0.010
WEIGHTS = (2.0, 1.0)
KEY = PartitionKey(binding_id="bench", source_identity="bench:scifact", provider="fts")


@dataclass(frozen=True)
class FtsParams:
    """Passes, sample sizes and the synthetic corpus size (0: SciFact)."""

    limit: int = 10
    passes: int = 5
    baseline_passes: int = 3
    updates: int = 50
    deletes: int = 50
    seed: int = 20_240_601
    synthetic_docs: int = 0
    synthetic_queries: int = 0


FULL = FtsParams()
QUICK = FtsParams(
    passes=2, baseline_passes=1, updates=5, deletes=5, synthetic_docs=300, synthetic_queries=40
)

NOTES = (
    "Measured on the provider directly (FtsProvider().open_partition(key, tmpdir)), "
    "single thread, time.perf_counter around whole passes; gc.collect() before each pass.",
    "build: one apply() of every document (tokenizing included) into a fresh fts.db, "
    "then FTS5 optimize and a WAL checkpoint (part of apply for >= 1,000 documents).",
    "size: fts.db plus its WAL after the build.",
    "queries: the 300 test queries (qrels/test.tsv), search(query, None, 10); the title "
    "field is the title plus the document id as path, the body the whole abstract.",
    "cold: the first pass on a partition reopened from disk (empty term caches, empty "
    "tokenizer caches; the OS page cache is warm). warm: median of `passes` passes after it.",
    "baseline plain_or: the same fts.db and tokens, one FTS5 MATCH of every query token "
    "OR-ed, ORDER BY bm25(fts, 2.0, 1.0) LIMIT 10 (no pruning), joined to docs for ids.",
    "update: apply() of one document whose text gained a sentence (new content version), "
    "median over random documents; delete: apply([], [doc_id]) of other random documents.",
    "considered_exact compares SearchResult.considered with count(*) of the full OR match.",
)


class Corpus(NamedTuple):
    """Documents, queries by id and relevance judgements (query -> doc -> grade)."""

    source: str
    documents: list[IndexDocument]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def load_scifact(folder: Path) -> Corpus:
    """The BEIR SciFact corpus, its queries and the test qrels."""
    documents = []
    with (folder / "corpus.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            documents.append(
                IndexDocument(
                    doc_id=row["_id"],
                    path=row["_id"],
                    title=row.get("title") or None,
                    text=row.get("text") or "",
                    content_version="1",
                )
            )
    qrels: dict[str, dict[str, int]] = {}
    with (folder / "qrels" / "test.tsv").open(encoding="utf-8") as lines:
        next(lines)
        for line in lines:
            query_id, doc_id, grade = line.split()
            qrels.setdefault(query_id, {})[doc_id] = int(grade)
    queries: dict[str, str] = {}
    with (folder / "queries.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            if row["_id"] in qrels:
                queries[row["_id"]] = row["text"]
    return Corpus(str(folder), documents, queries, qrels)


def synthetic_corpus(documents: int, queries: int, seed: int) -> Corpus:
    """Zipf-distributed pseudo-words; each query is rare words of one document (its qrel)."""
    rng = random.Random(seed)
    syllables = ["ka", "lo", "mi", "ren", "tas", "vo", "pel", "dur", "sin", "qua", "zet", "bor"]
    vocabulary = sorted({"".join(rng.choices(syllables, k=rng.randint(2, 4))) for _ in range(3000)})
    weights = [1.0 / (rank + 1) for rank in range(len(vocabulary))]
    docs = []
    for number in range(documents):
        words = rng.choices(vocabulary, weights=weights, k=rng.randint(40, 120))
        title = " ".join(rng.choices(vocabulary, weights=weights, k=4))
        docs.append(
            IndexDocument(
                doc_id=f"d{number:05d}",
                path=f"synthetic/d{number:05d}.txt",
                title=title,
                text=" ".join(words),
                content_version="1",
            )
        )
    rank_of = {word: rank for rank, word in enumerate(vocabulary)}
    picked: dict[str, str] = {}
    qrels: dict[str, dict[str, int]] = {}
    for number, doc in enumerate(rng.sample(docs, min(queries, len(docs)))):
        words = sorted(set((doc.text or "").split()), key=lambda w: -rank_of[w])[:3]
        words.append(rng.choice(vocabulary[:20]))
        picked[f"q{number}"] = " ".join(words)
        qrels[f"q{number}"] = {doc.doc_id: 1}
    return Corpus("synthetic", docs, picked, qrels)


def ndcg_at(ranked: Sequence[str], relevant: Mapping[str, int], k: int = 10) -> float:
    """nDCG@k with graded relevance (BEIR's definition: gain = grade, log2 discount)."""
    dcg = sum(relevant.get(doc, 0) / math.log2(i + 2) for i, doc in enumerate(ranked[:k]))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    best = sum(grade / math.log2(i + 2) for i, grade in enumerate(ideal))
    return dcg / best if best else 0.0


def _timed_pass(
    search: Callable[[str], list[str]], queries: Iterable[str]
) -> tuple[float, list[list[str]]]:
    """Seconds for one pass of ``search`` over ``queries``, and the rankings."""
    texts = list(queries)
    gc.collect()
    start = time.perf_counter()
    results = [search(text) for text in texts]
    return time.perf_counter() - start, results


def _quality(corpus: Corpus, rankings: Sequence[Sequence[str]]) -> float:
    ids = list(corpus.queries)
    return statistics.fmean(
        ndcg_at(ranking, corpus.qrels[qid]) for qid, ranking in zip(ids, rankings, strict=True)
    )


class _PlainOr:
    """Baseline: every query token OR-ed in one FTS5 MATCH, bm25 over all of them."""

    SQL = (
        "SELECT d.doc_id FROM (SELECT rowid, bm25(fts, ?2, ?3) AS s FROM fts"
        " WHERE fts MATCH ?1 ORDER BY s LIMIT ?4) AS f JOIN docs AS d ON d.rowid = f.rowid"
        " ORDER BY f.s, d.doc_id"
    )

    def __init__(self, path: Path, limit: int) -> None:
        self.conn = sqlite3.connect(path)
        self.limit = limit

    def search(self, text: str) -> list[str]:
        tokens = list(dict.fromkeys(tokenize(text)))
        if not tokens:
            return []
        rows = self.conn.execute(self.SQL, (match_expression(tokens), *WEIGHTS, self.limit))
        return [row[0] for row in rows]

    def count(self, text: str) -> int | None:
        tokens = list(dict.fromkeys(tokenize(text)))
        if not tokens:
            return None
        sql = "SELECT count(*) FROM fts WHERE fts MATCH ?"
        return int(self.conn.execute(sql, (match_expression(tokens),)).fetchone()[0])


def _searcher(partition: FtsPartition, limit: int | None) -> Callable[[str], list[str]]:
    def search(text: str) -> list[str]:
        return [hit.doc_id for hit in partition.search(text, None, limit).hits]

    return search


def _changed(doc: IndexDocument, marker: str) -> IndexDocument:
    text = f"{doc.text or ''} Revised in the benchmark: {marker}."
    return doc.model_copy(update={"text": text, "content_version": f"v-{marker}"})


def _skipped(folder: Path, quick: bool, reason: str) -> dict[str, Any]:
    params = {"corpus_dir": str(folder)}
    return skipped_result(NAME, quick=quick, params=params, notes=NOTES, reason=reason)


def _measure(corpus: Corpus, params: FtsParams, root: Path) -> dict[str, Any]:
    provider = FtsProvider(title_weight=WEIGHTS[0], body_weight=WEIGHTS[1])
    texts = list(corpus.queries.values())
    partition = provider.open_partition(KEY, root)
    gc.collect()
    start = time.perf_counter()
    partition.apply(corpus.documents, [])
    build_s = time.perf_counter() - start
    stats = dict(partition.stats())
    partition.close()

    start = time.perf_counter()
    partition = FtsProvider(title_weight=WEIGHTS[0], body_weight=WEIGHTS[1]).open_partition(
        KEY, root
    )
    versions = partition.indexed_versions()
    open_s = time.perf_counter() - start
    search = _searcher(partition, params.limit)
    clear_caches()
    cold_s, cold = _timed_pass(search, texts)
    warm = [_timed_pass(search, texts) for _ in range(params.passes)]
    rankings = warm[-1][1]
    ndcg = _quality(corpus, rankings)

    baseline = _PlainOr(root / DB_NAME, params.limit)
    _timed_pass(baseline.search, texts)  # warm-up
    base = [_timed_pass(baseline.search, texts) for _ in range(params.baseline_passes)]
    base_ndcg = _quality(corpus, base[-1][1])
    overlap = statistics.fmean(
        len(set(ours) & set(theirs)) / max(1, len(theirs))
        for ours, theirs in zip(rankings, base[-1][1], strict=True)
    )
    considered_exact = all(
        partition.search(text, None, params.limit).considered == baseline.count(text)
        for text in texts
    )
    unlimited_s, unlimited = _timed_pass(_searcher(partition, None), texts)

    rng = random.Random(params.seed)
    sample = rng.sample(
        corpus.documents, min(len(corpus.documents), params.updates + params.deletes)
    )
    updated, deleted = sample[: params.updates], sample[params.updates :]
    update_samples: list[float] = []
    after_update: list[float] = []
    visible = True
    for number, doc in enumerate(updated):
        marker = f"zqxupdate{number}"
        changed = _changed(doc, marker)
        start = time.perf_counter()
        partition.apply([changed], [])
        update_samples.append(time.perf_counter() - start)
        start = time.perf_counter()
        found = partition.search(texts[number % len(texts)], None, params.limit)
        after_update.append(time.perf_counter() - start)
        del found
        hits = partition.search(marker, None, params.limit).hits
        visible = visible and [hit.doc_id for hit in hits] == [doc.doc_id]
    delete_samples: list[float] = []
    for doc in deleted:
        start = time.perf_counter()
        partition.apply([], [doc.doc_id])
        delete_samples.append(time.perf_counter() - start)
    gone = {doc.doc_id for doc in deleted}
    versions_after = partition.indexed_versions()
    after = [partition.search(text, None, params.limit) for text in texts]
    fresh = FtsProvider(title_weight=WEIGHTS[0], body_weight=WEIGHTS[1]).open_partition(KEY, root)
    again = [fresh.search(text, None, params.limit) for text in texts]
    fresh.close()
    final_stats = dict(partition.stats())
    partition.close()
    baseline.conn.close()

    cold_qps = len(texts) / cold_s
    warm_times = summarize([seconds for seconds, _ in warm])
    warm_qps = len(texts) / warm_times["median_s"]
    base_times = summarize([seconds for seconds, _ in base])
    base_qps = len(texts) / base_times["median_s"]
    update_times = summarize(update_samples)
    delete_times = summarize(delete_samples) if delete_samples else None
    checks = {
        "reopened_sees_every_version": len(versions) == len(corpus.documents),
        "passes_agree": all(result == rankings for _, result in warm) and cold == rankings,
        "considered_exact": considered_exact,
        "update_visible": visible,
        "deletes_gone": not (gone & set(versions_after)),
        "incremental_matches_fresh": [(h.hits, h.considered) for h in after]
        == [(h.hits, h.considered) for h in again],
        "unlimited_ranks_every_match": all(
            len(r) >= len(t) for r, t in zip(unlimited, rankings, strict=True)
        ),
    }
    return {
        "corpus": {
            "source": corpus.source,
            "documents": len(corpus.documents),
            "queries": len(texts),
            "judged_pairs": sum(len(r) for r in corpus.qrels.values()),
        },
        "build": {
            "seconds": build_s,
            "documents_per_s": len(corpus.documents) / build_s,
            "bytes_on_disk": stats["bytes_on_disk"],
            "terms": stats["terms"],
            "tokens": stats["tokens"],
        },
        "open": {"seconds_with_indexed_versions": open_s},
        "quality": {"ndcg_at_10": ndcg, "plain_or_ndcg_at_10": base_ndcg, "overlap_at_10": overlap},
        "throughput": {
            "cold_qps": cold_qps,
            "warm_qps": warm_qps,
            "warm_passes": warm_times,
            "unlimited_qps": len(texts) / unlimited_s,
            "cached_postings_after": final_stats["cached_postings"],
        },
        "update": update_times,
        "query_after_update": summarize(after_update),
        "delete": delete_times,
        "baselines": {
            "plain_or": {
                "ndcg_at_10": base_ndcg,
                "qps": base_qps,
                "passes": base_times,
                "warm_qps_over_plain_or": warm_qps / base_qps,
            }
        },
        "checks": checks,
        "verdicts": {
            "ndcg": ndcg >= TARGET_NDCG,
            "qps": warm_qps >= TARGET_QPS,
            "update": update_times["median_s"] <= TARGET_UPDATE_S,
        },
    }


def run_fts(
    params: FtsParams, *, corpus_dir: Path | None = None, quick: bool = False
) -> dict[str, Any]:
    """Build, query and change the index; SciFact unless ``params`` asks for synthetic data."""
    folder = SCIFACT_DIR if corpus_dir is None else Path(corpus_dir)
    if params.synthetic_docs:
        corpus = synthetic_corpus(params.synthetic_docs, params.synthetic_queries, params.seed)
    elif not (folder / "corpus.jsonl").is_file():
        return _skipped(folder, quick, f"BEIR SciFact folder {str(folder)!r} is absent")
    else:
        corpus = load_scifact(folder)
    with tempfile.TemporaryDirectory(prefix="taskctx-bench-fts-") as temp:
        measured = _measure(corpus, params, Path(temp))
    verdicts = measured.pop("verdicts")
    judged = not quick and not params.synthetic_docs
    return {
        **result_header(
            NAME,
            quick=quick,
            params={**asdict(params), "corpus_dir": str(folder), "weights": list(WEIGHTS)},
            notes=NOTES,
        ),
        "skipped": False,
        **measured,
        "targets": {
            "min_ndcg_at_10": TARGET_NDCG,
            "min_qps": TARGET_QPS,
            "max_update_s": TARGET_UPDATE_S,
            **verdicts,
            "applies": judged,
            "met": all(verdicts.values()) if judged else None,
        },
    }


def run(quick: bool) -> dict[str, Any]:
    """The registry entry point: SciFact, or a small synthetic corpus for smoke runs."""
    return run_fts(QUICK if quick else FULL, quick=quick)


def summary_lines(result: dict[str, Any]) -> list[str]:
    """A few lines for humans: quality, speed, build, changes, the baseline."""
    if result.get("skipped"):
        return [f"skipped: {result['reason']}"]
    corpus, build, quality = result["corpus"], result["build"], result["quality"]
    speed, base = result["throughput"], result["baselines"]["plain_or"]
    targets = result["targets"]

    def verdict(name: str) -> str:
        if not targets["applies"]:
            return "not judged"
        return "met" if targets[name] else "MISSED"

    lines = [
        f"{corpus['source']}: {corpus['documents']} documents, {corpus['queries']} queries",
        f"nDCG@10 {quality['ndcg_at_10']:.4f} (target >= {TARGET_NDCG}: {verdict('ndcg')}); "
        f"plain OR {quality['plain_or_ndcg_at_10']:.4f}, overlap@10 {quality['overlap_at_10']:.3f}",
        f"queries/s warm {speed['warm_qps']:.0f} (target >= {TARGET_QPS:.0f}: {verdict('qps')}), "
        f"cold {speed['cold_qps']:.0f}, all matches ranked {speed['unlimited_qps']:.0f}; "
        f"plain OR {base['qps']:.0f} (x{base['warm_qps_over_plain_or']:.1f})",
        f"build {build['seconds']:.2f} s, {build['bytes_on_disk'] / 1e6:.1f} MB on disk, "
        f"{build['terms']} terms",
        f"update one doc {result['update']['median_s'] * 1e3:.2f} ms median "
        f"(target <= {TARGET_UPDATE_S * 1e3:.0f} ms: {verdict('update')}), next query "
        f"{result['query_after_update']['median_s'] * 1e3:.2f} ms",
    ]
    if result["delete"]:
        lines.append(f"delete one doc {result['delete']['median_s'] * 1e3:.2f} ms median")
    failed = [name for name, ok in result["checks"].items() if not ok]
    if failed:
        lines.append(f"CHECKS FAILED: {', '.join(failed)}")
    return lines
