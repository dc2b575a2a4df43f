"""``python -m bench --peer agently``: taskctx beside Agently 4.1.4.10 on the same data and steps.

Issue 17's table: per corpus size (``--sizes``, default 1,000 and 10,000) a workspace (the
files of ``bench.workspace.make_files``) and a record store (the records of
``bench.records``'s source read), budget 6,000 chars / 12 blocks, the same query. Steps:
first read (attach + reader + first read), warm read (a new reader, nothing changed), one
change then a new reader's read (one file rewritten / one record put; reported, not
judged), and one ``put`` per record (filling the store, timed: records/s).

Agently runs in its own virtualenv under the work folder (``--work``, default
``.cache/bench/peer-agently``; gitignored, never the project's .venv), made and filled with
``pip install agently==4.1.4.10`` on first use. Each side runs each size in a process of
its own (``bench.peer_taskctx`` by this interpreter, ``bench/peer_agently_driver.py`` by the
peer's), so neither imports the other and each reports its own peak RSS. Sides alternate
which goes first from round to round.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench import records, workspace
from bench.common import REPO_ROOT, result_header, write_result
from taskctx.statefiles import STATE_DIR_ENV

__all__ = [
    "AGENTLY_VERSION",
    "DEFAULT_SIZES",
    "PEERS",
    "TARGETS",
    "PeerParams",
    "add_arguments",
    "build_report",
    "ensure_peer_venv",
    "params_from_args",
    "parse_sizes",
    "progress_line",
    "ratio",
    "run_from_args",
    "run_peer",
    "step_spec",
    "summary_lines",
    "target_for",
]

NAME = "peer-agently"
PEERS = ("agently",)
AGENTLY_VERSION = "4.1.4.10"
DEFAULT_SIZES = (1_000, 10_000)
DEFAULT_WORK = REPO_ROOT / ".cache" / "bench" / "peer-agently"
DRIVER = Path(__file__).resolve().parent / "peer_agently_driver.py"
SIDES = ("taskctx", "agently")
KINDS = ("workspace", "records")

ROWS: tuple[tuple[str, str, str], ...] = (
    ("workspace first read", "workspace", "first"),
    ("workspace warm read", "workspace", "warm"),
    ("workspace one change", "workspace", "change"),
    ("records first read", "records", "first"),
    ("records warm read", "records", "warm"),
    ("records one put", "records", "change"),
    ("one put per record", "records", "puts"),
)
"""Table rows: label, corpus, step. ``puts`` is a rate (records/s), the others times."""

TARGETS: dict[str, dict[int, float]] = {
    "workspace first read": {1_000: 10.0, 10_000: 50.0},
    "workspace warm read": {1_000: 100.0, 10_000: 100.0},
    "records first read": {1_000: 10.0, 10_000: 50.0},
    "records warm read": {1_000: 100.0, 10_000: 100.0},
    "one put per record": {1_000: 50.0, 10_000: 50.0},
}
"""Issue 17's targets (taskctx faster by this factor), by row and the size they are set at."""

