"""Command line of ``python -m bench``: choose benchmarks, run them, write and summarize."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench import peer
from bench.common import RESULTS_DIR, peak_rss_bytes, reset_peak_rss, write_result
from bench.registry import Benchmark, by_name

__all__ = ["main", "selected"]


def _parser(names: Sequence[str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="Run taskctx benchmarks; write one JSON result per benchmark.",
    )
    parser.add_argument(
        "--quick", action="store_true", help="small sizes and few rounds (smoke runs)"
    )
    parser.add_argument(
        "--only",
        action="append",
        choices=list(names),
        metavar="NAME",
        help=(
            "run only this benchmark (repeatable; one that takes minutes, like scale, "
            f"runs only when named); one of: {', '.join(names)}"
        ),
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=RESULTS_DIR,
        help="directory for the <name>.json results (default: bench/results)",
    )
    parser.add_argument(
        "--fail-on-miss",
        action="store_true",
        help="exit with status 2 when a benchmark misses its targets",
    )
    peer.add_arguments(parser)
    return parser


def selected(benchmarks: Mapping[str, Benchmark], only: Sequence[str] | None) -> list[Benchmark]:
    """The benchmarks ``--only`` names, else every one in the default run (minutes-long
    ones, ``in_default_run`` False, run only when named)."""
    if only:
        return [benchmarks[name] for name in only]
    return [benchmark for benchmark in benchmarks.values() if benchmark.in_default_run]


def _run_measuring_peak(benchmark: Benchmark, quick: bool) -> dict[str, Any]:
    """``benchmark``'s result with the peak RSS of this process while it ran (the peak is
    reset before it where Linux allows; children a bench starts report their own)."""
    fresh = reset_peak_rss()
    result = benchmark.run(quick)
    result["process_peak_rss_bytes"] = peak_rss_bytes()
    result["process_peak_rss_scope"] = (
        "this benchmark alone (VmHWM reset before it)"
        if fresh
        else "this process since it started (VmHWM could not be reset)"
    )
    return result


def main(argv: Sequence[str] | None = None) -> int:
    """Run the chosen benchmarks; 1 on a failed check, 2 on a missed target with --fail-on-miss."""
    benchmarks = by_name()
    args = _parser(list(benchmarks)).parse_args(argv)
    if args.peer:
        return peer.run_from_args(args)
    chosen = selected(benchmarks, args.only)
    missed: list[str] = []
    broken: list[str] = []
    for benchmark in chosen:
        print(f"== {benchmark.name}: {benchmark.description}", flush=True)
        result = _run_measuring_peak(benchmark, args.quick)
        path = write_result(args.out, benchmark.name, result)
        for line in benchmark.summary(result):
            print(f"   {line}")
        print(f"   peak RSS of this process: {result['process_peak_rss_bytes'] / 2**20:,.0f} MiB")
        print(f"   -> {path}", flush=True)
        if benchmark.targets_met(result) is False:
            missed.append(benchmark.name)
        if benchmark.failed_checks(result):
            broken.append(benchmark.name)
    if missed:
        print(f"targets missed: {', '.join(missed)}")
    if broken:
        print(f"checks failed: {', '.join(broken)}")
        return 1
    return 2 if missed and args.fail_on_miss else 0
