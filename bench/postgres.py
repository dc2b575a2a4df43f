"""The record store on PostgreSQL beside SQLite, in one run (issue 19).

Per backend: ``put`` per record, ``put_many``, query page 1 and page 1,000, and the
``record_store`` source's first and warm read at 10,000 and 100,000 records (the fts
provider ranks; its index is local to the machine on both backends). The server is the
one ``TASKCTX_PG_DSN`` names, else a throwaway cluster this bench starts from Debian's
packages (``tests/pgcluster.py``: fsync off, on this machine) and stops. Reported, not
judged: the issue sets no targets for these. ``--quick`` uses small sizes.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from taskctx_records import RecordStore

from bench.common import result_header, skipped_result, summarize
from bench.records import SOURCE_BUDGET, SOURCE_QUERY, SOURCE_SCOPE, _timed
from bench.records import _fill as _fill_batches
from bench.records import _source_items as _items
from taskctx import PluginHost, TaskContext

__all__ = [
    "DESCRIPTION",
    "FULL",
    "NAME",
    "QUICK",
    "Databases",
    "PostgresParams",
    "run",
    "server_dsn",
    "summary_lines",
    "throwaway_databases",
    "unless_missing",
]

NAME = "postgres"
DESCRIPTION = (
    "taskctx-postgres beside SQLite: put, put_many, query page 1 / page 1,000, "
    "record_store source first and warm reads at 10,000 and 100,000 records"
)
BACKENDS = ("sqlite", "postgresql")
SCOPE, QUERY, BUDGET = SOURCE_SCOPE, SOURCE_QUERY, SOURCE_BUDGET
HOST_ALLOW = ["taskctx-records", "taskctx-fts", "taskctx-postgres"]


@dataclass(frozen=True)
class PostgresParams:
    """Sizes: puts, put_many records and batch, the query corpus and depth, source sizes."""

    puts: int = 2_000
    put_many: int = 20_000
    batch_size: int = 5_000
    query_records: int = 50_000
    page_size: int = 50
    deep_page: int = 1_000
    repeats: int = 20
    source_sizes: tuple[int, ...] = (10_000, 100_000)
    warm_rounds: int = 5


FULL = PostgresParams()
QUICK = PostgresParams(
    puts=100,
    put_many=1_000,
    batch_size=500,
    query_records=1_000,
    page_size=10,
    deep_page=100,
    repeats=3,
    source_sizes=(300,),
    warm_rounds=2,
)

NOTES = (
    "Both backends run the same steps in one process, one after the other, each into a "
    "fresh store (a folder for SQLite, a new database for PostgreSQL on 127.0.0.1).",
    "put: one call per record (one transaction each); put_many: calls of batch_size items.",
    "records: bench.records' source records (JSON {'i', 'status', 'text' ~40 chars} in "
    "collection 'obs', all in one scope).",
    "page_1: store.query(collection='obs', page_size) (with its COUNT); page_<deep>: one "
    "query_continue from the cursor of the page before it, reached untimed; medians of "
    "`repeats`.",
    "source first read: a new TaskContext (fresh state_dir and index) + attach "
    "store.source(scope) + reader + read(query) with the fts provider; warm: a fresh reader "
    "on the same context, nothing changed (median of warm_rounds).",
    "PostgreSQL server: TASKCTX_PG_DSN, else a throwaway cluster (fsync=off) started by "
    "this bench; SQLite: WAL, synchronous=NORMAL, on the same disk.",
)


class Databases:
    """Fresh databases on a server, each dropped by :func:`throwaway_databases`."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.names: list[str] = []

    def new(self) -> str:
        """The URL of a new, empty database."""
        import psycopg

        name = f"taskctx_bench_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.dsn, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        self.names.append(name)
        return self.dsn.rsplit("/", 1)[0] + "/" + name


@contextmanager
def throwaway_databases(dsn: str) -> Iterator[Databases]:
    """Databases made on the server of ``dsn`` while the block runs, dropped after it."""
    import psycopg

    databases = Databases(dsn)
    try:
        yield databases
    finally:
        with psycopg.connect(dsn, autocommit=True) as admin:
            for name in databases.names:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class _Roots:
    """Fresh store roots: folders under ``base``, or new databases on a server."""

    def __init__(self, base: Path, databases: Databases) -> None:
        self.base = base
        self.databases = databases

    def new(self, backend: str) -> str:
        if backend == "sqlite":
            return str(self.base / f"store-{uuid.uuid4().hex[:8]}")
        return self.databases.new()


