"""taskctx-records: write throughput, keyset page depth and a source read over 100,000 records.

Targets (issue 5): ``put_many`` >= 20,000 records/s; page 1,000 within 1.5x of page 1
(page_size 50 over 100,000 records). The source read (``store.source(scope=...)`` attached
to a TaskContext, with and without the FTS plugin) is measured and reported, not judged.
Every number is a real, whole run: nothing sampled and extrapolated. ``--quick`` uses small
sizes and judges no target.

``python -m bench.records --profile {fts,structural} [--records N]`` runs one cold source
read under cProfile and prints the dominant functions.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import pstats
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from taskctx_records import QueryPage, RecordStore

from bench.common import result_header, summarize
from taskctx import ContextBudget, ContextPackage, PluginHost, TaskContext

__all__ = ["DESCRIPTION", "FULL", "NAME", "QUICK", "RecordsParams", "run", "summary_lines"]

NAME = "records"
DESCRIPTION = (
    "taskctx-records: put / put_many records/s, query page 1 vs page 1,000, "
    "record_store source reads (cold, warm, one put) over 100,000 records"
)
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
    source_records: int = 100_000
    source_rounds: int = 3


FULL = RecordsParams()
QUICK = RecordsParams(
    put_counts=(300,),
    put_many_counts=(1_000,),
    batch_size=500,
    query_records=2_000,
    page_size=20,
    deep_page=50,
    repeats=5,
    source_records=500,
    source_rounds=2,
)

SOURCE_PHASES = ("cold", "warm", "one_put")
SOURCE_VARIANTS: dict[str, tuple[str, ...]] = {
    "fts": ("taskctx-records", "taskctx-fts"),
    "structural": ("taskctx-records",),
}
"""Source-read variants: the PluginHost allowlist of each (the provider it should get)."""
SOURCE_SCOPE = {"task_id": "bench-source"}
SOURCE_QUERY = "why does the upload time out after the index changed?"
SOURCE_BUDGET = ContextBudget(max_chars=6000, max_blocks=12)

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
    "source_read: one store holds `source_records` small JSON records ({'i', 'status', "
    "'text' ~40 chars}, each naming an upload, so the query matches every record), written "
    "by put_many untimed, all in scope {'task_id': 'bench-source'}; the source is "
    "store.source(scope=that scope) attached to a TaskContext with a fresh state_dir; each "
    "read is reader(consumer, ContextBudget(max_chars=6000, max_blocks=12)).read(query).",
    "source_read variants: 'fts' = PluginHost(allow=['taskctx-records', 'taskctx-fts']) "
    "(lexical provider fts), 'structural' = PluginHost(allow=['taskctx-records']) (kernel "
    "StructuralProvider, no ranking). An untimed warm-up round on 200 records runs first.",
    "source_read phases per round: cold = the source's index directory (<store root>/"
    ".taskctx/index, where the FTS provider keeps its index) deleted untimed, then new "
    "TaskContext (fresh state_dir) + attach + new "
    "reader + first read (enumeration of every record, descriptor building, index sync, "
    "assembly); warm = a fresh reader on the same context, nothing changed; one_put = one "
    "store.put into the scope (untimed), then a fresh reader's read (timed). Every round "
    "adds that one record, so round k reads source_records + k - 1 records cold.",
    "source_read ratios: median(phase) / median(cold) per variant, and fts cold over "
    "structural cold. Reported, not judged: issue 5 sets no target for the source read.",
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
        source_read, source_checks = run_source_read(params, base)
        checks.update(source_checks)
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
        **result_header(NAME, quick=quick, params=asdict(params), notes=NOTES),
        "writes": writes,
        "timings": timings,
        "ratios": ratios,
        "source_read": source_read,
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


# -- source read --------------------------------------------------------------------------


def _source_items(start: int, count: int) -> list[dict[str, Any]]:
    """Small JSON records in the one scope; each names an upload, so a query for "upload"
    matches every record (the full candidate set for both providers)."""
    items = _items(start, count)
    for item in items:
        i = item["content"]["i"]
        item["content"]["text"] = f"upload {i} {item['content']['status']}: " + (
            "timed out after the index changed" if i % 3 == 0 else "stored in 12 ms"
        )
        item["scope"] = dict(SOURCE_SCOPE)
    return items


def _fill(store: RecordStore, count: int, batch: int) -> None:
    for start in range(0, count, batch):
        store.put_many(_source_items(start, min(batch, count - start)))


def _package_facts(package: ContextPackage) -> dict[str, Any]:
    coverage = package.source_coverage.get("records")
    return {
        "blocks": len(package.blocks),
        "considered": None if coverage is None else coverage.considered,
        "revision": package.snapshot.sources.get("records"),
    }


def _source_round(
    store: RecordStore, host: PluginHost, state_dir: Path, round_no: int
) -> dict[str, Any]:
    """One cold, warm and one-put read of the scope; times, package facts, provider."""
    times: dict[str, float] = {}
    packages: dict[str, dict[str, Any]] = {}
    context: TaskContext | None = None

    def cold() -> ContextPackage:
        nonlocal context
        context = TaskContext("bench-source", host=host, state_dir=state_dir)
        context.attach(store.source(scope=SOURCE_SCOPE), binding_id="records")
        return context.reader("bench-agent", budget=SOURCE_BUDGET).read(SOURCE_QUERY)

    def fresh_reader() -> ContextPackage:
        assert context is not None
        return context.reader("bench-agent", budget=SOURCE_BUDGET).read(SOURCE_QUERY)

    # the FTS provider keeps its index beside the source (RecordSource.index_directory,
    # <store root>/.taskctx/index): drop it, untimed, so every round's cold read is cold
    shutil.rmtree(store.source(scope=SOURCE_SCOPE).index_directory.path, ignore_errors=True)
    for phase, read in (("cold", cold), ("warm", fresh_reader), ("one_put", fresh_reader)):
        if phase == "one_put":
            content = {"i": -round_no, "status": "failed", "text": "upload timed out again"}
            store.put(content, collection="obs", kind="review_result", scope=SOURCE_SCOPE)
        gc.collect()
        started = time.perf_counter()
        package = read()
        times[phase] = time.perf_counter() - started
        packages[phase] = _package_facts(package)
        assert context is not None
        packages[phase]["indexed"] = sum(
            state.last_sync.added + state.last_sync.updated
            for state in context.index.states.values()
            if state.last_sync is not None
        )
    assert context is not None
    provider = context.index_provider.name
    context.index.close()
    return {"times": times, "packages": packages, "provider": provider}


def run_source_read(params: RecordsParams, base: Path) -> tuple[dict[str, Any], dict[str, bool]]:
    """Every variant of :data:`SOURCE_VARIANTS` over one store of ``source_records``."""
    for name, allow in SOURCE_VARIANTS.items():  # warm-up: imports, plugin loading
        warm = RecordStore(base / f"source-warmup-{name}")
        _fill(warm, 200, params.batch_size)
        _source_round(warm, PluginHost(allow=list(allow)), base / f"warmup-{name}", 0)
        warm.close()
    store = RecordStore(base / "source")
    _fill(store, params.source_records, params.batch_size)
    result: dict[str, Any] = {}
    checks: dict[str, bool] = {}
    alive = params.source_records  # every round's one put adds one record to the scope
    for name, allow in SOURCE_VARIANTS.items():
        host = PluginHost(allow=list(allow))
        rounds = []
        ok = {
            "provider": True,
            "blocks": True,
            "cold_considers_all": True,
            "cold_indexes_all": True,
            "one_put_seen": True,
        }
        for round_no in range(1, params.source_rounds + 1):
            state_dir = base / f"ctx-{name}-{round_no}"
            r = _source_round(store, host, state_dir, round_no)
            rounds.append(r)
            facts = r["packages"]
            ok["provider"] &= r["provider"] == name
            ok["blocks"] &= all(f["blocks"] > 0 for f in facts.values())
            ok["cold_considers_all"] &= facts["cold"]["considered"] == alive
            # a lexical provider's index was dropped before the round: it indexes every record
            ok["cold_indexes_all"] &= name != "fts" or facts["cold"]["indexed"] == alive
            alive += 1
            ok["one_put_seen"] &= (
                facts["warm"]["revision"] == facts["cold"]["revision"]
                and facts["one_put"]["revision"] != facts["cold"]["revision"]
                and facts["one_put"]["considered"] == alive
            )
        checks.update({f"source_{name}_{key}": value for key, value in ok.items()})
        timings = {p: summarize([r["times"][p] for r in rounds]) for p in SOURCE_PHASES}
        cold = timings["cold"]["median_s"]
        result[name] = {
            "host_allow": list(allow),
            "index_provider": rounds[-1]["provider"],
            "timings": timings,
            "ratios": {f"{p}_over_cold": timings[p]["median_s"] / cold for p in SOURCE_PHASES[1:]},
            "packages_by_round": [r["packages"] for r in rounds],
        }
    store.close()
    if {"fts", "structural"} <= result.keys():
        result["fts_cold_over_structural_cold"] = (
            result["fts"]["timings"]["cold"]["median_s"]
            / result["structural"]["timings"]["cold"]["median_s"]
        )
    return result, checks


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
    source = result.get("source_read", {})
    for name in SOURCE_VARIANTS:
        variant = source.get(name)
        if variant is None:
            continue
        parts = []
        for phase in SOURCE_PHASES:
            t = variant["timings"][phase]
            part = f"{phase} {t['median_s'] * 1e3:.1f} ms"
            ratio = variant["ratios"].get(f"{phase}_over_cold")
            parts.append(part if ratio is None else f"{part} ({ratio:.2%} of cold)")
        records = result["params"]["source_records"]
        lines.append(f"source_read {name:<10} {records} records: " + ", ".join(parts))
    if "fts_cold_over_structural_cold" in source:
        lines.append(
            f"source_read fts cold / structural cold {source['fts_cold_over_structural_cold']:.2f}x"
        )
    targets = result["targets"]
    verdict = {True: "met", False: "MISSED", None: "not judged (quick)"}[targets["met"]]
    lines.append(
        f"targets: put_many >= {targets['put_many_min_rps']:.0f}/s "
        f"({targets['put_many_rps_measured']:.0f}), page ratio <= {targets['max_page_ratio']} "
        f"({targets['page_ratio_measured']:.2f}): {verdict}"
    )
    return lines


# -- profile ---------------------------------------------------------------------------------


def profile_cold_read(variant: str, records: int, top: int = 25) -> str:
    """One cold source read of ``variant`` over ``records`` records under cProfile; the
    ``top`` functions by cumulative and by own time, as text."""
    allow = list(SOURCE_VARIANTS[variant])
    with tempfile.TemporaryDirectory(prefix="taskctx-bench-records-profile-") as tmp:
        base = Path(tmp)
        store = RecordStore(base / "source")
        _fill(store, records, 10_000)
        host = PluginHost(allow=allow)
        context = TaskContext("bench-source", host=host, state_dir=base / "ctx")
        context.attach(store.source(scope=SOURCE_SCOPE), binding_id="records")
        reader = context.reader("bench-agent", budget=SOURCE_BUDGET)
        profiler = cProfile.Profile()
        started = time.perf_counter()
        profiler.runcall(reader.read, SOURCE_QUERY)
        elapsed = time.perf_counter() - started
        context.index.close()
        store.close()
    out = io.StringIO()
    out.write(f"cold read, {variant} ({allow}), {records} records: {elapsed:.2f} s (profiled)\n")
    stats = pstats.Stats(profiler, stream=out).strip_dirs()
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)
    return out.getvalue()


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m bench.records --profile fts|structural [--records N]``."""
    parser = argparse.ArgumentParser(prog="python -m bench.records")
    parser.add_argument("--profile", choices=list(SOURCE_VARIANTS), required=True)
    parser.add_argument("--records", type=int, default=FULL.source_records)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args(argv)
    print(profile_cold_read(args.profile, args.records, args.top))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
