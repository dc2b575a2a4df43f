"""Issue 17's scale targets: 100,000 files and 1,000,000 records, first and warm reads.

Targets: a first read of 100,000 files (``bench.workspace.make_files``, 2-4 KB, about
330 MB) and of 1,000,000 records (``bench.records``' source-read records) each completes
with peak RSS under 1 GiB; a warm read (a new reader, nothing changed; median of 5) of the
workspace under 1 s, of the records under 100 ms. The corpora are generated once into
``.cache/bench/scale/`` (keyed by size and seed; gitignored) and reused by later runs. Each
corpus is read in a process of its own (``python -m bench.scale SPEC OUT``), so its peak
RSS (VmHWM) is that read's alone. The run takes minutes, so it is not in the default
``python -m bench``: run it with ``python -m bench --only scale`` (``--quick``: 2,000 files,
20,000 records, not judged).
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from taskctx_records import RecordStore

from bench import records, workspace
from bench.common import REPO_ROOT, package_facts, peak_rss_bytes, result_header, summarize
from bench.peer_taskctx import HOST_ALLOW
from taskctx import ContextBudget, ContextPackage, PluginHost, TaskContext

__all__ = [
    "DESCRIPTION",
    "FULL",
    "IN_DEFAULT_RUN",
    "NAME",
    "QUICK",
    "ScaleParams",
    "run",
    "run_scale",
    "summary_lines",
]

NAME = "scale"
DESCRIPTION = "first and warm reads of 100,000 files and 1,000,000 records, peak RSS (opt-in)"
IN_DEFAULT_RUN = False
"""Minutes long: only ``python -m bench --only scale`` runs it."""
DEFAULT_CACHE = REPO_ROOT / ".cache" / "bench" / "scale"
KINDS = ("workspace", "records")
TARGET_RSS_BYTES = 2**30
TARGET_WARM_S = {"workspace": 1.0, "records": 0.1}
BINDING = "scale"


@dataclass(frozen=True)
class ScaleParams:
    """Corpus sizes, the read's budget, warm rounds and the cache folder."""

    files: int = 100_000
    records: int = 1_000_000
    min_bytes: int = 2048
    max_bytes: int = 4096
    seed: int = 20_240_611
    batch_size: int = 10_000
    warm_rounds: int = 5
    max_chars: int = 6000
    max_blocks: int = 12
    cache: Path = field(default=DEFAULT_CACHE)


FULL = ScaleParams()
QUICK = ScaleParams(files=2_000, records=20_000, warm_rounds=3)

NOTES = (
    "workspace: bench.workspace.make_files(files, seed, 2048, 4096) written once to "
    "<cache>/workspace-<files>-<seed>-<min>-<max>/tree; records: bench.records' source-read "
    "records (one scope, each names an upload) written once by RecordStore.put_many in "
    "batches of batch_size to <cache>/records-<count>/store. A DONE marker is written last; "
    "a folder without one is generated again.",
    "Before each run the corpus's .taskctx state (the workspace's state folder, the record "
    "store's FTS index) is deleted, untimed, so the first read builds everything; the files "
    "stay in the page cache (no root to drop it).",
    "Each corpus is read in a fresh process (python -m bench.scale SPEC OUT): first = new "
    "source + new TaskContext (fresh state_dir) + attach + new reader + read, budget "
    "6,000 chars / 12 blocks, PluginHost(allow=[taskctx-workspace or taskctx-records, "
    "taskctx-fts]) as bench.peer_taskctx; warm = a new reader on the same context, nothing "
    "changed, warm_rounds times, median.",
    "peak RSS: the read process's VmHWM (/proc/self/status) after the first read and at the "
    "end; generation happens in the parent and is not part of it.",
    "Targets (issue 17): each first read's peak RSS under 1 GiB; warm read median under 1 s "
    "(workspace) and 100 ms (records). --quick sizes are not judged.",
)


# -- the cached corpora ---------------------------------------------------------------------


