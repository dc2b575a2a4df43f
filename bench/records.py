"""taskctx-records: write throughput (``put``, ``put_many``) and keyset page depth.

Targets (issue 5): ``put_many`` >= 20,000 records/s; page 1,000 within 1.5x of page 1
(page_size 50 over 100,000 records). Every number is a real, whole run: nothing sampled
and extrapolated. ``--quick`` uses small sizes and judges no target.
"""

from __future__ import annotations

import gc
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from taskctx_records import QueryPage, RecordStore

from bench.common import git_facts, machine_facts, now_iso, summarize

__all__ = ["DESCRIPTION", "FULL", "NAME", "QUICK", "RecordsParams", "run", "summary_lines"]

NAME = "records"
DESCRIPTION = "taskctx-records: put / put_many records/s, query page 1 vs page 1,000"
TARGET_PUT_MANY_RPS = 20_000.0
TARGET_PAGE_RATIO = 1.5


@dataclass(frozen=True)
class RecordsParams:
    """Sizes: record counts for put and put_many, the query corpus, page depth and repeats."""

    put_counts: tuple[int, ...] = (10_000, 20_000)
    put_many_counts: tuple[int, ...] = (10_000, 100_000)
    batch_size: int = 10_000
    query_records: int = 100_000
    page_size: int = 50
    deep_page: int = 1_000
    repeats: int = 50


FULL = RecordsParams()
QUICK = RecordsParams(
    put_counts=(300,),
    put_many_counts=(1_000,),
    batch_size=500,
    query_records=2_000,
    page_size=20,
    deep_page=50,
    repeats=5,
)

NOTES = (
    "Each count is written into a fresh store in a temporary directory; time.perf_counter "
    "around the whole run, gc.collect() before it.",
    "put: one call (one BEGIN IMMEDIATE transaction, WAL, synchronous=NORMAL) per record; "
    "issue 5 asks 100,000 puts, capped here at 20,000 singles (the largest put count).",
    "put_many: calls of `batch_size` items, one transaction each, until the count is written.",
    "records: JSON {'i', 'status', 'text' (~80 chars)} in collection 'obs', scope "
    "{'task_id': 'review-<i % 10>'}.",
    "page_1: store.query(collection='obs', page_size) - includes the one indexed COUNT that "
    "fixes coverage.considered; later pages carry that count in the cursor.",
    "page_2 / page_<deep>: store.query_continue(cursor) with the cursor of the previous page; "
    "the cursor for the deep page is reached by chaining continuations untimed, then that one "
    "continuation is timed `repeats` times (cursors are stateless, so repeats are identical).",
    "judged ratio: page_<deep> over page_1; page_<deep> over page_2 shows the like-for-like "
    "fetch cost (both continuations, no COUNT).",
)


def _items(start: int, count: int) -> list[dict[str, Any]]:
    return [
        {
            "content": {
                "i": i,
                "status": "failed" if i % 7 == 0 else "ok",
                "text": f"obs {i} " * 10,
            },
            "collection": "obs",
            "kind": "review_result",
            "scope": {"task_id": f"review-{i % 10}"},
        }
        for i in range(start, start + count)
    ]


def _timed(action: Callable[[], Any]) -> float:
    gc.collect()
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def _put_run(root: Path, count: int) -> float:
    store = RecordStore(root)
    items = _items(0, count)

    def write() -> None:
        for item in items:
            store.put(item["content"], collection="obs", kind=item["kind"], scope=item["scope"])

    elapsed = _timed(write)
    assert store.revision == count
    store.close()
    return elapsed


def _put_many_run(root: Path, count: int, batch: int) -> float:
    store = RecordStore(root)
    batches = [_items(start, min(batch, count - start)) for start in range(0, count, batch)]

    def write() -> None:
        for chunk in batches:
            store.put_many(chunk)

    elapsed = _timed(write)
    assert store.revision == count
    store.close()
    return elapsed


def _repeat(action: Callable[[], QueryPage], repeats: int) -> tuple[list[float], QueryPage]:
    samples: list[float] = []
    page = action()
    for _ in range(repeats):
        started = time.perf_counter()
        page = action()
        samples.append(time.perf_counter() - started)
    return samples, page