def _store(root: str, host: PluginHost) -> RecordStore:
    return RecordStore(root, host=host)


def _writes(roots: _Roots, backend: str, host: PluginHost, p: PostgresParams) -> dict[str, Any]:
    store = _store(roots.new(backend), host)
    items = _items(0, p.puts)

    def put_each() -> None:
        for item in items:
            store.put(item["content"], collection="obs", scope=item["scope"])

    put_s = _timed(put_each)
    store.close()
    store = _store(roots.new(backend), host)
    many_s = _timed(lambda: _fill_batches(store, p.put_many, p.batch_size))
    assert store.revision == p.put_many
    store.close()
    return {
        "put": {"records": p.puts, "seconds": put_s, "rps": p.puts / put_s},
        "put_many": {"records": p.put_many, "seconds": many_s, "rps": p.put_many / many_s},
    }


def _pages(roots: _Roots, backend: str, host: PluginHost, p: PostgresParams) -> dict[str, Any]:
    store = _store(roots.new(backend), host)
    _fill_batches(store, p.query_records, p.batch_size)
    first_samples = [
        _timed(lambda: store.query(collection="obs", page_size=p.page_size))
        for _ in range(p.repeats)
    ]
    page = store.query(collection="obs", page_size=p.page_size)
    for _ in range(p.deep_page - 2):
        assert page.cursor is not None
        page = store.query_continue(page.cursor)
    cursor = page.cursor or ""
    deep_samples = [_timed(lambda: store.query_continue(cursor)) for _ in range(p.repeats)]
    deep = store.query_continue(cursor)
    store.close()
    return {
        "page_1": summarize(first_samples),
        f"page_{p.deep_page}": summarize(deep_samples),
        "deep_page_number_ok": deep.page == p.deep_page,
    }


def _source(
    roots: _Roots, backend: str, host: PluginHost, p: PostgresParams, size: int, base: Path
) -> dict[str, Any]:
    store = _store(roots.new(backend), host)
    _fill_batches(store, size, p.batch_size)
    context = TaskContext("bench", host=host, state_dir=base / f"ctx-{uuid.uuid4().hex[:8]}")

    def first() -> None:
        context.attach(store.source(scope=SCOPE), binding_id="records")
        context.reader("bench", budget=BUDGET).read(QUERY)

    first_s = _timed(first)
    warm = [
        _timed(lambda: context.reader("bench", budget=BUDGET).read(QUERY))
        for _ in range(p.warm_rounds)
    ]
    package = context.reader("bench", budget=BUDGET).read(QUERY)
    coverage = package.source_coverage["records"]
    context.index.close()
    store.close()
    return {
        "records": size,
        "first_read_s": first_s,
        "warm_read": summarize(warm),
        "blocks": len(package.blocks),
        "considered_all": coverage.considered == size,
        "provider": context.index_provider.name,
    }


@contextmanager
def server_dsn() -> Iterator[str]:
    """``TASKCTX_PG_DSN``, else the DSN of a throwaway cluster stopped after the block."""
    dsn = os.environ.get("TASKCTX_PG_DSN")
    if dsn:
        yield dsn
        return
    from tests.pgcluster import Cluster

    cluster = Cluster.create()
    try:
        yield cluster.dsn
    finally:
        cluster.stop()


def run_postgres(p: PostgresParams, *, quick: bool) -> dict[str, Any]:
    """Every step on both backends; the PostgreSQL over SQLite ratio of each."""
    host = PluginHost(allow=HOST_ALLOW)
    by_backend: dict[str, dict[str, Any]] = {}
    with (
        server_dsn() as dsn,
        throwaway_databases(dsn) as databases,
        tempfile.TemporaryDirectory(prefix="taskctx-bench-pg-") as tmp,
    ):
        roots = _Roots(Path(tmp), databases)
        for backend in BACKENDS:
            by_backend[backend] = {
                "writes": _writes(roots, backend, host, p),
                "pages": _pages(roots, backend, host, p),
                "source": [
                    _source(roots, backend, host, p, size, Path(tmp)) for size in p.source_sizes
                ],
            }
    return {
        **result_header(NAME, quick=quick, params=asdict(p), notes=NOTES),
        "backends": by_backend,
        "ratios_postgres_over_sqlite": _ratios(by_backend, p),
        "targets": {"met": None, "applies": False},
        "checks": _checks(by_backend),
    }