def _workspace_corpus(params: ScaleParams) -> tuple[Path, dict[str, Any]]:
    """The cached folder of ``params.files`` files (made if missing); its root and facts."""
    key = f"workspace-{params.files}-{params.seed}-{params.min_bytes}-{params.max_bytes}"
    home = params.cache / key
    done = home / "DONE"
    generated = False
    started = time.perf_counter()
    if not done.is_file():
        shutil.rmtree(home, ignore_errors=True)
        files = workspace.make_files(params.files, params.seed, params.min_bytes, params.max_bytes)
        workspace.write_tree(home / "tree", files)
        facts = {"files": len(files), "bytes": sum(len(t.encode("utf-8")) for t in files.values())}
        del files
        done.write_text(json.dumps(facts), encoding="utf-8")
        generated = True
    facts = json.loads(done.read_text(encoding="utf-8"))
    facts.update({"generated": generated, "prepare_s": time.perf_counter() - started})
    return home / "tree", facts


def _records_corpus(params: ScaleParams) -> tuple[Path, dict[str, Any]]:
    """The cached store of ``params.records`` records (made if missing); its root and facts."""
    home = params.cache / f"records-{params.records}"
    done = home / "DONE"
    generated = False
    started = time.perf_counter()
    if not done.is_file():
        shutil.rmtree(home, ignore_errors=True)
        store = RecordStore(home / "store")
        for start in range(0, params.records, params.batch_size):
            count = min(params.batch_size, params.records - start)
            store.put_many(records._source_items(start, count))
        facts = {"records": params.records, "revision": store.revision}
        store.close()
        done.write_text(json.dumps(facts), encoding="utf-8")
        generated = True
    facts = json.loads(done.read_text(encoding="utf-8"))
    facts.update({"generated": generated, "prepare_s": time.perf_counter() - started})
    return home / "store", facts


# -- one side, in its own process ----------------------------------------------------------


def read_side(spec: dict[str, Any]) -> dict[str, Any]:
    """First read and ``warm_rounds`` warm reads of one corpus; times, facts, peak RSS."""
    kind = spec["kind"]
    host = PluginHost(allow=list(HOST_ALLOW["lexical"][kind]))
    budget = ContextBudget(max_chars=spec["max_chars"], max_blocks=spec["max_blocks"])
    query = workspace.FULL.query if kind == "workspace" else records.SOURCE_QUERY
    context = TaskContext("bench-scale", host=host, state_dir=spec["state_dir"])

    def first() -> ContextPackage:
        if kind == "workspace":
            source: Any = host.source("task_workspace", root=spec["root"], mode="read_only")
        else:
            source = RecordStore(Path(spec["root"])).source(scope=records.SOURCE_SCOPE)
        context.attach(source, binding_id=BINDING)
        return context.reader("bench-scale", budget=budget).read(query)

    def warm() -> ContextPackage:
        return context.reader("bench-scale", budget=budget).read(query)

    def timed(read: Callable[[], ContextPackage]) -> tuple[float, ContextPackage]:
        started = time.perf_counter()
        package = read()
        return time.perf_counter() - started, package

    first_s, package = timed(first)
    first_rss = peak_rss_bytes()
    warm_s: list[float] = []
    warm_facts: list[dict[str, Any]] = []
    for _ in range(spec["warm_rounds"]):
        seconds, warm_package = timed(warm)
        warm_s.append(seconds)
        warm_facts.append(package_facts(warm_package, BINDING))
    provider = context.index_provider.name
    context.index.close()
    return {
        "first_s": first_s,
        "warm_s": warm_s,
        "first": package_facts(package, BINDING),
        "warm": warm_facts,
        "index_provider": provider,
        "peak_rss_bytes_after_first": first_rss,
        # Linux sums RSS from per-CPU counters, so a later VmHWM read can come out a few
        # pages lower than an earlier one: the peak is the larger of the two readings
        "peak_rss_bytes": max(first_rss, peak_rss_bytes()),
    }


def _run_side(kind: str, root: Path, params: ScaleParams, work: Path) -> dict[str, Any]:
    """``read_side`` in a fresh interpreter: its result, with the wall time of the process."""
    state = root / ".taskctx"
    if kind == "workspace":
        shutil.rmtree(state, ignore_errors=True)
    else:
        shutil.rmtree(state / "index", ignore_errors=True)
    spec = {
        "kind": kind,
        "root": str(root),
        "state_dir": str(work / f"{kind}-state"),
        "warm_rounds": params.warm_rounds,
        "max_chars": params.max_chars,
        "max_blocks": params.max_blocks,
    }
    spec_file, out_file = work / f"{kind}-spec.json", work / f"{kind}-out.json"
    spec_file.write_text(json.dumps(spec), encoding="utf-8")
    started = time.perf_counter()
    command = [sys.executable, "-m", "bench.scale", str(spec_file), str(out_file)]
    subprocess.run(command, cwd=REPO_ROOT, check=True)
    result: dict[str, Any] = json.loads(out_file.read_text(encoding="utf-8"))
    result["process_s"] = time.perf_counter() - started
    return result


