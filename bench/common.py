"""Helpers shared by every benchmark: timing statistics, machine facts, result files."""

from __future__ import annotations

import json
import os
import platform
import resource
import statistics
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from taskctx import ContextPackage

__all__ = [
    "REPO_ROOT",
    "RESULTS_DIR",
    "FloorParams",
    "git_facts",
    "machine_facts",
    "now_iso",
    "package_facts",
    "peak_rss_bytes",
    "reset_peak_rss",
    "result_header",
    "rss_bytes",
    "skipped_result",
    "summarize",
    "write_result",
]

REPO_ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = Path(__file__).resolve().parent / "results"


@dataclass(frozen=True)
class FloorParams:
    """What a bench beside a floor runs: record counts, and rounds per count."""

    sizes: tuple[int, ...] = (1_000, 10_000)
    rounds: int = 3


def summarize(samples: Sequence[float]) -> dict[str, Any]:
    """Median, min and max of timing samples in seconds, with every sample kept."""
    if not samples:
        raise ValueError("no samples to summarize")
    return {
        "median_s": statistics.median(samples),
        "min_s": min(samples),
        "max_s": max(samples),
        "samples_s": list(samples),
    }


def machine_facts() -> dict[str, Any]:
    """The interpreter and machine a result was measured on."""
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "executable": sys.executable,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
    }


def _git(*args: str) -> str | None:
    """Output of a read-only git command in the repo, or None if git is unavailable."""
    try:
        done = subprocess.run(
            ["git", "--no-optional-locks", *args],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip()


def git_facts() -> dict[str, Any]:
    """The commit measured and whether tracked files differ from it (None when unknown)."""
    commit = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no") if commit else None
    return {"commit": commit or None, "dirty": None if status is None else bool(status)}


def now_iso() -> str:
    """The current UTC time, ISO 8601, to the second."""
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


def write_result(out_dir: Path, name: str, result: dict[str, Any]) -> Path:
    """Write ``result`` as ``<out_dir>/<name>.json`` and return the path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.json"
    path.write_text(json.dumps(result, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    return path


def timing_line(phase: str, timing: Mapping[str, float], width: int) -> str:
    """``phase   median ms (min-max)`` as the summaries print it."""
    return (
        f"{phase:<{width}} {timing['median_s'] * 1e3:9.2f} ms "
        f"({timing['min_s'] * 1e3:.2f}-{timing['max_s'] * 1e3:.2f})"
    )


def ratio_verdict(ratio: float, limit: float, applies: bool) -> str:
    """``target < 5%: met`` (or MISSED; quick runs are not judged)."""
    verdict = "met" if ratio < limit else "MISSED"
    if not applies:
        verdict = f"{'under' if ratio < limit else 'over'} (quick run: not judged)"
    return f"target < {limit:.0%}: {verdict}"


def _status_bytes(field: str) -> int | None:
    """A ``kB`` field of /proc/self/status (``VmHWM``, ``VmRSS``) in bytes, None if absent."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(f"{field}:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def peak_rss_bytes() -> int:
    """This process's peak resident set size: VmHWM of /proc/self/status (it starts afresh
    at exec; ru_maxrss keeps the parent's peak across fork and exec), else ru_maxrss."""
    peak = _status_bytes("VmHWM")
    if peak is not None:
        return peak
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def rss_bytes() -> int | None:
    """This process's resident set size now (VmRSS), or None where /proc has no status."""
    return _status_bytes("VmRSS")


def reset_peak_rss() -> bool:
    """Start this process's peak RSS afresh (Linux: ``5`` to /proc/self/clear_refs resets
    VmHWM to the current RSS), so the next reading is the peak of what follows; False when
    the kernel does not allow it (the next reading then includes everything before)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as clear_refs:
            clear_refs.write("5")
    except OSError:
        return False
    return True


def result_header(
    name: str, *, quick: bool, params: Mapping[str, Any], notes: Sequence[str]
) -> dict[str, Any]:
    """The fields every result opens with: name, schema, time, sizes, machine, commit, notes."""
    return {
        "benchmark": name,
        "schema_version": 1,
        "created_utc": now_iso(),
        "quick": quick,
        "params": dict(params),
        "machine": machine_facts(),
        "git": git_facts(),
        "notes": list(notes),
    }


def skipped_result(
    name: str, *, quick: bool, params: Mapping[str, Any], notes: Sequence[str], reason: str
) -> dict[str, Any]:
    """The result of a bench that could not run here (its data is absent): why, no verdict."""
    return {
        **result_header(name, quick=quick, params=params, notes=notes),
        "skipped": True,
        "reason": reason,
        "targets": {"met": None, "applies": False},
        "checks": {},
    }


def package_facts(package: ContextPackage, binding: str) -> dict[str, Any]:
    """What a bench records of a package: blocks, characters used, the items the binding
    considered and the revision its snapshot pins."""
    coverage = package.source_coverage.get(binding)
    return {
        "blocks": len(package.blocks),
        "used_chars": package.used_chars,
        "considered": None if coverage is None else coverage.considered,
        "revision": package.snapshot.sources.get(binding),
    }
