"""taskctx-records: ``RecordStore.put`` beside its SQLite floor, interleaved in one run.

The floor is what SQLite alone costs for the same puts: raw ``sqlite3``, no taskctx, the
same pragmas (WAL, ``synchronous=NORMAL``, the store's autocheckpoint), the same schema and
the same statements a put runs (``BEGIN IMMEDIATE``, the ``SELECT`` of the largest revision
of the rows (schema version 4; the counter's ``UPDATE ... RETURNING`` before it), one
``records`` row, its ``record_scope`` rows, ``COMMIT``), with the content
encoded and hashed before the clock starts. Two floors: the schema the store creates today
(every migration) and the one before issue 17's put work (``MIGRATIONS[:2]``), so a run
shows both what taskctx adds over SQLite and what the schema change saved.

The three writers take turns in chunks of :data:`CHUNK` puts, so machine noise falls on all
of them alike; each size runs ``rounds`` times in fresh folders and the medians are kept.
"""

from __future__ import annotations

import gc
import hashlib
import json
import shutil
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from taskctx_records import RecordStore
from taskctx_records.backend import CURRENT_REVISION_SQL
from taskctx_records.schema import MIGRATIONS, NEW_PAGE_SIZE, WAL_AUTOCHECKPOINT_PAGES

from bench.common import FloorParams, result_header
from bench.index_build import peak_rss_bytes
from bench.records import SOURCE_SCOPE, _source_items

__all__ = ["NAME", "run", "summary_lines"]

NAME = "put_floor"
DESCRIPTION = (
    "taskctx-records: one put per record beside raw sqlite3 doing the same statements "
    "(schema now and before issue 17), interleaved, at 1,000 and 10,000 records"
)
CHUNK = 100
COUNTERLESS_VERSION = 4
"""The schema version from which a put reads its revision from the rows (no counter)."""
PRE_ISSUE_17_VERSION = 2
"""Schema version the store created before issue 17 (records as a rowid table, UNIQUE
revision, record_scope with a rowid and three B-trees)."""


FULL = FloorParams(rounds=3)
QUICK = FloorParams(sizes=(300,), rounds=1)


class _RawWriter:
    """One put per record in raw sqlite3: the statements ``write_versions`` runs."""

    def __init__(self, path: Path, version: int, page_size: int) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.conn.execute(f"PRAGMA page_size = {page_size}")
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_AUTOCHECKPOINT_PAGES}")
        self.conn.execute("PRAGMA synchronous = NORMAL")
        self.conn.execute("BEGIN IMMEDIATE")
        for number, statements in enumerate(MIGRATIONS[:version]):
            for statement in statements:
                self.conn.execute(statement)
            if number == 0:  # as the store's migration makes it, before any column is dropped
                self.conn.execute(
                    "INSERT INTO store_state (id, revision, store_id) VALUES (1, 0, 'x')"
                )
        self.conn.execute("COMMIT")
        # the revision a put takes: the counter's UPDATE before schema version 4, the
        # largest revision of the rows from it on (the statement the store runs)
        self.next_revision = (
            "UPDATE store_state SET revision = revision + 1 WHERE id = 1 RETURNING revision"
            if version < COUNTERLESS_VERSION
            else CURRENT_REVISION_SQL.replace(" AS revision", " + 1")
        )

    def put(self, row: tuple[Any, ...], pairs: Sequence[tuple[str, str]]) -> None:
        """One record in one transaction (``row``: every records column but the four a
        write derives: id, revision, valid_to, created_at)."""
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        (revision,) = conn.execute(self.next_revision).fetchone()
        record_id = f"rec_{revision:016d}"
        conn.execute(
            "INSERT INTO records (id, version, revision, valid_to, collection, kind, scope, "
            "source, meta, content_type, content, sha256, size, deleted, created_at) "
            "VALUES (?, 1, ?, ?, ?, ?, ?, NULL, '{}', 'json', ?, ?, ?, 0, ?)",
            (record_id, revision, 2**62, *row, "2026-01-01T00:00:00+00:00"),
        )
        conn.executemany(
            "INSERT INTO record_scope (id, version, revision, key, value, current) "
            "VALUES (?, 1, ?, ?, ?, 1)",
            [(record_id, revision, key, value) for key, value in pairs],
        )
        conn.execute("COMMIT")

    def records(self) -> int:
        """Rows written so far."""
        return int(self.conn.execute("SELECT COUNT(*) FROM records").fetchone()[0])


