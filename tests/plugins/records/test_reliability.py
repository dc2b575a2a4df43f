"""Reliability: concurrent writers, corrupt files, migrations, read_only mode."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from taskctx_records import RecordStore, RecordStoreCorruptError, RecordStoreError
from taskctx_records.schema import SCHEMA_VERSION, open_database

from taskctx.errors import NotFoundError, PolicyError, TaskCtxError

WRITER = textwrap.dedent(
    """
    import sys
    from taskctx_records import RecordStore
    store = RecordStore(sys.argv[1])
    for i in range(int(sys.argv[3])):
        store.put({"writer": sys.argv[2], "i": i}, collection="load", scope={"w": sys.argv[2]})
        if i % 5 == 0:  # events take revisions from the same store revision
            store.append_event("load-" + sys.argv[2], "wrote", {"i": i})
    """
)


def test_four_processes_lose_nothing(store_root: Path | str) -> None:
    """4 processes x 250 puts (and 50 events) at once: 1,000 records and 200 events with
    1,200 distinct revisions, the store revision the largest of them."""
    RecordStore(store_root).close()
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(store_root), str(n), "250"])
        for n in range(4)
    ]
    assert [proc.wait(timeout=120) for proc in procs] == [0, 0, 0, 0]
    store = RecordStore(store_root)
    assert store.revision == 1_200
    assert store.query(collection="load").coverage.considered == 1_000
    with store.backend.read() as conn:
        revisions = conn.execute(
            "SELECT COUNT(DISTINCT revision) AS n FROM "
            "(SELECT revision FROM records UNION ALL SELECT revision FROM events) AS written"
        ).fetchone()["n"]
    assert revisions == 1_200
    for n in range(4):
        assert store.query(scope={"w": str(n)}).coverage.considered == 250


def _written(root: Path) -> Path:
    store = RecordStore(root)
    store.put_many([{"content": "x" * 2_000, "collection": "c"} for _ in range(200)])
    store.close()
    return store.path


def test_truncated_database_names_the_file(tmp_path: Path) -> None:
    """A truncated database raises RecordStoreCorruptError naming the file."""
    path = _written(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(RecordStoreCorruptError, match="truncated") as error:
        RecordStore(tmp_path)
    assert str(path) in str(error.value)
    assert error.value.path == str(path)
    assert isinstance(error.value, TaskCtxError)


def test_a_header_ahead_of_the_file_with_a_pending_wal_is_left_to_sqlite(tmp_path: Path) -> None:
    """A checkpoint killed midway leaves the header ahead of the file and an intact WAL:
    the size check defers to SQLite's WAL replay instead of calling the file truncated."""
    from taskctx_records.schema import check_file

    path = _written(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(RecordStoreCorruptError, match="truncated"):
        check_file(path)
    wal = path.with_name(path.name + "-wal")
    wal.write_bytes(b"\0" * 32)
    check_file(path)  # deferred: SQLite replays (or itself reports) the log on open
    wal.write_bytes(b"")
    with pytest.raises(RecordStoreCorruptError, match="truncated"):
        check_file(path)


def test_garbage_file_names_the_file(tmp_path: Path) -> None:
    """A file that is not SQLite raises RecordStoreCorruptError naming the file."""
    path = tmp_path / ".taskctx" / "records" / "records.db"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"this is not a database " * 50)
    with pytest.raises(RecordStoreCorruptError, match="not a SQLite database") as error:
        RecordStore(tmp_path)
    assert str(path) in str(error.value)


def test_corrupt_pages_raise_a_taskctx_error(tmp_path: Path) -> None:
    """Damaged pages inside a well-sized file surface as RecordStoreCorruptError, not sqlite3."""
    path = _written(tmp_path)
    data = bytearray(path.read_bytes())
    page_size = int.from_bytes(data[16:18], "big")
    for offset in range(page_size * 2, len(data) - page_size, page_size):
        data[offset : offset + 64] = b"\xff" * 64
    path.write_bytes(bytes(data))

    def open_and_read() -> None:
        RecordStore(tmp_path).query(collection="c", page_size=500)

    with pytest.raises(RecordStoreError) as error:
        open_and_read()
    assert str(path) in str(error.value)


def test_migration_from_version_1(tmp_path: Path) -> None:
    """A version-1 database (records only) upgrades in place and keeps its records."""
    path = tmp_path / ".taskctx" / "records" / "records.db"
    path.parent.mkdir(parents=True)
    db = open_database(path, read_only=False, upto=1)
    conn = db.conn
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    assert "events" not in db.table_names()
    conn.execute("UPDATE store_state SET revision = 1")
    conn.execute(
        "INSERT INTO records (id, version, revision, valid_to, collection, kind, scope, source, "
        "meta, content_type, content, sha256, size, deleted, created_at) VALUES "
        "('rec_0000000000000001', 1, 1, ?, 'c', NULL, '{}', NULL, '{}', 'text', 'old', "
        "'d', 3, 0, '2024-01-01T00:00:00+00:00')",
        (2**62,),
    )
    conn.close()
    store = RecordStore(tmp_path)
    assert store._conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert store.get("rec_0000000000000001").content == "old"
    assert store.append_event("s", "t", {}).revision == 2
    assert store.put("new", collection="c").revision == 3


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    """A database from a newer taskctx-records is refused with a clear error."""
    store = RecordStore(tmp_path)
    store._conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    store.close()
    with pytest.raises(RecordStoreError, match="newer"):
        RecordStore(tmp_path)


def test_read_only_refuses_writes(store_root: Path | str) -> None:
    """mode='read_only' reads but refuses every write with PolicyError."""
    writer = RecordStore(store_root)
    ref = writer.put("x", collection="c")
    reader = RecordStore(store_root, mode="read_only")
    assert reader.get(ref.id).content == "x"
    assert reader.query().coverage.considered == 1
    for write in (
        lambda: reader.put("y", collection="c"),
        lambda: reader.put_many([{"content": 1, "collection": "c"}]),
        lambda: reader.delete(ref.id),
        lambda: reader.link(ref.id, ref.id, "self"),
        lambda: reader.checkpoint("r", {}),
        lambda: reader.snapshot(),
        lambda: reader.append_event("s", "t", {}),
    ):
        with pytest.raises(PolicyError, match="read_only"):
            write()
    assert writer.revision == 1


def test_read_only_does_not_create(tmp_path: Path) -> None:
    """A read_only store over a root without a database creates nothing."""
    with pytest.raises(NotFoundError):
        RecordStore(tmp_path / "none", mode="read_only")
    assert not (tmp_path / "none").exists()


@pytest.mark.sqlite_only
def test_sqlite_errors_do_not_leak(tmp_path: Path) -> None:
    """Database failures are TaskCtxErrors, never raw sqlite3 errors."""
    store = RecordStore(tmp_path)
    store.close()
    with pytest.raises(RecordStoreError) as error:
        store.put("x", collection="c")
    assert not isinstance(error.value, sqlite3.Error)