NOTES = (
    "Same data: the workspace is bench.workspace.make_files(size, seed, 2048, 4096) written "
    "once per side (each side's own copy, so neither sees the other's state folder); the "
    "records are bench.records' source-read records (one scope, each names an upload).",
    "Same steps, each side in a fresh process per size and round: first = new workspace or "
    "source + new TaskContext + attach + new reader + its first read; warm = a new reader on "
    "the same context, nothing changed; change = one file rewritten (appended a line) or one "
    "record put, untimed, then a new reader's read; puts = every record written by one put "
    "call each into an empty store, timed as a whole (records/s).",
    "Ratios are Agently over taskctx for times (how many times faster taskctx is) and "
    "taskctx over Agently for puts/s; medians over rounds. Targets are issue 17's; a size "
    "below 1,000 is not judged, 1,000-9,999 takes the 1,000 target, 10,000 and up the "
    "10,000 one. The change rows have no target and are reported only.",
    "taskctx: PluginHost(allow=[taskctx-workspace or taskctx-records] + taskctx-fts when "
    "--index lexical); workspace via host.source('task_workspace', root, mode='read_only'); "
    "records via taskctx_records.RecordStore(root).put and store.source(scope=...).",
    "Agently 4.1.4.10: agently.core.TaskWorkspace.TaskWorkspace(root, mode='read_only') + "
    "TaskWorkspaceContextSource; agently.core.storage.RecordStore(root, mode='read_write', "
    "default_scope=scope) with `await put(...)` per record + RecordStoreContextSource; "
    "agently.core.context.TaskContext with configure_index(strategy=--index), attach, "
    "reader(consumer, budget=ContextBudget(6000, 12), semantic_selector=...).read(query).",
    "Agently's reader delivers no optional block without a semantic selector (a model call "
    "in Agently; without one it reports context.semantic_selector_unavailable and 0 "
    "blocks). Its driver passes a selector without a model that keeps the first max_blocks "
    "candidates in the index's order, so both sides read exactly and pack a budgeted page.",
    "Peak RSS is each side process's VmHWM (/proc/self/status; ru_maxrss would carry the "
    "parent's peak across fork and exec), the maximum over its runs.",
)


@dataclass(frozen=True)
class PeerParams:
    """What one peer run measures: sizes, rounds, budget, index kind, work folder."""

    sizes: tuple[int, ...] = DEFAULT_SIZES
    rounds: int = 1
    max_chars: int = 6000
    max_blocks: int = 12
    index: str = "lexical"
    seed: int = 20_240_611
    work: Path = field(default=DEFAULT_WORK)
    version: str = AGENTLY_VERSION


# -- arguments ------------------------------------------------------------------------------


def parse_sizes(text: str) -> tuple[int, ...]:
    """``"1000,10000"`` as ``(1000, 10000)``; each a positive integer, no repeats."""
    parts = [part.strip().replace("_", "") for part in text.split(",")]
    if not parts or any(not part for part in parts):
        raise argparse.ArgumentTypeError(f"sizes must be comma-separated integers: {text!r}")
    try:
        sizes = tuple(int(part) for part in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"sizes must be comma-separated integers: {text!r}"
        ) from None
    if any(size < 1 for size in sizes):
        raise argparse.ArgumentTypeError(f"every size must be at least 1: {text!r}")
    if len(set(sizes)) != len(sizes):
        raise argparse.ArgumentTypeError(f"a size is repeated: {text!r}")
    return sizes


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``--peer`` options of ``python -m bench``."""
    group = parser.add_argument_group("peer bench (taskctx beside another system)")
    group.add_argument("--peer", choices=PEERS, help="run the peer bench against this system")
    group.add_argument(
        "--sizes",
        type=parse_sizes,
        default=DEFAULT_SIZES,
        metavar="N[,N...]",
        help="corpus sizes (files and records), default 1000,10000",
    )
    group.add_argument("--rounds", type=_positive, default=1, help="rounds per size (default 1)")
    group.add_argument(
        "--index",
        choices=("lexical", "structural"),
        default="lexical",
        help="lexical: taskctx-fts beside Agently's lexical index; structural: neither ranks",
    )
    group.add_argument(
        "--work",
        type=Path,
        default=DEFAULT_WORK,
        help="work folder for the peer's venv and the corpora (default .cache/bench/peer-agently)",
    )


def params_from_args(args: argparse.Namespace) -> PeerParams:
    """The run's parameters from parsed ``python -m bench`` arguments (``--quick``: 200)."""
    sizes = (200,) if args.quick and args.sizes == DEFAULT_SIZES else tuple(args.sizes)
    # absolute: each side runs with its own working directory
    work = args.work.resolve()
    return PeerParams(sizes=sizes, rounds=args.rounds, index=args.index, work=work)