# -- the run ---------------------------------------------------------------------------------


def run_scale(params: ScaleParams, *, quick: bool = False) -> dict[str, Any]:
    """Prepare (or reuse) both corpora, read each in its own process; the JSON result."""
    params.cache.mkdir(parents=True, exist_ok=True)
    ws_root, ws_facts = _workspace_corpus(params)
    rec_root, rec_facts = _records_corpus(params)
    sides: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="run-", dir=params.cache) as temp:
        for kind, root in (("workspace", ws_root), ("records", rec_root)):
            sides[kind] = _run_side(kind, root, params, Path(temp))
    per_target: dict[str, bool] = {}
    timings: dict[str, Any] = {}
    for kind, side in sides.items():
        warm = statistics.median(side["warm_s"])
        timings[kind] = {"first_s": side["first_s"], "warm": summarize(side["warm_s"])}
        per_target[f"{kind}_first_read_rss_under_1gib"] = side["peak_rss_bytes"] < TARGET_RSS_BYTES
        per_target[f"{kind}_warm_read_under_{TARGET_WARM_S[kind]:g}s"] = warm < TARGET_WARM_S[kind]
    checks = {
        f"{kind}_{name}": ok
        for kind, side in sides.items()
        for name, ok in {
            "blocks_delivered": side["first"]["blocks"] > 0,
            "provider_fts": side["index_provider"] == "fts",
            "warm_same_revision": all(
                w["revision"] == side["first"]["revision"] for w in side["warm"]
            ),
        }.items()
    }
    checks["records_considers_all"] = sides["records"]["first"]["considered"] == params.records
    return {
        **result_header(
            NAME, quick=quick, params={**asdict(params), "cache": str(params.cache)}, notes=NOTES
        ),
        "corpus": {"workspace": ws_facts, "records": rec_facts},
        "timings": timings,
        "peak_rss_bytes": {kind: side["peak_rss_bytes"] for kind, side in sides.items()},
        "sides": sides,
        "targets": {
            "max_rss_bytes": TARGET_RSS_BYTES,
            "max_warm_s": TARGET_WARM_S,
            **per_target,
            "applies": not quick,
            "met": None if quick else all(per_target.values()),
        },
        "checks": checks,
    }


def run(quick: bool) -> dict[str, Any]:
    """The registry entry point: full sizes, or ``QUICK`` ones (not judged)."""
    return run_scale(QUICK if quick else FULL, quick=quick)


def summary_lines(result: dict[str, Any]) -> list[str]:
    """Per corpus: size, first read, warm median, peak RSS; the targets' verdict."""
    lines = []
    corpus = result["corpus"]
    for kind, timing in result["timings"].items():
        size = corpus[kind].get("files", corpus[kind].get("records"))
        rss = result["peak_rss_bytes"][kind] / 2**20
        warm = timing["warm"]
        lines.append(
            f"{kind} {size:,}: first read {timing['first_s']:.2f} s, warm median "
            f"{warm['median_s'] * 1e3:.1f} ms ({warm['min_s'] * 1e3:.1f}-"
            f"{warm['max_s'] * 1e3:.1f}), peak RSS {rss:.0f} MiB"
            f"{' (corpus generated)' if corpus[kind]['generated'] else ''}"
        )
    targets = result["targets"]
    judged = {k: v for k, v in targets.items() if "_under_" in k}
    verdict = {True: "met", False: "MISSED", None: "not judged (quick)"}[targets["met"]]
    lines.append(
        "targets: "
        + ", ".join(f"{k} {'yes' if v else 'NO'}" for k, v in judged.items())
        + f": {verdict}"
    )
    failed = [name for name, ok in result["checks"].items() if not ok]
    if failed:
        lines.append(f"CHECKS FAILED: {', '.join(failed)}")
    return lines


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.scale SPEC.json OUT.json``: one side's reads, written to OUT."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m bench.scale SPEC.json OUT.json", file=sys.stderr)
        return 2
    spec = json.loads(Path(args[0]).read_text(encoding="utf-8"))
    Path(args[1]).write_text(json.dumps(read_side(spec)), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
