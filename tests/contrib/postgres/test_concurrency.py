"""Load and faults on a PostgreSQL record store: concurrent writer processes, pinned
snapshots that never change, a writer killed mid-batch, a server restarted mid-run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from typing import Any

import psycopg
import pytest
from taskctx_records import RecordStore, RecordStoreUnavailableError
from taskctx_records.request import query_request

from taskctx.errors import NotFoundError
from tests.pgcluster import Cluster

pytestmark = pytest.mark.postgres

WRITER = textwrap.dedent(
    """
    import sys
    from taskctx_records import RecordStore
    url, writer, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    store = RecordStore(url)
    print("ready", flush=True)
    sys.stdin.readline()  # every writer starts at once
    for i in range(count):
        store.put({"w": writer, "i": i}, collection="load", scope={"w": writer})
    store.close()
    """
)


def _all_pages(store: RecordStore, **query: Any) -> tuple[int, int, list[tuple[str, int]]]:
    """(pinned revision, considered, [(id, revision)]) of every page of one query."""
    page = store.query(page_size=500, **query)
    pinned, considered = page.revision, page.coverage.considered
    seen = [(record.id, record.revision) for record in page.records]
    while page.has_more:
        assert page.cursor is not None
        page = store.query_continue(page.cursor)
        seen += [(record.id, record.revision) for record in page.records]
    assert considered is not None
    return pinned, considered, seen


class _PinnedReader(threading.Thread):
    """Pins a query's first page again and again while writers run, and keeps each pin's
    revision, count and the cursor to finish it later (after many more commits)."""

    def __init__(self, url: str, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.store = RecordStore(url, mode="read_only")
        self.stop = stop
        self.pins: list[tuple[int, int, list[str], str | None]] = []
        self.errors: list[BaseException] = []

    def run(self) -> None:
        try:
            while not self.stop.is_set() and len(self.pins) < 40:
                page = self.store.query(collection="load", page_size=50)
                considered = page.coverage.considered
                assert considered is not None
                ids = [record.id for record in page.records]
                self.pins.append((page.revision, considered, ids, page.cursor))
                time.sleep(0.05)
        except BaseException as exc:  # pragma: no cover - reported by the test
            self.errors.append(exc)


@pytest.mark.slow
def test_eight_writer_processes_lose_nothing_and_pinned_reads_never_change(
    pg_database: str,
) -> None:
    """8 processes x 1,000 puts on their own connections: exactly 8,000 records with
    distinct ids and revisions 1..8,000, committed in revision order; every snapshot a
    reader pinned during the run reads, when finished afterwards, exactly what it counted
    then, and the same as a fresh read at that revision."""
    RecordStore(pg_database).close()
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, pg_database, str(n), "1000"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for n in range(8)
    ]
    for writer in writers:
        assert writer.stdout is not None
        assert writer.stdout.readline().strip() == "ready"
    stop = threading.Event()
    reader = _PinnedReader(pg_database, stop)
    reader.start()
    for writer in writers:
        assert writer.stdin is not None
        writer.stdin.write("go\n")
        writer.stdin.close()
    codes = [writer.wait(timeout=300) for writer in writers]
    for writer in writers:
        assert writer.stdout is not None
        writer.stdout.close()
    stop.set()
    reader.join(timeout=60)
    assert codes == [0] * 8
    assert reader.errors == []

    store = RecordStore(pg_database)
    pinned, considered, seen = _all_pages(store, collection="load")
    assert (pinned, considered, len(seen)) == (8_000, 8_000, 8_000)
    assert len({record_id for record_id, _ in seen}) == 8_000
    assert sorted(revision for _, revision in seen) == list(range(1, 8_001))
    for n in range(8):
        assert store.query(scope={"w": str(n)}).coverage.considered == 1_000
    with psycopg.connect(pg_database) as conn:
        tracked = conn.execute("SELECT current_setting('track_commit_timestamp')").fetchone()
        if tracked == ("on",):  # tests/pgcluster.py turns it on; another server may not
            stamps = conn.execute(
                "SELECT pg_xact_commit_timestamp(xmin) FROM records ORDER BY revision"
            ).fetchall()
            assert stamps == sorted(stamps)  # revision order is commit order

    assert len(reader.pins) >= 3
    assert any(0 < revision < 8_000 for revision, *_ in reader.pins)  # pinned mid-run
    for revision, counted, first_ids, cursor in reader.pins:
        ids = list(first_ids)
        while cursor is not None:
            page = reader.store.query_continue(cursor)
            assert page.revision == revision
            ids += [record.id for record in page.records]
            cursor = page.cursor if page.has_more else None
        assert len(ids) == counted
        at = store.query_at(query_request(collection="load").spec, revision)
        assert at.coverage.considered == counted
    reader.store.close()
    store.close()


BATCH = textwrap.dedent(
    """
    import sys
    from taskctx_records import RecordStore
    store = RecordStore(sys.argv[1])
    batch = sys.argv[2]
    print("go", flush=True)
    store.put_many(
        {"content": {"n": n, "pad": "x" * 200}, "collection": batch} for n in range(20_000)
    )
    print("done", flush=True)
    """
)


def _in_transaction(url: str) -> bool:
    """Whether a session other than this one has a transaction open on ``url``'s database."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND xact_start IS NOT NULL"
        ).fetchone()
    return bool(row and row[0])