def _ratios(by_backend: dict[str, dict[str, Any]], p: PostgresParams) -> dict[str, float]:
    """PostgreSQL time over SQLite time per step (above 1: PostgreSQL is slower)."""
    sq, pg = by_backend["sqlite"], by_backend["postgresql"]
    ratios = {
        "put_s": pg["writes"]["put"]["seconds"] / sq["writes"]["put"]["seconds"],
        "put_many_s": pg["writes"]["put_many"]["seconds"] / sq["writes"]["put_many"]["seconds"],
    }
    for page in ("page_1", f"page_{p.deep_page}"):
        ratios[page] = pg["pages"][page]["median_s"] / sq["pages"][page]["median_s"]
    for s_sq, s_pg in zip(sq["source"], pg["source"], strict=True):
        n = s_sq["records"]
        ratios[f"source_first_{n}"] = s_pg["first_read_s"] / s_sq["first_read_s"]
        ratios[f"source_warm_{n}"] = s_pg["warm_read"]["median_s"] / s_sq["warm_read"]["median_s"]
    return ratios


def _checks(by_backend: dict[str, dict[str, Any]]) -> dict[str, bool]:
    checks: dict[str, bool] = {}
    for backend, result in by_backend.items():
        checks[f"{backend}_deep_page_number"] = result["pages"]["deep_page_number_ok"]
        checks[f"{backend}_source_considers_all"] = all(
            s["considered_all"] and s["blocks"] > 0 for s in result["source"]
        )
    return checks


def unless_missing(
    name: str, notes: tuple[str, ...], params: Any, quick: bool,
    measure: Callable[[], dict[str, Any]],
) -> dict[str, Any]:  # fmt: skip
    """``measure()``, or a skipped result naming the missing import (taskctx-postgres,
    psycopg) of a bench that needs PostgreSQL."""
    try:
        return measure()
    except ImportError as error:
        return skipped_result(
            name, quick=quick, params=asdict(params), notes=notes,
            reason=f"taskctx-postgres is not installed ({error})",
        )  # fmt: skip


def run(quick: bool) -> dict[str, Any]:
    """The benchmark entry point of ``python -m bench``."""
    params = QUICK if quick else FULL
    return unless_missing(NAME, NOTES, params, quick, lambda: run_postgres(params, quick=quick))


def summary_lines(result: dict[str, Any]) -> list[str]:
    """Per step: SQLite, PostgreSQL and the ratio."""
    if result.get("skipped"):
        return [f"skipped: {result['reason']}"]
    sq, pg = result["backends"]["sqlite"], result["backends"]["postgresql"]
    lines = [
        f"{'step':<22} {'sqlite':>12} {'postgresql':>12} {'pg/sqlite':>10}",
    ]
    ratios = result["ratios_postgres_over_sqlite"]
    for step in ("put", "put_many"):
        lines.append(
            f"{step + ' records/s':<22} {sq['writes'][step]['rps']:>12.0f} "
            f"{pg['writes'][step]['rps']:>12.0f} {ratios[step + '_s']:>9.2f}x"
        )
    for page, timing in sq["pages"].items():
        if isinstance(timing, dict):
            lines.append(
                f"{page + ' ms':<22} {timing['median_s'] * 1e3:>12.2f} "
                f"{pg['pages'][page]['median_s'] * 1e3:>12.2f} {ratios[page]:>9.2f}x"
            )
    for s_sq, s_pg in zip(sq["source"], pg["source"], strict=True):
        n = s_sq["records"]
        lines.append(
            f"{f'first read {n} s':<22} {s_sq['first_read_s']:>12.2f} "
            f"{s_pg['first_read_s']:>12.2f} {ratios[f'source_first_{n}']:>9.2f}x"
        )
        lines.append(
            f"{f'warm read {n} ms':<22} {s_sq['warm_read']['median_s'] * 1e3:>12.2f} "
            f"{s_pg['warm_read']['median_s'] * 1e3:>12.2f} {ratios[f'source_warm_{n}']:>9.2f}x"
        )
    return lines
