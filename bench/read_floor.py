"""taskctx-records: a first read of a record store beside its SQLite floor, interleaved.

The floor is the least a first read of the scope can cost with SQLite alone: raw
``sqlite3`` selects the scope's current records, renders each as the source does (pretty
JSON), inserts title and body into a new FTS5 table (``unicode61``, no stemming) in one
transaction and runs one ``bm25`` MATCH for the page's 12 hits. It validates nothing, makes
no descriptors, keeps no versions and delivers no page: what is left is reading, rendering
and indexing the bytes. taskctx does the same read through its public API (a new
TaskContext, the fts provider, the store's index dropped first, budget 6,000 characters and
12 blocks), so ``taskctx_over_floor`` says how far a first read is above what SQLite needs.

Issue 17 asks a first read of 10,000 records to be 50 times faster than Agently's: the
floor says how much of that a SQLite-backed read can reach at all on this machine.
"""

from __future__ import annotations

import gc
import json
import shutil
import sqlite3
import statistics
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from taskctx_records import RecordStore
from taskctx_records.schema import OPEN_END

from bench.common import FloorParams, package_facts, result_header
from bench.peer_taskctx import HOST_ALLOW
from bench.records import SOURCE_BUDGET, SOURCE_QUERY, SOURCE_SCOPE, _source_items
from taskctx import PluginHost, TaskContext

__all__ = ["DESCRIPTION", "FULL", "NAME", "QUICK", "run", "summary_lines"]

NAME = "read_floor"
DESCRIPTION = (
    "taskctx-records: a first read beside raw sqlite3 + FTS5 doing the least such a read "
    "needs, interleaved, at 1,000 and 10,000 records"
)
BINDING = "records"
NOTES = (
    "Each size: one store of bench.records' source-read records (one scope) written by "
    "RecordStore.put; then rounds of taskctx and the floor in turns (the order alternates), "
    "medians kept.",
    "taskctx: the store's FTS index folder is dropped, untimed; timed: new TaskContext "
    "(fresh state_dir), attach store.source(scope=...), new reader, read(query) with "
    "PluginHost(allow=[taskctx-records, taskctx-fts]).",
    "floor: raw sqlite3 on the store's file: the scope's current records by id (the "
    "record_scope key), json.dumps(indent=2, sort_keys=True) of each content, one "
    "executemany into a new FTS5 table in one transaction (WAL, synchronous=NORMAL), one "
    "MATCH of the query's words OR'ed, ORDER BY bm25 LIMIT 12.",
)


FULL = FloorParams(rounds=5)
QUICK = FloorParams(sizes=(300,), rounds=1)

_SCOPE_ROWS = (
    "SELECT r.id, r.collection, r.kind, r.content FROM record_scope s JOIN records r "
    "ON r.id = s.id AND r.version = s.version "
    "WHERE s.key = ? AND s.value = ? AND s.current = 1 AND r.valid_to = ? AND r.deleted = 0 "
    "ORDER BY r.id"
)
"""The current version of each record in the scope (the store's visibility rule at its
latest revision: ``valid_to`` open, not a tombstone)."""


def _query_words(query: str) -> str:
    words = "".join(c if c.isalnum() else " " for c in query).split()
    return " OR ".join(f'"{word}"' for word in words if len(word) > 2)


def floor_read(store_file: Path, index_file: Path) -> int:
    """The floor's first read into a new ``index_file``; the number of hits."""
    ((key, value),) = SOURCE_SCOPE.items()
    source = sqlite3.connect(store_file)
    index = sqlite3.connect(index_file, isolation_level=None)
    try:
        rows = source.execute(_SCOPE_ROWS, (key, json.dumps(value), OPEN_END)).fetchall()
        documents = [
            (
                f"{collection}/{kind} {record_id}",
                json.dumps(json.loads(content), indent=2, sort_keys=True, ensure_ascii=False),
            )
            for record_id, collection, kind, content in rows
        ]
        index.execute("PRAGMA journal_mode = WAL")
        index.execute("PRAGMA synchronous = NORMAL")
        index.execute("CREATE VIRTUAL TABLE fts USING fts5(title, body, tokenize = 'unicode61')")
        index.execute("BEGIN")
        index.executemany("INSERT INTO fts (title, body) VALUES (?, ?)", documents)
        index.execute("COMMIT")
        hits = index.execute(
            "SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY bm25(fts, 2.0, 1.0) LIMIT 12",
            (_query_words(SOURCE_QUERY),),
        ).fetchall()
    finally:
        index.close()
        source.close()
    return len(hits)


