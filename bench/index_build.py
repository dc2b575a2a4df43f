"""The cold build of the FTS index in MB/s, beside the floor of this machine.

A folder of generated text files (``bench.workspace.make_files``: 2-4 KB of plain text,
Markdown and Python) is indexed from nothing by ``FtsProvider``: every file read, hashed
(its content version), decoded and handed to ``apply`` on a fresh ``fts.db`` in the
chunks a sync hands over (``taskctx.indexfeed.chunked``). The floor is what no indexer
can beat on this machine: reading the same bytes and hashing them with sha256. Floor
and build alternate round by round in one process, so the ratio build/floor compares
like with like on a noisy machine. Issue 17 ("Indexing throughput") asks for the
figures; it sets no target, so ``targets.met`` is null.
"""

from __future__ import annotations

import gc
import hashlib
import resource
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from taskctx_fts import FtsProvider
from taskctx_fts.tokenize import clear_caches

from bench.common import peak_rss_bytes, result_header, summarize
from bench.workspace import make_files, write_tree
from taskctx.indexfeed import chunked
from taskctx.protocols import IndexDocument, PartitionKey

__all__ = [
    "DESCRIPTION",
    "FULL",
    "NAME",
    "QUICK",
    "IndexBuildParams",
    "peak_rss_bytes",
    "run",
    "run_index_build",
    "summary_lines",
]

NAME = "index_build"
DESCRIPTION = "cold build of the FTS index in MB/s beside the floor (read + sha256)"
KEY = PartitionKey(binding_id="bench", source_identity="bench:index_build", provider="fts")
QUERY = "why does the upload time out after a change to the index revision?"


@dataclass(frozen=True)
class IndexBuildParams:
    """Corpus size and rounds of one run (each round: one floor pass, one build)."""

    files: int = 10_000
    rounds: int = 3
    min_bytes: int = 2048
    max_bytes: int = 4096
    seed: int = 20_240_611


FULL = IndexBuildParams()
QUICK = IndexBuildParams(files=500, rounds=2)

NOTES = (
    "The folder is bench.workspace.make_files(files, seed, 2048, 4096) written to a temp dir "
    "(untimed); ASCII, so bytes = characters; MB = 10^6 bytes of file content.",
    "floor: for every file in path order, Path.read_bytes() and hashlib.sha256(...).hexdigest().",
    "build: the same read and sha256 (the content version), bytes.decode('utf-8'), one "
    "IndexDocument per file (doc_id = path = the relative path, no title), then "
    "FtsProvider().open_partition(key, <fresh dir>).apply(chunk, []) for each chunk of "
    "taskctx.indexfeed.chunked(documents) (at most 16,000,000 characters and 10,000 "
    "documents, as a sync hands them over), then close(): tokenizing, the FTS5 writes, "
    "FTS5 optimize and the WAL checkpoint (after 1,000 documents, then each time the "
    "index has doubled since). "
    "The tokenizer's word caches are cleared first (clear_caches()), so every build is cold.",
    "apply: the part of build inside apply() alone; its MB/s counts the same file bytes.",
    "Rounds alternate which of floor and build goes first; gc.collect() before each pass; "
    "figures are medians over rounds; ratio = build MB/s / floor MB/s (1.0 = the floor).",
    "peak RSS: the process's high-water mark (VmHWM from /proc/self/status, reset through "
    "/proc/self/clear_refs before each pass where Linux allows it; otherwise ru_maxrss, "
    "the peak since the process started). The corpus held in memory is part of every figure.",
)


def _reset_peak() -> bool:
    """Reset the peak RSS to the current RSS (Linux); whether it could be."""
    try:
        Path("/proc/self/clear_refs").write_text("5", encoding="ascii")
    except OSError:
        return False
    return True


def _floor(root: Path, paths: Sequence[str]) -> int:
    """Read and hash every file; the bytes read."""
    total = 0
    for rel in paths:
        data = (root / rel).read_bytes()
        hashlib.sha256(data).hexdigest()
        total += len(data)
    return total


def _build(root: Path, paths: Sequence[str], directory: Path) -> dict[str, Any]:
    """Read, hash, decode and index every file into a fresh partition in ``directory``."""
    clear_caches()
    started = time.perf_counter()
    documents = []
    for rel in paths:
        data = (root / rel).read_bytes()
        documents.append(
            IndexDocument(
                doc_id=rel,
                path=rel,
                text=data.decode("utf-8"),
                content_version=hashlib.sha256(data).hexdigest(),
            )
        )
    applied = time.perf_counter()
    partition = FtsProvider().open_partition(KEY, directory)
    try:
        for chunk in chunked(documents):  # as a sync hands them over
            partition.apply(chunk, [])
        ended = time.perf_counter()
        stats = dict(partition.stats())
        hits = len(partition.search(QUERY, None, 10).hits)
    finally:
        partition.close()
    return {
        "seconds": ended - started,
        "apply_seconds": ended - applied,
        "documents": stats["documents"],
        "tokens": stats["tokens"],
        "terms": stats["terms"],
        "bytes_on_disk": stats["bytes_on_disk"],
        "hits": hits,
    }