# -- the peer's virtualenv ------------------------------------------------------------------


def _venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _installed_version(python: Path) -> str | None:
    done = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('agently'))"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() if done.returncode == 0 else None


def ensure_peer_venv(work: Path, version: str = AGENTLY_VERSION) -> Path:
    """The peer venv's interpreter under ``work/venv``, made and ``agently==version``
    installed when missing; refuses the project's own virtualenv."""
    venv = (work / "venv").resolve()
    for own in {(REPO_ROOT / ".venv").resolve(), Path(sys.prefix).resolve()}:
        if venv == own or own in venv.parents:
            raise ValueError(f"the peer venv must not be in the project's virtualenv: {venv}")
    python = _venv_python(venv)
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    if _installed_version(python) != version:
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", f"agently=={version}"], check=True
        )
    installed = _installed_version(python)
    if installed != version:
        raise RuntimeError(f"agently {version} not installed in {venv} (found {installed})")
    return python


# -- specs and runs -------------------------------------------------------------------------


def step_spec(
    kind: str, root: Path, params: PeerParams, extra: Mapping[str, Any]
) -> dict[str, Any]:
    """The JSON spec both drivers read: corpus kind and folder, query, budget, index."""
    query = workspace.FULL.query if kind == "workspace" else records.SOURCE_QUERY
    return {
        "kind": kind,
        "root": str(root),
        "query": query,
        "max_chars": params.max_chars,
        "max_blocks": params.max_blocks,
        "index": params.index,
        **extra,
    }


def _record_items(size: int) -> list[dict[str, Any]]:
    return [
        {"content": item["content"], "collection": item["collection"], "kind": item["kind"]}
        for item in records._source_items(0, size)
    ]


def _prepare(base: Path, size: int, params: PeerParams, side: str) -> dict[str, dict[str, Any]]:
    """Fresh corpora for one side and size under ``base``; the spec of each kind."""
    files = workspace.make_files(size, params.seed, 2048, 4096)
    ws_root = base / side / "workspace"
    workspace.write_tree(ws_root, files)
    changed = workspace.changed_file(files)
    items_file = base / "records.json"
    if not items_file.exists():
        items_file.write_text(json.dumps(_record_items(size)), encoding="utf-8")
    one_put = {
        "content": {"i": -1, "status": "failed", "text": "upload timed out again"},
        "collection": "obs",
        "kind": "review_result",
    }
    return {
        "workspace": step_spec(
            "workspace",
            ws_root,
            params,
            {
                "change": {"path": changed, "text": files[changed] + "Revised by the peer.\n"},
                "state_dir": str(base / side / "ws-state"),
            },
        ),
        "records": step_spec(
            "records",
            base / side / "records",
            params,
            {
                "items_file": str(items_file),
                "scope": dict(records.SOURCE_SCOPE),
                "one_put": one_put,
                "state_dir": str(base / side / "rec-state"),
            },
        ),
    }


def _run_side(side: str, python: Path, spec: dict[str, Any], base: Path) -> dict[str, Any]:
    spec_file = base / f"{side}-{spec['kind']}-spec.json"
    out_file = base / f"{side}-{spec['kind']}-out.json"
    spec_file.write_text(json.dumps(spec), encoding="utf-8")
    if side == "taskctx":
        command = [sys.executable, "-m", "bench.peer_taskctx", str(spec_file), str(out_file)]
        # the workspace's derived state (its index) goes to the run's folder, not the
        # user's state folder: each run starts cold and leaves nothing behind
        cwd, env = REPO_ROOT, {**os.environ, STATE_DIR_ENV: str(base / "taskctx-state")}
    else:
        command = [str(python), str(DRIVER), str(spec_file), str(out_file)]
        env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
        cwd = base
    subprocess.run(command, cwd=cwd, env=env, check=True)
    result: dict[str, Any] = json.loads(out_file.read_text(encoding="utf-8"))
    return result