def _taskctx_read(store: RecordStore, host: PluginHost, state_dir: Path) -> dict[str, Any]:
    context = TaskContext("bench-read-floor", host=host, state_dir=state_dir)
    try:
        context.attach(store.source(scope=SOURCE_SCOPE), binding_id=BINDING)
        package = context.reader("bench-agent", budget=SOURCE_BUDGET).read(SOURCE_QUERY)
        return package_facts(package, BINDING)
    finally:
        context.index.close()


def _size(count: int, rounds: int, base: Path) -> dict[str, Any]:
    store = RecordStore(base / "store")
    for item in _source_items(0, count):
        store.put(item["content"], collection=item["collection"], kind=item["kind"],
                  scope=SOURCE_SCOPE)  # fmt: skip
    host = PluginHost(allow=list(HOST_ALLOW["lexical"]["records"]))
    index_home = store.source(scope=SOURCE_SCOPE).index_directory.path
    _taskctx_read(store, host, base / "warm-up")  # imports, plugin loading
    seconds: dict[str, list[float]] = {"taskctx": [], "floor": []}
    facts: dict[str, Any] = {}
    hits = 0
    for number in range(rounds):
        order = ("taskctx", "floor") if number % 2 == 0 else ("floor", "taskctx")
        for side in order:
            shutil.rmtree(index_home, ignore_errors=True)
            gc.collect()
            started = time.perf_counter()
            if side == "taskctx":
                facts = _taskctx_read(store, host, base / f"ctx-{number}")
            else:
                hits = floor_read(store.path, base / f"floor-{number}.db")
            seconds[side].append(time.perf_counter() - started)
    store.close()
    medians = {side: statistics.median(values) for side, values in seconds.items()}
    return {
        "records": count,
        "median_s": medians,
        "seconds": seconds,
        "taskctx_over_floor": medians["taskctx"] / medians["floor"],
        "checks": {
            "taskctx_considered_every_record": facts.get("considered") == count,
            "taskctx_delivered_a_full_page": facts.get("blocks") == SOURCE_BUDGET.max_blocks,
            "floor_found_a_full_page": hits == SOURCE_BUDGET.max_blocks,
        },
    }


def run_read_floor(params: FloorParams, *, quick: bool) -> dict[str, Any]:
    """Every size of ``params``, each in a fresh folder; the JSON result."""
    sizes: dict[str, Any] = {}
    checks: dict[str, bool] = {}
    for count in params.sizes:
        with tempfile.TemporaryDirectory(prefix="taskctx-bench-read-floor-") as temp:
            measured = _size(count, params.rounds, Path(temp))
        checks.update({f"{name}_{count}": ok for name, ok in measured.pop("checks").items()})
        sizes[str(count)] = measured
    return {
        **result_header(NAME, quick=quick, params=asdict(params), notes=NOTES),
        "sizes": sizes,
        "checks": checks,
    }


def run(quick: bool) -> dict[str, Any]:
    """The benchmark entry point of ``python -m bench``."""
    return run_read_floor(QUICK if quick else FULL, quick=quick)


def summary_lines(result: dict[str, Any]) -> list[str]:
    """One line per size: taskctx, the floor, and how many times the floor taskctx takes."""
    lines = []
    for size in result["sizes"].values():
        median = size["median_s"]
        lines.append(
            f"{size['records']:>6} records: first read taskctx {median['taskctx'] * 1e3:.1f} ms, "
            f"floor {median['floor'] * 1e3:.1f} ms (taskctx = {size['taskctx_over_floor']:.1f}x "
            "the floor)"
        )
    return lines