def _rows(items: Sequence[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """The encoded columns of each item, made before any clock starts."""
    rows = []
    for item in items:
        text = json.dumps(item["content"], sort_keys=True, separators=(",", ":"))
        data = text.encode()
        scope = json.dumps(item["scope"], sort_keys=True, separators=(",", ":"))
        rows.append(
            (
                item["collection"],
                item["kind"],
                scope,
                text,
                hashlib.sha256(data).hexdigest(),
                len(data),
            )
        )
    return rows


def _round(base: Path, count: int) -> tuple[dict[str, float], bool]:
    """Seconds each writer takes for ``count`` puts, taking turns chunk by chunk, and
    whether each wrote them all."""
    items = _source_items(0, count)
    rows = _rows(items)
    pairs = sorted((key, json.dumps(value)) for key, value in SOURCE_SCOPE.items())
    store = RecordStore(base / "taskctx")
    floor_now = _RawWriter(base / "floor-now.db", len(MIGRATIONS), NEW_PAGE_SIZE)
    floor_before = _RawWriter(base / "floor-before.db", PRE_ISSUE_17_VERSION, 4096)
    scope = dict(SOURCE_SCOPE)

    def taskctx_chunk(start: int) -> None:
        for item in items[start : start + CHUNK]:
            store.put(item["content"], collection=item["collection"], kind=item["kind"],
                      scope=scope)  # fmt: skip

    def raw_chunk(writer: _RawWriter) -> Callable[[int], None]:
        def chunk(start: int) -> None:
            for row in rows[start : start + CHUNK]:
                writer.put(row, pairs)

        return chunk

    writers = {
        "taskctx": taskctx_chunk,
        "floor_now": raw_chunk(floor_now),
        "floor_before": raw_chunk(floor_before),
    }
    spent = dict.fromkeys(writers, 0.0)
    gc.collect()
    for start in range(0, count, CHUNK):
        for name, write in writers.items():
            started = time.perf_counter()
            write(start)
            spent[name] += time.perf_counter() - started
    written = {
        "taskctx": store.revision,
        "floor_now": floor_now.records(),
        "floor_before": floor_before.records(),
    }
    store.close()
    floor_now.conn.close()
    floor_before.conn.close()
    return spent, all(rows == count for rows in written.values())


def run_params(params: FloorParams) -> dict[str, Any]:
    """Measure every size; medians of the rounds, in records per second."""
    sizes: dict[str, Any] = {}
    complete = True
    for count in params.sizes:
        samples: dict[str, list[float]] = {}
        for _ in range(params.rounds):
            base = Path(tempfile.mkdtemp(prefix="taskctx-put-floor-"))
            try:
                spent, wrote_all = _round(base, count)
            finally:
                shutil.rmtree(base, ignore_errors=True)
            complete &= wrote_all
            for name, seconds in spent.items():
                samples.setdefault(name, []).append(seconds)
        rps = {name: count / statistics.median(values) for name, values in samples.items()}
        sizes[str(count)] = {
            "records": count,
            "rps": rps,
            "seconds": samples,
            "taskctx_share_of_floor_now": rps["taskctx"] / rps["floor_now"],
            "peak_rss_bytes": peak_rss_bytes(),
        }
    return {"sizes": sizes, "checks": {"every_writer_wrote_every_record": complete}}


def run(quick: bool) -> dict[str, Any]:
    """The benchmark entry point."""
    params = QUICK if quick else FULL
    notes = [
        "rps: records/s from the median of the rounds; the writers take turns in "
        f"chunks of {CHUNK} puts in one process, each into its own fresh database",
        "floor_now: raw sqlite3, the current schema and page size, the statements a "
        "put runs, content encoded beforehand; floor_before: the same on schema "
        f"version {PRE_ISSUE_17_VERSION} in 4096-byte pages",
        "peak_rss_bytes: the process's peak after that size (all writers together)",
    ]
    return {
        **result_header(
            NAME,
            quick=quick,
            params={"sizes": list(params.sizes), "rounds": params.rounds, "chunk": CHUNK},
            notes=notes,
        ),
        "page_size_new": NEW_PAGE_SIZE,
        **run_params(params),
    }


def summary_lines(result: dict[str, Any]) -> list[str]:
    """One line per size: taskctx, the floor now and before, records/s."""
    lines = []
    for size in result["sizes"].values():
        rps = size["rps"]
        lines.append(
            f"{size['records']:>6} puts: taskctx {rps['taskctx']:,.0f}/s, floor now "
            f"{rps['floor_now']:,.0f}/s, floor before {rps['floor_before']:,.0f}/s "
            f"(taskctx = {size['taskctx_share_of_floor_now']:.0%} of the floor; "
            f"peak RSS {size['peak_rss_bytes'] / 2**20:.0f} MiB)"
        )
    return lines