def progress_line(side: str, kind: str, size: int, round_no: int, run: Mapping[str, Any]) -> str:
    """One side's figures as soon as its process ends (a long run shows what it measured)."""
    steps = ", ".join(
        f"{step} {size / seconds:,.0f}/s" if step == "puts" else f"{step} {_show(seconds, 's')}"
        for step, seconds in run["times"].items()
    )
    rss = run["peak_rss_bytes"] / 2**20
    return f"{side} {kind} {size:,} (round {round_no}): {steps}; peak RSS {rss:.0f} MiB"


def run_peer(params: PeerParams, *, quick: bool = False) -> dict[str, Any]:
    """Install the peer if needed, run both sides on every size and round; the result."""
    python = ensure_peer_venv(params.work, params.version)
    params.work.mkdir(parents=True, exist_ok=True)
    runs: dict[str, dict[str, dict[str, list[dict[str, Any]]]]] = {}
    for size in params.sizes:
        per_side: dict[str, dict[str, list[dict[str, Any]]]] = {
            side: {kind: [] for kind in KINDS} for side in SIDES
        }
        for round_no in range(params.rounds):
            order = SIDES if round_no % 2 == 0 else SIDES[::-1]
            for kind in KINDS:
                for side in order:
                    with tempfile.TemporaryDirectory(dir=params.work, prefix="run-") as tmp:
                        base = Path(tmp)
                        spec = _prepare(base, size, params, side)[kind]
                        done = _run_side(side, python, spec, base)
                        per_side[side][kind].append(done)
                        print(
                            f"   {progress_line(side, kind, size, round_no + 1, done)}", flush=True
                        )
        runs[str(size)] = per_side
    report = build_report(runs, params.sizes, judged=not quick)
    return {
        **result_header(
            NAME,
            quick=quick,
            params={**asdict(params), "work": str(params.work), "sizes": list(params.sizes)},
            notes=NOTES,
        ),
        "peer": {"name": "agently", "version": params.version, "python": str(python)},
        **report,
        "runs": runs,
    }


# -- the report -----------------------------------------------------------------------------


def ratio(label: str, taskctx: float, agently: float) -> float:
    """How many times better taskctx is: Agently over taskctx for times, the inverse for
    rates (the ``puts`` row is records/s)."""
    if taskctx <= 0 or agently <= 0:
        raise ValueError(
            f"{label}: figures must be positive (taskctx {taskctx}, agently {agently})"
        )
    return taskctx / agently if label == "one put per record" else agently / taskctx


def target_for(label: str, size: int) -> float | None:
    """Issue 17's target for a row at ``size``: the one set at the largest size not above
    it (None under the smallest, and for rows without a target)."""
    by_size = TARGETS.get(label)
    if not by_size:
        return None
    fitting = [at for at in sorted(by_size) if at <= size]
    return by_size[fitting[-1]] if fitting else None


def _figure(step: str, kind_runs: Sequence[Mapping[str, Any]], size: int) -> float:
    """Median over rounds: seconds for a read, records/s for ``puts``."""
    samples = [run["times"][step] for run in kind_runs]
    median = float(statistics.median(samples))
    return size / median if step == "puts" else median


