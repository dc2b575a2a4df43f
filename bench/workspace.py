"""The reader over a real folder (``task_workspace``): cold, warm and one-change reads.

A generated folder of 10,000 text files of 2-4 KB (plain text, Markdown with headings,
Python) is read through ``TaskWorkspace.source()`` attached to a ``TaskContext``.

Target (DESIGN.md, "Performance principles"; issue 3, "make demo and bench"): a warm
read and a one-change read each cost under 5 % of the cold read.
"""

from __future__ import annotations

import gc
import os
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import taskctx_workspace.plugin as workspace_plugin
from taskctx_workspace.source import WorkspaceSource
from taskctx_workspace.workspace import TaskWorkspace

from bench.common import (
    ratio_verdict,
    result_header,
    summarize,
    timing_line,
)
from taskctx import ContextBudget, ContextPackage, PluginHost, TaskContext
from taskctx.model import ContextRef, DescriptorPage, EnumerationRequest, ExactRead
from taskctx.protocols import ChangeSet

__all__ = [
    "DESCRIPTION",
    "FULL",
    "JUDGED",
    "NAME",
    "PHASES",
    "QUICK",
    "TARGET_RATIO",
    "CountingSource",
    "WorkspaceParams",
    "changed_file",
    "corpus_facts",
    "make_files",
    "run",
    "run_workspace",
    "summary_lines",
    "write_tree",
]

NAME = "workspace"
DESCRIPTION = "cold, warm and one-change reads over a folder of text files (task_workspace)"
TARGET_RATIO = 0.05
PHASES = ("cold", "warm", "one_change", "cold_kept_workspace_state")
JUDGED = ("warm", "one_change")
"""The phases held to the target ratio against ``cold``."""
BINDING = "ws"
TASK_ID = "bench-workspace"
CONSUMER = "bench-agent"
STATE_DIR_NAME = ".taskctx"

_TOPIC = (
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
    "journal",
    "change",
    "section",
    "workspace",
    "upload",
    "timeout",
    "retry",
    "policy",
)
_SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "ta", "vo", "shi", "en", "dor", "pal", "ix", "qua")
_FOLDERS = {
    "txt": ("", "notes", "notes/2024", "data/logs", "misc"),
    "md": ("docs", "docs/guides", "notes"),
    "py": ("src/pkg", "src/pkg/util"),
}


@dataclass(frozen=True)
class WorkspaceParams:
    """Sizes and read settings of one workspace benchmark run."""

    files: int = 10_000
    rounds: int = 5
    min_bytes: int = 2048
    max_bytes: int = 4096
    max_chars: int = 6000
    max_blocks: int = 12
    query: str = "why does the upload time out after a change to the index revision?"
    seed: int = 20_240_611
    warmup_files: int = 50


FULL = WorkspaceParams()
QUICK = WorkspaceParams(files=300, rounds=2)

NOTES = (
    "Host: PluginHost(allow=[]) with taskctx_workspace.plugin registered in-process "
    "(host.register(module, name='workspace')); no entry point plugin loads, so no lexical "
    "provider is present and the index is the kernel's StructuralProvider (candidates in "
    "path order, in-memory partition). Issue 4 adds FTS; the query is passed but not ranked.",
    "The folder is generated once per run in a temp dir (never in the repo): deterministic "
    "pseudo-random words, 70 % .txt, 20 % .md with headings, 10 % .py, in 9 folders (the "
    "root included); every file is 2-4 KB (ASCII, so bytes = characters). Files over 4,000 "
    "characters also get "
    "section or line-chunk descriptors.",
    "Every phase is timed with time.perf_counter around the work named; gc.collect() runs "
    "before each, the collector stays enabled while timing.",
    "cold: the folder's .taskctx/ is deleted (untimed) first; timed: host.source("
    "'task_workspace', root=..., mode='read_only') (a new TaskWorkspace), a new TaskContext("
    "state_dir=<fresh temp dir>), attach, a new reader and its first read: stat walk, every "
    "file read and hashed to build descriptors, index sync, assembly, exact reads, cursor.",
    "warm: a fresh reader on the same, already synced TaskContext, nothing changed.",
    "one_change: one file rewritten with new content (untimed; its stamp changes: size, "
    "mtime, ctime), then a fresh reader on the same TaskContext and its read (timed).",
    "cold_kept_workspace_state: after one_change, a new TaskWorkspace and a new TaskContext "
    "(fresh state_dir) over the same folder with the workspace's .taskctx/ kept: what a new "
    "process pays. The structural partition is in memory, so a kept state_dir would not "
    "carry an index either.",
    "Counts per phase: hashed_by_digest_cache = delta of workspace.hashed_count (files the "
    "stamp-keyed DigestCache hashed); files_described = files whose descriptors the source "
    "(re)built in that phase (each is a whole read plus sha256 inside WorkspaceSource, "
    "counted from the source's per-file view cache); revision_walks, enumeration_pages, "
    "change_queries and exact_reads are calls the kernel made on the source.",
    "An untimed warm-up round on a small folder imports lazily loaded modules first.",
    "Ratios are median(phase) / median(cold); the target is warm and one_change each under "
    "5 %. It is judged on full runs only: at --quick sizes fixed per-read costs dominate "
    "(targets.met null).",
)


