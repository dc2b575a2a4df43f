"""The reader on an in-memory source: cold read, warm read and read after one change.

Target (DESIGN.md, "Performance principles"): a warm read and a one-change read each
cost under 5 % of the cold read.
"""

from __future__ import annotations

import gc
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from bench.common import (
    ratio_verdict,
    result_header,
    summarize,
    timing_line,
)
from taskctx import ContextBudget, ContextPackage, PluginHost, TaskContext
from taskctx.testing import MemorySource

__all__ = [
    "DESCRIPTION",
    "FULL",
    "NAME",
    "PHASES",
    "QUICK",
    "TARGET_RATIO",
    "ReaderParams",
    "changed_item",
    "make_items",
    "run",
    "run_reader",
    "summary_lines",
]

NAME = "reader"
DESCRIPTION = "cold, warm and one-change reads over a MemorySource"
TARGET_RATIO = 0.05
PHASES = ("cold", "warm", "one_change")
BINDING = "mem"
IDENTITY = "bench:memory"
TASK_ID = "bench-reader"
CONSUMER = "bench-agent"

_WORDS = (
    "index",
    "revision",
    "cache",
    "digest",
    "snapshot",
    "reader",
    "budget",
    "source",
    "descriptor",
    "query",
    "partition",
    "journal",
    "change",
    "enumeration",
    "section",
    "block",
    "coverage",
    "omission",
    "cursor",
    "plugin",
    "provider",
    "task",
    "context",
    "agent",
    "record",
    "skill",
    "memory",
    "workspace",
    "policy",
)


@dataclass(frozen=True)
class ReaderParams:
    """Sizes and read settings of one reader benchmark run."""

    descriptors: int = 10_000
    rounds: int = 7
    max_chars: int = 6000
    max_blocks: int = 12
    query: str = "how are index revisions and cached digests invalidated after a change?"
    seed: int = 20_240_601
    warmup_descriptors: int = 50


FULL = ReaderParams()
QUICK = ReaderParams(descriptors=300, rounds=2)

NOTES = (
    "Every phase is timed with time.perf_counter around the sync facade reader.read(query), "
    "which runs its own asyncio event loop (as a script or the CLI does).",
    "cold: a new TaskContext(state_dir=<fresh temp dir>) on a shared PluginHost(allow=[]), "
    "attach() of a freshly built MemorySource, a new reader and its first read: pinning, "
    "full enumeration (the source builds descriptors: digest, media class, sections), index "
    "sync, candidates, assembly, exact reads and the cursor (first use of the signing key). "
    "Excluded: building the item texts, MemorySource(...) construction (a dict copy) and "
    "PluginHost construction (made once per run).",
    "warm: a fresh reader on the same, already synced TaskContext, no change in between.",
    "one_change: source.put() of one existing item with new text (untimed), then a fresh "
    "reader on the same TaskContext and its read (timed): the index syncs the one change.",
    "Each round uses a fresh source object and a fresh state dir; gc.collect() runs before "
    "every timed phase, and the collector stays enabled while timing.",
    "MemorySource serves 500 descriptors per enumeration page and builds each descriptor "
    "(digest, media class, sections) when it enumerates, journals or reads it; that "
    "source-side work is part of the phase that triggers it, as it would be in real use.",
    "An untimed warm-up round on a small source imports lazily loaded modules first.",
    "Ratios are median(phase) / median(cold); the target is each under 5 %. It is judged "
    "on full runs only: at --quick sizes fixed per-read costs dominate (targets.met null).",
)


def make_items(count: int, seed: int) -> dict[str, str]:
    """``count`` small markdown items (about 300 characters each), deterministic for ``seed``."""
    rng = random.Random(seed)
    items: dict[str, str] = {}
    for number in range(count):
        lines = [f"# Item {number:05d}", ""]
        for _ in range(2):
            words = rng.choices(_WORDS, k=rng.randint(14, 22))
            lines.extend([" ".join(words).capitalize() + ".", ""])
        items[f"docs/area-{number % 50:02d}/item-{number:05d}.md"] = "\n".join(lines)
    return items