def build_report(
    runs: Mapping[str, Mapping[str, Mapping[str, Sequence[Mapping[str, Any]]]]],
    sizes: Sequence[int],
    *,
    judged: bool,
) -> dict[str, Any]:
    """Rows (figures, ratio, target, met), peak RSS and checks from every side's runs."""
    rows: list[dict[str, Any]] = []
    checks: dict[str, bool] = {}
    rss: dict[str, dict[str, int]] = {}
    for size in sizes:
        per_side = runs[str(size)]
        for label, kind, step in ROWS:
            taskctx = _figure(step, per_side["taskctx"][kind], size)
            agently = _figure(step, per_side["agently"][kind], size)
            value = ratio(label, taskctx, agently)
            target = target_for(label, size)
            met = None if target is None or not judged else value >= target
            unit = "records/s" if step == "puts" else "s"
            rows.append(
                {
                    "step": label,
                    "size": size,
                    "unit": unit,
                    "taskctx": taskctx,
                    "agently": agently,
                    "ratio": value,
                    "target": target,
                    "met": met,
                }
            )
        rss[str(size)] = {
            side: max(run["peak_rss_bytes"] for kind in KINDS for run in per_side[side][kind])
            for side in SIDES
        }
        for side in SIDES:
            for kind in KINDS:
                for run in per_side[side][kind]:
                    packages = run["packages"]
                    prefix = f"{side}_{kind}_{size}"
                    checks[f"{prefix}_blocks"] = checks.get(f"{prefix}_blocks", True) and all(
                        p["blocks"] > 0 for p in packages.values()
                    )
                    checks[f"{prefix}_warm_same_revision"] = checks.get(
                        f"{prefix}_warm_same_revision", True
                    ) and (packages["warm"]["revision"] == packages["first"]["revision"])
                    checks[f"{prefix}_change_new_revision"] = checks.get(
                        f"{prefix}_change_new_revision", True
                    ) and (packages["change"]["revision"] != packages["first"]["revision"])
    verdicts = [row["met"] for row in rows if row["met"] is not None]
    return {
        "rows": rows,
        "peak_rss_bytes": rss,
        "targets": {
            "applies": judged,
            "missed": [f"{r['step']} @ {r['size']}" for r in rows if r["met"] is False],
            "met": (all(verdicts) if verdicts else None) if judged else None,
        },
        "checks": checks,
    }


def _show(value: float, unit: str) -> str:
    if unit == "records/s":
        return f"{value:,.0f}/s"
    return f"{value:.2f} s" if value >= 1 else f"{value * 1e3:.1f} ms"


def summary_lines(result: Mapping[str, Any]) -> list[str]:
    """The ratios table (markdown) of issue 17, then peak RSS per side and size."""
    rows = result["rows"]
    sizes = sorted({row["size"] for row in rows})
    header = "| step (taskctx vs Agently) | " + " | ".join(f"{s:,}" for s in sizes) + " |"
    lines = [header, "|---|" + "---:|" * len(sizes)]
    for label, _, _ in ROWS:
        cells = []
        for size in sizes:
            row = next(r for r in rows if r["step"] == label and r["size"] == size)
            cell = (
                f"{_show(row['taskctx'], row['unit'])} vs {_show(row['agently'], row['unit'])}"
                f" = {row['ratio']:.1f}x"
            )
            if row["target"] is not None:
                verdict = {True: "met", False: "MISSED", None: "not judged"}[row["met"]]
                cell += f" (target {row['target']:g}x: {verdict})"
            cells.append(cell)
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    for size, sides in result["peak_rss_bytes"].items():
        parts = ", ".join(f"{side} {rss / 2**20:.0f} MiB" for side, rss in sides.items())
        lines.append(f"peak RSS at {int(size):,}: {parts}")
    failed = [name for name, ok in result["checks"].items() if not ok]
    if failed:
        lines.append(f"CHECKS FAILED: {', '.join(failed)}")
    return lines


def run_from_args(args: argparse.Namespace) -> int:
    """Run the peer bench the arguments name, print its table, write ``<out>/peer-<name>.json``;
    1 on a failed check, 2 on a missed target with ``--fail-on-miss``."""
    params = params_from_args(args)
    print(f"== peer {args.peer} {params.version}: sizes {list(params.sizes)}", flush=True)
    result = run_peer(params, quick=args.quick)
    path = write_result(args.out, f"peer-{args.peer}", result)
    for line in summary_lines(result):
        print(f"   {line}")
    print(f"   -> {path}", flush=True)
    if any(not ok for ok in result["checks"].values()):
        return 1
    return 2 if result["targets"]["met"] is False and args.fail_on_miss else 0