def run_records(params: RecordsParams, *, quick: bool) -> dict[str, Any]:
    """Measure and return the JSON-safe result."""
    writes: dict[str, Any] = {}
    checks: dict[str, bool] = {}
    with tempfile.TemporaryDirectory(prefix="taskctx-bench-records-") as tmp:
        base = Path(tmp)
        for count in params.put_counts:
            seconds = _put_run(base / f"put-{count}", count)
            writes[f"put_{count}"] = {"records": count, "seconds": seconds, "rps": count / seconds}
        for count in params.put_many_counts:
            seconds = _put_many_run(base / f"many-{count}", count, params.batch_size)
            writes[f"put_many_{count}"] = {
                "records": count,
                "seconds": seconds,
                "rps": count / seconds,
                "batch_size": params.batch_size,
            }
        store = RecordStore(base / "query")
        for start in range(0, params.query_records, params.batch_size):
            store.put_many(_items(start, min(params.batch_size, params.query_records - start)))
        first_samples, first = _repeat(
            lambda: store.query(collection="obs", page_size=params.page_size), params.repeats
        )
        assert first.cursor is not None
        second_samples, second = _repeat(
            lambda: store.query_continue(first.cursor or ""), params.repeats
        )
        page = first
        for _ in range(params.deep_page - 2):
            assert page.cursor is not None
            page = store.query_continue(page.cursor)
        before_deep = page
        deep_samples, deep = _repeat(
            lambda: store.query_continue(before_deep.cursor or ""), params.repeats
        )
        checks["deep_page_number"] = deep.page == params.deep_page
        checks["deep_page_full"] = len(deep.records) == params.page_size
        expected_first = (params.deep_page - 1) * params.page_size
        checks["deep_page_position"] = deep.records[0].content["i"] == expected_first
        checks["considered_counts_all"] = deep.coverage.considered == params.query_records
        checks["second_follows_first"] = second.records[0].id > first.records[-1].id
        store.close()
    timings = {
        "page_1": summarize(first_samples),
        "page_2": summarize(second_samples),
        f"page_{params.deep_page}": summarize(deep_samples),
    }
    deep_median = statistics.median(deep_samples)
    ratios = {
        f"page_{params.deep_page}_over_page_1": deep_median / statistics.median(first_samples),
        f"page_{params.deep_page}_over_page_2": deep_median / statistics.median(second_samples),
    }
    put_many_rps = min(w["rps"] for k, w in writes.items() if k.startswith("put_many_"))
    judged_ratio = ratios[f"page_{params.deep_page}_over_page_1"]
    met = None
    if not quick:
        met = put_many_rps >= TARGET_PUT_MANY_RPS and judged_ratio <= TARGET_PAGE_RATIO
    return {
        "benchmark": NAME,
        "schema_version": 1,
        "created_utc": now_iso(),
        "quick": quick,
        "params": asdict(params),
        "machine": machine_facts(),
        "git": git_facts(),
        "notes": list(NOTES),
        "writes": writes,
        "timings": timings,
        "ratios": ratios,
        "targets": {
            "put_many_min_rps": TARGET_PUT_MANY_RPS,
            "max_page_ratio": TARGET_PAGE_RATIO,
            "put_many_rps_measured": put_many_rps,
            "page_ratio_measured": judged_ratio,
            "applies": not quick,
            "met": met,
        },
        "checks": checks,
    }


def run(quick: bool) -> dict[str, Any]:
    """The benchmark entry point of ``python -m bench``."""
    return run_records(QUICK if quick else FULL, quick=quick)


def summary_lines(result: dict[str, Any]) -> list[str]:
    """A few lines for humans: records/s per run, page timings and the ratios."""
    lines = []
    for name, w in result["writes"].items():
        lines.append(
            f"{name:<18} {w['records']:>7} records {w['seconds']:8.2f} s {w['rps']:10.0f}/s"
        )
    for name, t in result["timings"].items():
        low, high = t["min_s"] * 1e3, t["max_s"] * 1e3
        lines.append(f"{name:<18} {t['median_s'] * 1e3:8.3f} ms ({low:.3f}-{high:.3f})")
    for name, ratio in result["ratios"].items():
        lines.append(f"{name:<26} {ratio:6.2f}x")
    targets = result["targets"]
    verdict = {True: "met", False: "MISSED", None: "not judged (quick)"}[targets["met"]]
    lines.append(
        f"targets: put_many >= {targets['put_many_min_rps']:.0f}/s "
        f"({targets['put_many_rps_measured']:.0f}), page ratio <= {targets['max_page_ratio']} "
        f"({targets['page_ratio_measured']:.2f}): {verdict}"
    )
    return lines