def _pass(work: Callable[[], Any]) -> tuple[Any, float, int]:
    """Run ``work`` after a gc.collect(): its value, seconds, and peak RSS during it."""
    gc.collect()
    _reset_peak()
    started = time.perf_counter()
    value = work()
    return value, time.perf_counter() - started, peak_rss_bytes()


def run_index_build(params: IndexBuildParams, *, quick: bool = False) -> dict[str, Any]:
    """Generate the folder, then alternate floor passes and cold builds; medians and ratio."""
    files = make_files(params.files, params.seed, params.min_bytes, params.max_bytes)
    paths = sorted(files)
    size = sum(len(text.encode("utf-8")) for text in files.values())
    floors: list[float] = []
    builds: list[dict[str, Any]] = []
    floor_rss: list[int] = []
    build_rss: list[int] = []
    peak_resettable = _reset_peak()
    with tempfile.TemporaryDirectory(prefix="taskctx-bench-index-build-") as temp:
        root = Path(temp) / "corpus"
        write_tree(root, files)
        del files
        _floor(root, paths)  # untimed: the page cache holds the folder for every pass
        for number in range(params.rounds):

            def floor() -> int:
                return _floor(root, paths)

            def build(number: int = number) -> dict[str, Any]:
                return _build(root, paths, Path(temp) / f"index-{number}")

            order = (floor, build) if number % 2 == 0 else (build, floor)
            for work in order:
                value, seconds, peak = _pass(work)
                if work is floor:
                    floors.append(seconds)
                    floor_rss.append(peak)
                    if value != size:
                        raise AssertionError(f"floor read {value} bytes, expected {size}")
                else:
                    builds.append(value)
                    build_rss.append(peak)
    mb = size / 1e6
    floor_mbps = mb / statistics.median(floors)
    build_s = [b["seconds"] for b in builds]
    apply_s = [b["apply_seconds"] for b in builds]
    build_mbps = mb / statistics.median(build_s)
    first = builds[0]
    checks = {
        "every_file_indexed": all(b["documents"] == len(paths) for b in builds),
        "builds_agree": all(
            (b["tokens"], b["terms"]) == (first["tokens"], first["terms"]) for b in builds
        ),
        "query_finds_documents": all(b["hits"] > 0 for b in builds),
    }
    return {
        **result_header(NAME, quick=quick, params=asdict(params), notes=NOTES),
        "corpus": {"files": len(paths), "bytes": size},
        "floor": {"mb_per_s": floor_mbps, **summarize(floors)},
        "build": {
            "mb_per_s": build_mbps,
            **summarize(build_s),
            "apply": {"mb_per_s": mb / statistics.median(apply_s), **summarize(apply_s)},
            "tokens": first["tokens"],
            "terms": first["terms"],
            "bytes_on_disk": first["bytes_on_disk"],
        },
        "ratio_build_over_floor": build_mbps / floor_mbps,
        "peak_rss_bytes": {
            "floor": max(floor_rss),
            "build": max(build_rss),
            "process": max(
                int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024,
                *floor_rss,
                *build_rss,
            ),
            "per_pass_reset": peak_resettable,
        },
        "checks": checks,
        "targets": {"met": None, "applies": False},
    }


def run(quick: bool) -> dict[str, Any]:
    """The registry entry point: 10,000 files, or 500 for smoke runs."""
    return run_index_build(QUICK if quick else FULL, quick=quick)


def summary_lines(result: dict[str, Any]) -> list[str]:
    """Floor, build and apply MB/s, the ratio, peak RSS."""
    corpus, floor, build = result["corpus"], result["floor"], result["build"]
    rss = result["peak_rss_bytes"]
    lines = [
        f"{corpus['files']} files, {corpus['bytes'] / 1e6:.1f} MB; "
        f"{len(floor['samples_s'])} rounds, medians",
        f"floor (read + sha256) {floor['mb_per_s']:.1f} MB/s ({floor['median_s']:.2f} s)",
        f"cold build {build['mb_per_s']:.2f} MB/s ({build['median_s']:.2f} s; apply alone "
        f"{build['apply']['mb_per_s']:.2f} MB/s), ratio build/floor "
        f"{result['ratio_build_over_floor']:.4f}",
        f"index {build['bytes_on_disk'] / 1e6:.1f} MB on disk, {build['terms']} terms, "
        f"{build['tokens']} tokens",
        f"peak RSS floor {rss['floor'] / 2**20:.0f} MiB, build {rss['build'] / 2**20:.0f} MiB, "
        f"process {rss['process'] / 2**20:.0f} MiB",
    ]
    failed = [name for name, ok in result["checks"].items() if not ok]
    if failed:
        lines.append(f"CHECKS FAILED: {', '.join(failed)}")
    return lines