def test_a_writer_killed_in_put_many_leaves_all_or_nothing(pg_database: str) -> None:
    """SIGKILL while put_many is writing: the batch is all there or not there, and the
    store takes writes (and the next batch) normally afterwards."""
    store = RecordStore(pg_database)
    store.put("before", collection="other")
    killed_mid_transaction = 0
    for attempt in range(3):
        batch = f"batch-{attempt}"
        child = subprocess.Popen(
            [sys.executable, "-c", BATCH, pg_database, batch], stdout=subprocess.PIPE, text=True
        )
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "go"
        deadline = time.monotonic() + 30
        while not _in_transaction(pg_database) and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.05 * attempt)
        if _in_transaction(pg_database):
            killed_mid_transaction += 1
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
        child.stdout.close()
        count = store.query(collection=batch).coverage.considered
        assert count in (0, 20_000), f"attempt {attempt}: {count} of 20,000 records"
    assert killed_mid_transaction >= 1
    assert store.get(store.put("after", collection="other").id).content == "after"


def test_a_server_restart_mid_run_loses_nothing_acknowledged(
    pg_private_cluster: Cluster,
) -> None:
    """The server crashes (immediate shutdown) and restarts while a writer runs: puts in
    flight fail with RecordStoreUnavailableError naming the server, every put that returned
    is there afterwards, operations succeed again on new connections, and a cursor pinned
    before the crash continues its snapshot."""
    cluster = pg_private_cluster
    with psycopg.connect(cluster.dsn, autocommit=True) as admin:
        admin.execute("CREATE DATABASE restart")
    url = cluster.dsn.rsplit("/", 1)[0] + "/restart?connect_timeout=2"
    store = RecordStore(url)
    store.put_many([{"content": f"old {n}", "collection": "c"} for n in range(120)])
    page = store.query(collection="c", page_size=50)
    acknowledged: list[str] = []
    failures: list[BaseException] = []
    stop = threading.Event()

    def write() -> None:
        n = 0
        while not stop.is_set():
            try:
                acknowledged.append(store.put(f"new {n}", collection="w").id)
            except RecordStoreUnavailableError as exc:
                failures.append(exc)
                time.sleep(0.05)
            except BaseException as exc:  # pragma: no cover - reported below
                failures.append(exc)
                return
            n += 1

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    time.sleep(0.5)
    cluster.halt(immediate=True)
    with pytest.raises(RecordStoreUnavailableError) as down:
        store.put("while down", collection="w")
    assert f"127.0.0.1:{cluster.port}" in str(down.value)
    cluster.start()
    time.sleep(1.0)
    stop.set()
    writer.join(timeout=60)
    assert all(isinstance(failure, RecordStoreUnavailableError) for failure in failures), failures
    assert acknowledged
    after = RecordStore(url, mode="read_only")
    for record_id in acknowledged:
        after.get(record_id)  # NotFoundError here would be an acknowledged put lost
    with pytest.raises(NotFoundError):
        after.get("rec_9999999999999999")
    ids = [record.id for record in page.records]
    while page.has_more:
        assert page.cursor is not None
        page = after.query_continue(page.cursor)
        ids += [record.id for record in page.records]
    assert len(ids) == len(set(ids)) == 120
    store.close()
    after.close()