# -- the folder ----------------------------------------------------------------------------


def _vocabulary(rng: random.Random, size: int = 400) -> list[str]:
    """Pseudo words of two to four syllables, plus the topic words queries use."""
    words = {"".join(rng.choices(_SYLLABLES, k=rng.randint(2, 4))) for _ in range(size)}
    return sorted(words) + list(_TOPIC)


def _sentence(rng: random.Random, words: list[str]) -> str:
    return " ".join(rng.choices(words, k=rng.randint(6, 12))).capitalize() + "."


def _body(rng: random.Random, words: list[str], kind: str, number: int, target: int) -> str:
    """Lines of ``kind`` until the next one would pass ``target`` characters."""
    lines: list[str]
    if kind == "md":
        lines = [f"# Note {number:05d}", ""]
    elif kind == "py":
        lines = [f'"""Module {number:05d}: {_sentence(rng, words)}"""', ""]
    else:
        lines = []
    size = sum(len(line) + 1 for line in lines)
    block = 0
    while True:
        if kind == "md" and block % 4 == 0:
            new = ["", f"## {_sentence(rng, words)[:-1]}", ""]
        elif kind == "py":
            name = f"func_{number}_{block}"
            new = [
                "",
                f"def {name}(value: int) -> str:",
                f'    """{_sentence(rng, words)}"""',
                f"    # {_sentence(rng, words)}",
                f'    return "{_sentence(rng, words)}" * value',
            ]
        else:
            new = [_sentence(rng, words) + " " + _sentence(rng, words)]
        extra = sum(len(line) + 1 for line in new)
        if size + extra > target:
            break
        lines.extend(new)
        size += extra
        block += 1
    prefix = "# " if kind == "py" else ""
    while target - size > len(prefix) + 8:  # fill up to the target with cut sentences
        line = (prefix + _sentence(rng, words))[: target - size - 1]
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines) + "\n"