def changed_item(items: dict[str, str]) -> str:
    """The path the one-change phase rewrites: the middle item in path order."""
    return sorted(items)[len(items) // 2]


def _package_facts(package: ContextPackage) -> dict[str, Any]:
    """The shape of a package, to check that every phase delivered a real page."""
    return {
        "blocks": len(package.blocks),
        "used_chars": package.used_chars,
        "has_more": package.has_more,
        "source_revision": package.snapshot.sources.get(BINDING),
    }


def _round(
    host: PluginHost,
    items: dict[str, str],
    params: ReaderParams,
    budget: ContextBudget,
    round_no: int,
) -> dict[str, Any]:
    """One round: cold, warm and one-change read; their times and what the source served."""
    source = MemorySource(items, identity=IDENTITY)
    changed_path = changed_item(items)
    times: dict[str, float] = {}
    packages: dict[str, ContextPackage] = {}
    calls: dict[str, dict[str, int]] = {}

    def measure(phase: str, read: Callable[[], ContextPackage]) -> None:
        enumerations, reads = source.enumerations, source.reads
        gc.collect()
        start = time.perf_counter()
        packages[phase] = read()
        times[phase] = time.perf_counter() - start
        calls[phase] = {
            "enumeration_pages": source.enumerations - enumerations,
            "exact_reads": source.reads - reads,
        }

    with tempfile.TemporaryDirectory(prefix="taskctx-bench-") as state_dir:
        context: TaskContext | None = None

        def cold_read() -> ContextPackage:
            nonlocal context
            context = TaskContext(TASK_ID, host=host, state_dir=state_dir)
            context.attach(source, binding_id=BINDING)
            return context.reader(CONSUMER, budget=budget).read(params.query)

        def fresh_reader_read() -> ContextPackage:
            assert context is not None
            return context.reader(CONSUMER, budget=budget).read(params.query)

        measure("cold", cold_read)
        measure("warm", fresh_reader_read)
        source.put(changed_path, items[changed_path] + f"Revised in round {round_no}.\n")
        measure("one_change", fresh_reader_read)
        assert context is not None
        provider = context.index_provider.name
        context.index.close()
    cold, warm, changed = (packages[phase] for phase in PHASES)
    checks = {
        "blocks_delivered": all(p.blocks for p in packages.values()),
        "warm_matches_cold": [b.ref for b in warm.blocks] == [b.ref for b in cold.blocks],
        "one_change_sees_new_revision": (
            changed.snapshot.sources.get(BINDING) != cold.snapshot.sources.get(BINDING)
        ),
        "warm_enumerates_nothing": calls["warm"]["enumeration_pages"] == 0,
    }
    return {
        "times": times,
        "calls": calls,
        "checks": checks,
        "index_provider": provider,
        "packages": {phase: _package_facts(p) for phase, p in packages.items()},
    }


def run_reader(params: ReaderParams, *, quick: bool = False) -> dict[str, Any]:
    """Run ``params.rounds`` rounds (after one warm-up round) and return the JSON-safe result."""
    host = PluginHost(allow=[])
    budget = ContextBudget(max_chars=params.max_chars, max_blocks=params.max_blocks)
    warmup = make_items(params.warmup_descriptors, params.seed + 1)
    _round(host, warmup, params, budget, 0)
    items = make_items(params.descriptors, params.seed)
    rounds = [_round(host, items, params, budget, n) for n in range(1, params.rounds + 1)]
    timings = {phase: summarize([r["times"][phase] for r in rounds]) for phase in PHASES}
    cold = timings["cold"]["median_s"]
    ratios = {
        f"{phase}_over_cold": timings[phase]["median_s"] / cold for phase in ("warm", "one_change")
    }
    per_target = {name: ratio < TARGET_RATIO for name, ratio in ratios.items()}
    checks = {name: all(r["checks"][name] for r in rounds) for name in rounds[0]["checks"]}
    return {
        **result_header(
            NAME,
            quick=quick,
            params={
                **asdict(params),
                "binding": BINDING,
                "identity": IDENTITY,
                "consumer": CONSUMER,
                "host": "PluginHost(allow=[]) (built-ins only)",
                "index_provider": rounds[-1]["index_provider"],
                "changed_item": changed_item(items),
                "mean_item_chars": statistics.fmean(len(text) for text in items.values()),
            },
            notes=NOTES,
        ),
        "timings": timings,
        "ratios": ratios,
        "targets": {
            "max_ratio": TARGET_RATIO,
            **per_target,
            "applies": not quick,
            "met": None if quick else all(per_target.values()),
        },
        "checks": checks,
        "source_calls_last_round": rounds[-1]["calls"],
        "packages_last_round": rounds[-1]["packages"],
    }


def run(quick: bool) -> dict[str, Any]:
    """The registry entry point: full sizes, or ``QUICK`` ones for smoke runs."""
    return run_reader(QUICK if quick else FULL, quick=quick)


def summary_lines(result: dict[str, Any]) -> list[str]:
    """A few lines for humans: medians with min-max, ratios against the target."""
    params, timings, ratios = result["params"], result["timings"], result["ratios"]
    limit = result["targets"]["max_ratio"]
    lines = [f"{params['descriptors']} descriptors, {params['rounds']} rounds; median (min-max)"]
    for phase in PHASES:
        line = timing_line(phase, timings[phase], 11)
        ratio = ratios.get(f"{phase}_over_cold")
        if ratio is not None:
            verdict = ratio_verdict(ratio, limit, result["targets"]["applies"])
            line += f"  {ratio:6.2%} of cold, {verdict}"
        lines.append(line)
    failed = [name for name, ok in result["checks"].items() if not ok]
    if failed:
        lines.append(f"CHECKS FAILED: {', '.join(failed)}")
    return lines