def make_files(count: int, seed: int, min_bytes: int, max_bytes: int) -> dict[str, str]:
    """``count`` files by relative path, deterministic for ``seed``, each min-max bytes."""
    rng = random.Random(seed)
    words = _vocabulary(rng)
    files: dict[str, str] = {}
    for number in range(count):
        kind = "md" if number % 5 == 0 else "py" if number % 10 == 1 else "txt"
        folders = _FOLDERS[kind]
        folder = folders[(number // 10) % len(folders)]
        name = f"{kind}-file-{number:05d}.{kind}"
        path = f"{folder}/{name}" if folder else name
        text = _body(rng, words, kind, number, rng.randint(min_bytes + 160, max_bytes))
        if not min_bytes <= len(text.encode("utf-8")) <= max_bytes:
            raise AssertionError(f"generated {path} has {len(text)} bytes")
        files[path] = text
    return files


def corpus_facts(files: dict[str, str]) -> dict[str, Any]:
    """What a result says of a generated corpus: files by suffix, folders, sizes in bytes."""
    sizes = [len(text.encode("utf-8")) for text in files.values()]
    kinds: dict[str, int] = {}
    for path in files:
        suffix = path.rsplit(".", 1)[-1]
        kinds[suffix] = kinds.get(suffix, 0) + 1
    return {
        "files_by_suffix": kinds,
        "folders": len({p.rpartition("/")[0] for p in files}),
        "bytes_min": min(sizes),
        "bytes_max": max(sizes),
        "bytes_mean": statistics.fmean(sizes),
        "bytes_total": sum(sizes),
    }


def write_tree(root: Path, files: Mapping[str, str]) -> None:
    """Write ``files`` under ``root`` (folders made as needed)."""
    for rel, text in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def changed_file(files: Mapping[str, str]) -> str:
    """The path the one-change phase rewrites: the middle file in path order."""
    return sorted(files)[len(files) // 2]


def _rewrite(root: Path, rel: str, seed: int, round_no: int, params: WorkspaceParams) -> None:
    """Give ``rel`` new content (2-4 KB) and check its stamp changed."""
    path = root / rel
    before = os.stat(path)
    rng = random.Random(seed * 1000 + round_no)
    kind = rel.rsplit(".", 1)[-1]
    text = _body(rng, _vocabulary(rng), kind, round_no, params.max_bytes - 200)
    path.write_text(text + f"Revised in round {round_no}.\n", encoding="utf-8")
    after = os.stat(path)
    stamp_before = (before.st_size, before.st_mtime_ns, before.st_ctime_ns)
    if stamp_before == (after.st_size, after.st_mtime_ns, after.st_ctime_ns):
        os.utime(path, ns=(after.st_atime_ns, before.st_mtime_ns + 1_000_000))


# -- counting what the kernel asks of the source ---------------------------------------------


class CountingSource:
    """A ``task_workspace`` source that counts the kernel's calls and delegates them.

    ``files_described`` reads the source's per-file view cache (``_files``): a view
    object that is new after a phase was built in it (whole read plus sha256).
    """

    def __init__(self, inner: WorkspaceSource) -> None:
        self.inner = inner
        self.kind = inner.kind
        self.identity = inner.identity
        self.counts: dict[str, int] = {
            "revision_walks": 0,
            "enumeration_pages": 0,
            "change_queries": 0,
            "exact_reads": 0,
        }

    @property
    def workspace(self) -> TaskWorkspace:
        """The wrapped source's TaskWorkspace."""
        return self.inner.workspace

    def views(self) -> dict[str, int]:
        """Identity of each cached per-file view, by path (empty if the source has none)."""
        files = getattr(self.inner, "_files", None)
        return {path: id(view) for path, view in files.items()} if isinstance(files, dict) else {}

    def describe(self) -> dict[str, Any]:
        """The wrapped source's catalog facts."""
        return self.inner.describe()

    async def async_revision(self) -> str:
        """Counted ``async_revision``."""
        self.counts["revision_walks"] += 1
        return await self.inner.async_revision()

    async def async_enumerate_descriptors(self, request: EnumerationRequest) -> DescriptorPage:
        """Counted ``async_enumerate_descriptors``."""
        self.counts["enumeration_pages"] += 1
        return await self.inner.async_enumerate_descriptors(request)

    async def async_changes(self, since: str) -> ChangeSet | None:
        """Counted ``async_changes``."""
        self.counts["change_queries"] += 1
        return await self.inner.async_changes(since)

    async def async_read_exact(self, ref: ContextRef, limit: int | None = None) -> ExactRead:
        """Counted ``async_read_exact``."""
        self.counts["exact_reads"] += 1
        return await self.inner.async_read_exact(ref, limit)

    async def async_read_scoped(self, ref: ContextRef, limit: int | None) -> ExactRead:
        """Counted ``async_read_scoped``."""
        self.counts["exact_reads"] += 1
        return await self.inner.async_read_scoped(ref, limit)


def _new_source(host: PluginHost, root: Path) -> CountingSource:
    """A new ``task_workspace`` source (and TaskWorkspace) made by the host's factory."""
    inner = host.source("task_workspace", root=str(root), mode="read_only")
    if not isinstance(inner, WorkspaceSource):
        raise TypeError(f"task_workspace factory returned {type(inner).__name__}")
    return CountingSource(inner)


# -- one round -------------------------------------------------------------------------------


def _package_facts(package: ContextPackage) -> dict[str, Any]:
    """The shape of a package, to check that every phase delivered a real page."""
    return {
        "blocks": len(package.blocks),
        "used_chars": package.used_chars,
        "has_more": package.has_more,
        "source_revision": package.snapshot.sources.get(BINDING),
    }


def _delete_state(root: Path) -> None:
    shutil.rmtree(root / STATE_DIR_NAME, ignore_errors=True)


def _state_files(root: Path) -> int:
    """How many files the workspace keeps under its ``.taskctx/``."""
    state = root / STATE_DIR_NAME
    return sum(1 for p in state.rglob("*") if p.is_file()) if state.is_dir() else 0


def _round(
    host: PluginHost,
    root: Path,
    files: Mapping[str, str],
    params: WorkspaceParams,
    budget: ContextBudget,
    round_no: int,
) -> dict[str, Any]:
    """One round: every phase of :data:`PHASES`, their times and what the source did."""
    times: dict[str, float] = {}
    packages: dict[str, ContextPackage] = {}
    calls: dict[str, dict[str, int]] = {}
    contexts: list[TaskContext] = []
    sources: list[CountingSource] = []
    changed_path = changed_file(files)
    _delete_state(root)

    def measure(phase: str, read: Callable[[], ContextPackage]) -> None:
        known = len(sources)
        before = sources[-1] if sources else None
        counts = dict(before.counts) if before else {}
        views = before.views() if before else {}
        hashed = before.workspace.hashed_count if before else 0
        gc.collect()
        start = time.perf_counter()
        packages[phase] = read()
        times[phase] = time.perf_counter() - start
        source = sources[-1]
        if len(sources) != known:  # the phase made a new source: count from zero
            counts, views, hashed = dict.fromkeys(source.counts, 0), {}, 0
        now = source.views()
        calls[phase] = {
            **{name: source.counts[name] - counts[name] for name in source.counts},
            "files_described": sum(1 for path, v in now.items() if views.get(path) != v),
            "hashed_by_digest_cache": source.workspace.hashed_count - hashed,
        }

    with tempfile.TemporaryDirectory(prefix="taskctx-bench-ws-state-") as state_root:

        def cold_read(state_dir: str) -> Callable[[], ContextPackage]:
            def read() -> ContextPackage:
                source = _new_source(host, root)
                sources.append(source)
                context = TaskContext(TASK_ID, host=host, state_dir=state_dir)
                contexts.append(context)
                context.attach(source, binding_id=BINDING)
                return context.reader(CONSUMER, budget=budget).read(params.query)

            return read

        def fresh_reader_read() -> ContextPackage:
            return contexts[-1].reader(CONSUMER, budget=budget).read(params.query)

        measure("cold", cold_read(os.path.join(state_root, "cold")))
        measure("warm", fresh_reader_read)
        _rewrite(root, changed_path, params.seed, round_no, params)
        measure("one_change", fresh_reader_read)
        sources[-1].workspace.close()
        state_files = _state_files(root)
        measure("cold_kept_workspace_state", cold_read(os.path.join(state_root, "kept")))
        provider = contexts[-1].index_provider.name
        for context in contexts:
            context.index.close()
        for source in sources:
            source.workspace.close()
    cold, warm, changed, kept = (packages[phase] for phase in PHASES)
    checks = {
        "blocks_delivered": all(p.blocks for p in packages.values()),
        "warm_matches_cold": [b.ref for b in warm.blocks] == [b.ref for b in cold.blocks],
        "one_change_sees_new_revision": (
            changed.snapshot.sources.get(BINDING) != cold.snapshot.sources.get(BINDING)
        ),
        "kept_state_sees_one_change_revision": (
            kept.snapshot.sources.get(BINDING) == changed.snapshot.sources.get(BINDING)
        ),
        "warm_enumerates_nothing": calls["warm"]["enumeration_pages"] == 0,
        "warm_describes_nothing": calls["warm"]["files_described"] == 0,
        "one_change_describes_one_file": calls["one_change"]["files_described"] == 1,
    }
    return {
        "times": times,
        "calls": calls,
        "checks": checks,
        "index_provider": provider,
        "workspace_state_files_after_one_change": state_files,
        "packages": {phase: _package_facts(p) for phase, p in packages.items()},
    }


# -- the run ---------------------------------------------------------------------------------


def run_workspace(params: WorkspaceParams, *, quick: bool = False) -> dict[str, Any]:
    """Generate the folder, run one warm-up and ``params.rounds`` rounds; the JSON result."""
    host = PluginHost(allow=[])
    host.register(workspace_plugin, name="workspace")
    budget = ContextBudget(max_chars=params.max_chars, max_blocks=params.max_blocks)
    files = make_files(params.files, params.seed, params.min_bytes, params.max_bytes)
    with tempfile.TemporaryDirectory(prefix="taskctx-bench-ws-") as temp:
        warm_root = Path(temp) / "warmup"
        warmup = make_files(
            params.warmup_files, params.seed + 1, params.min_bytes, params.max_bytes
        )
        write_tree(warm_root, warmup)
        _round(host, warm_root, warmup, params, budget, 0)
        root = Path(temp) / "folder"
        started = time.perf_counter()
        write_tree(root, files)
        generate_s = time.perf_counter() - started
        rounds = [_round(host, root, files, params, budget, n) for n in range(1, params.rounds + 1)]
    timings = {phase: summarize([r["times"][phase] for r in rounds]) for phase in PHASES}
    cold = timings["cold"]["median_s"]
    ratios = {f"{phase}_over_cold": timings[phase]["median_s"] / cold for phase in PHASES[1:]}
    per_target = {
        f"{phase}_over_cold": ratios[f"{phase}_over_cold"] < TARGET_RATIO for phase in JUDGED
    }
    checks = {name: all(r["checks"][name] for r in rounds) for name in rounds[0]["checks"]}
    return {
        **result_header(
            NAME,
            quick=quick,
            params={
                **asdict(params),
                "binding": BINDING,
                "consumer": CONSUMER,
                "host": "PluginHost(allow=[]) + taskctx_workspace.plugin registered in-process",
                "index_provider": rounds[-1]["index_provider"],
                "changed_file": changed_file(files),
                **corpus_facts(files),
                "generate_s": generate_s,
            },
            notes=NOTES,
        ),
        "timings": timings,
        "ratios": ratios,
        "targets": {
            "max_ratio": TARGET_RATIO,
            "judged": [f"{phase}_over_cold" for phase in JUDGED],
            **per_target,
            "applies": not quick,
            "met": None if quick else all(per_target.values()),
        },
        "checks": checks,
        "source_calls_by_round": [r["calls"] for r in rounds],
        "workspace_state_files_after_one_change": rounds[-1][
            "workspace_state_files_after_one_change"
        ],
        "packages_last_round": rounds[-1]["packages"],
    }


def run(quick: bool) -> dict[str, Any]:
    """The registry entry point: full sizes, or ``QUICK`` ones for smoke runs."""
    return run_workspace(QUICK if quick else FULL, quick=quick)


def summary_lines(result: dict[str, Any]) -> list[str]:
    """A few lines for humans: medians with min-max, ratios against the target, counts."""
    params, timings, ratios = result["params"], result["timings"], result["ratios"]
    targets = result["targets"]
    limit = targets["max_ratio"]
    lines = [
        f"{params['files']} files ({params['bytes_min']}-{params['bytes_max']} B), "
        f"{params['rounds']} rounds, index {params['index_provider']}; median (min-max)"
    ]
    last_calls = result["source_calls_by_round"][-1]
    for phase in PHASES:
        line = timing_line(phase, timings[phase], 26)
        key = f"{phase}_over_cold"
        ratio = ratios.get(key)
        if ratio is not None:
            line += f"  {ratio:7.2%} of cold"
            if key in targets["judged"]:
                line += f", {ratio_verdict(ratio, limit, targets['applies'])}"
        c = last_calls[phase]
        line += (
            f"  [described {c['files_described']}, digest-hashed "
            f"{c['hashed_by_digest_cache']}, pages {c['enumeration_pages']}, "
            f"changes {c['change_queries']}, reads {c['exact_reads']}]"
        )
        lines.append(line)
    failed = [name for name, ok in result["checks"].items() if not ok]
    if failed:
        lines.append(f"CHECKS FAILED: {', '.join(failed)}")
    return lines
