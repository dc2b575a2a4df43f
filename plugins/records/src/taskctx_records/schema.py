"""The database file: opening it, checking it, and its versioned schema migrations.

The schema version is ``PRAGMA user_version``. Each migration is a list of SQL statements
applied in one ``BEGIN IMMEDIATE`` transaction, so concurrent first opens agree and a failed
upgrade leaves the file as it was. Version 1 holds records and their scope keys; version 2
adds links, checkpoints, snapshots and events; version 3 re-keys records by revision and
clusters scope keys (fewer B-trees per write). A new file gets :data:`NEW_PAGE_SIZE` pages.

Records are append-only: every write inserts a new version row (a tombstone for a delete)
with the next store ``revision``. The one column ever updated is ``valid_to``, the revision
of the version that superseded this one (``OPEN_END`` while current): a derived index column
that makes "alive at revision R" a range test (``revision <= R < valid_to``).
"""

from __future__ import annotations

import os
import sqlite3
import struct
import uuid
from contextlib import AbstractContextManager
from pathlib import Path
from types import TracebackType

from sqlite_utils import Database

from taskctx.errors import NotFoundError
from taskctx_records.backend import Dialect
from taskctx_records.errors import RecordStoreCorruptError, RecordStoreError
from taskctx_records.location import check_location, check_opened, create_database_file

__all__ = [
    "BUSY_TIMEOUT_S",
    "MIGRATIONS",
    "NEW_PAGE_SIZE",
    "OPEN_END",
    "SCHEMA_VERSION",
    "SQLITE",
    "WAL_AUTOCHECKPOINT_PAGES",
    "WAL_SIZE_LIMIT_BYTES",
    "StoreConnection",
    "check_file",
    "migrate",
    "open_database",
    "translate_errors",
    "translated_error",
]

BUSY_TIMEOUT_S = 30.0
WAL_AUTOCHECKPOINT_PAGES = 10_000
"""Pages in the WAL before a commit checkpoints it (SQLite's default is 1,000). A put
dirties about a dozen pages, most of them the same hot ones (the revision counter, the
right edge of each index); a checkpoint copies each distinct page once and syncs twice,
so checkpointing a tenth as often removes most of that work. Commits stay as durable:
they are in the WAL either way."""
WAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024
"""What a WAL file is cut back to after a checkpoint resets it (``journal_size_limit``)."""
NEW_PAGE_SIZE = 1024
"""``page_size`` of a new database file (SQLite fixes it when the first table is made)."""
OPEN_END = 2**62
"""``valid_to`` of a current version: larger than any revision."""

_V1 = [
    """CREATE TABLE store_state (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        revision INTEGER NOT NULL,
        store_id TEXT NOT NULL
    )""",
    """CREATE TABLE records (
        id TEXT NOT NULL,
        version INTEGER NOT NULL,
        revision INTEGER NOT NULL UNIQUE,
        valid_to INTEGER NOT NULL,
        collection TEXT NOT NULL,
        kind TEXT,
        scope TEXT NOT NULL,
        source TEXT,
        meta TEXT NOT NULL,
        content_type TEXT NOT NULL,
        content BLOB,
        sha256 TEXT NOT NULL,
        size INTEGER NOT NULL,
        deleted INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL,
        PRIMARY KEY (id, version)
    )""",
    "CREATE INDEX records_by_collection ON records (collection, id, revision, valid_to, deleted)",
    "CREATE INDEX records_by_kind ON records (collection, kind, id, revision, valid_to, deleted)",
    "CREATE INDEX records_by_collection_revision ON records (collection, revision)",
    """CREATE TABLE record_scope (
        id TEXT NOT NULL,
        version INTEGER NOT NULL,
        revision INTEGER NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        current INTEGER NOT NULL,
        PRIMARY KEY (id, version, key, current)
    )""",
    "CREATE INDEX record_scope_by_value ON record_scope (key, value, current, id, version)",
    "CREATE INDEX record_scope_by_revision ON record_scope (key, value, revision)",
]

_V2 = [
    """CREATE TABLE links (
        revision INTEGER PRIMARY KEY,
        source_id TEXT NOT NULL,
        target_id TEXT NOT NULL,
        relation TEXT NOT NULL,
        meta TEXT NOT NULL,
        created_at TEXT NOT NULL
    )""",
    "CREATE INDEX links_out ON links (source_id, relation, target_id)",
    "CREATE INDEX links_in ON links (target_id, relation, source_id)",
    """CREATE TABLE checkpoints (
        run_id TEXT NOT NULL,
        state_version INTEGER NOT NULL,
        state TEXT NOT NULL,
        revision INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (run_id, state_version)
    )""",
    """CREATE TABLE snapshots (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        name TEXT NOT NULL UNIQUE,
        revision INTEGER NOT NULL,
        created_at TEXT NOT NULL
    )""",
    """CREATE TABLE events (
        revision INTEGER PRIMARY KEY,
        stream TEXT NOT NULL,
        sequence INTEGER NOT NULL,
        type TEXT NOT NULL,
        payload TEXT NOT NULL,
        actor TEXT,
        task_id TEXT,
        idempotency_key TEXT,
        created_at TEXT NOT NULL,
        UNIQUE (stream, sequence)
    )""",
    "CREATE UNIQUE INDEX events_idempotency ON events (stream, idempotency_key) "
    "WHERE idempotency_key IS NOT NULL",
    "CREATE INDEX events_by_task ON events (task_id, revision)",
    "CREATE INDEX events_by_type ON events (type, revision)",
    "CREATE INDEX events_by_actor ON events (actor, revision)",
    "CREATE INDEX events_by_stream ON events (stream, revision)",
]

_RECORD_COLUMNS = (
    "id, version, revision, valid_to, collection, kind, scope, source, meta, content_type, "
    "content, sha256, size, deleted, created_at"
)
_SCOPE_COLUMNS = "id, version, revision, key, value, current"

# Version 3 (issue 17): fewer B-trees for a put to dirty. ``records`` is keyed by its
# revision (the rowid), so UNIQUE (revision) costs no index of its own and range reads on
# revision walk the table; ``record_scope`` is WITHOUT ROWID, clustered on the key its
# scoped pages read in order (key, value, current, id, version), which also serves the
# point lookups the old primary key (id, version, key, current) did. Each table is copied
# in revision order and replaced in the migration's one transaction.
_V3 = [
    """CREATE TABLE records_v3 (
        id TEXT NOT NULL,
        version INTEGER NOT NULL,
        revision INTEGER PRIMARY KEY,
        valid_to INTEGER NOT NULL,
        collection TEXT NOT NULL,
        kind TEXT,
        scope TEXT NOT NULL,
        source TEXT,
        meta TEXT NOT NULL,
        content_type TEXT NOT NULL,
        content BLOB,
        sha256 TEXT NOT NULL,
        size INTEGER NOT NULL,
        deleted INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL,
        UNIQUE (id, version)
    )""",
    f"INSERT INTO records_v3 ({_RECORD_COLUMNS}) SELECT {_RECORD_COLUMNS} FROM records "
    "ORDER BY revision",
    "DROP TABLE records",
    "ALTER TABLE records_v3 RENAME TO records",
    "CREATE INDEX records_by_collection ON records (collection, id, revision, valid_to, deleted)",
    "CREATE INDEX records_by_kind ON records (collection, kind, id, revision, valid_to, deleted)",
    # the rowid (the revision) ends every index entry: this is (collection, revision)
    "CREATE INDEX records_by_collection_revision ON records (collection)",
    # the key columns first, in key order: SQLite 3.40's integrity_check reports false
    # NULLs in a WITHOUT ROWID table whose primary key columns are declared out of order
    """CREATE TABLE record_scope_v3 (
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        current INTEGER NOT NULL,
        id TEXT NOT NULL,
        version INTEGER NOT NULL,
        revision INTEGER NOT NULL,
        PRIMARY KEY (key, value, current, id, version)
    ) WITHOUT ROWID""",
    f"INSERT INTO record_scope_v3 ({_SCOPE_COLUMNS}) SELECT {_SCOPE_COLUMNS} FROM record_scope "
    "ORDER BY key, value, current, id, version",
    "DROP TABLE record_scope",
    "ALTER TABLE record_scope_v3 RENAME TO record_scope",
    "CREATE INDEX record_scope_by_revision ON record_scope (key, value, revision)",
]

# Version 4 (issue 17): no revision counter row. Every table a write adds to holds the
# revision of its rows (records, links and events as their rowid), so the store revision
# is the largest of them (``writes.current_revision``): a put reads it under the write
# lock instead of rewriting one hot page in every transaction.
_V4 = [
    "CREATE INDEX checkpoints_by_revision ON checkpoints (revision)",
    "ALTER TABLE store_state DROP COLUMN revision",
]

MIGRATIONS: tuple[tuple[str, ...], ...] = (tuple(_V1), tuple(_V2), tuple(_V3), tuple(_V4))
"""``MIGRATIONS[i]`` upgrades schema version ``i`` to ``i + 1``."""

SCHEMA_VERSION = len(MIGRATIONS)

SQLITE = Dialect()
"""The SQLite dialect (the base :class:`~taskctx_records.backend.Dialect` itself)."""


class StoreConnection(sqlite3.Connection):
    """A sqlite3 connection that carries its dialect (the store's modules ask it)."""

    dialect = SQLITE


_CORRUPT_MARKERS = ("malformed", "not a database", "disk image", "file is encrypted", "corrupt")


class _TranslateErrors:
    """The context manager :func:`translate_errors` returns (a class, not a generator:
    every store operation enters one, so it is kept cheap)."""

    __slots__ = ("path",)

    def __init__(self, path: Path) -> None:
        self.path = path

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if isinstance(exc, sqlite3.Error):
            raise translated_error(self.path, exc) from exc


def translated_error(path: Path, exc: sqlite3.Error) -> RecordStoreError:
    """The RecordStoreError an sqlite3 error on ``path`` is raised as (corruption: its
    subclass RecordStoreCorruptError)."""
    message = str(exc)
    if any(marker in message.lower() for marker in _CORRUPT_MARKERS):
        return RecordStoreCorruptError(
            f"record store database {path} is corrupt or truncated ({message}); "
            "restore it from a backup or move it aside to start a new store",
            path=path,
        )
    return RecordStoreError(f"record store database {path}: {message}", path=path)


def translate_errors(path: Path) -> AbstractContextManager[None]:
    """Raise sqlite3 errors as :class:`RecordStoreError` (corruption as its subclass)."""
    return _TranslateErrors(path)


def check_file(path: Path) -> None:
    """Refuse a file that is not SQLite or is shorter than its header says (cheap: 100 bytes)."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return
    if size == 0:
        return
    with path.open("rb") as handle:
        header = handle.read(100)
    if len(header) < 100 or not header.startswith(b"SQLite format 3\x00"):
        raise RecordStoreCorruptError(
            f"record store database {path} is not a SQLite database (bad or short header)",
            path=path,
        )
    (page_size,) = struct.unpack(">H", header[16:18])
    page_size = 65536 if page_size == 1 else page_size
    (pages,) = struct.unpack(">I", header[28:32])
    wal = path.with_name(path.name + "-wal")
    if wal.exists() and wal.stat().st_size > 0:
        # a checkpoint killed midway leaves a header ahead of the file; the intact WAL
        # replays on open, so only a file without a pending log is judged by its size
        return
    if pages and size < page_size * pages:
        raise RecordStoreCorruptError(
            f"record store database {path} is truncated: {size} bytes on disk, the header "
            f"declares {pages} pages of {page_size} bytes",
            path=path,
        )


def migrate(db: Database, path: Path, *, upto: int = SCHEMA_VERSION) -> int:
    """Apply the migrations from the file's version to ``upto``; return the new version."""
    conn = db.conn
    with translate_errors(path):
        current = int(conn.execute("PRAGMA user_version").fetchone()["user_version"])
        if current >= upto:
            return current
        conn.execute("BEGIN IMMEDIATE")
        try:
            current = int(conn.execute("PRAGMA user_version").fetchone()["user_version"])
            for version in range(current, upto):
                for statement in MIGRATIONS[version]:
                    conn.execute(statement)
                if version == 0:
                    conn.execute(
                        "INSERT INTO store_state (id, revision, store_id) VALUES (1, 0, ?)",
                        (uuid.uuid4().hex,),
                    )
            conn.execute(f"PRAGMA user_version = {max(current, upto)}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return max(current, upto)


def open_database(path: Path, *, read_only: bool, upto: int = SCHEMA_VERSION) -> Database:
    """Open (read-write: create and migrate) the database at ``path`` through sqlite-utils.

    ``path`` is ``<root>/.taskctx/records/records.db``; its folders and files are checked
    first and the opened file after (:mod:`taskctx_records.location`).
    """
    check_location(path.parent)
    if read_only and not os.path.lexists(path):
        raise NotFoundError(f"no record store database at {path} (read_only does not create one)")
    check_file(path)
    if not read_only:
        path.parent.mkdir(parents=True, exist_ok=True)
        check_location(path.parent)  # the folders just made are still real folders
        create_database_file(path)
    with translate_errors(path):
        conn = sqlite3.connect(  # mode=rw/ro: SQLite opens the checked file, never makes one
            path.absolute().as_uri() + ("?mode=ro" if read_only else "?mode=rw"),
            uri=True,
            timeout=BUSY_TIMEOUT_S,
            isolation_level=None,
            check_same_thread=False,
            factory=StoreConnection,
        )
        conn.row_factory = sqlite3.Row  # every read names its columns: row["revision"]
        try:
            check_opened(conn, path)
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            if not read_only:
                # a no-op once the file has its header (the size is fixed then, WAL or not)
                conn.execute(f"PRAGMA page_size = {NEW_PAGE_SIZE}")
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_AUTOCHECKPOINT_PAGES}")
                conn.execute(f"PRAGMA journal_size_limit = {WAL_SIZE_LIMIT_BYTES}")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except BaseException:
            conn.close()
            raise
    db = Database(conn)
    version = int(conn.execute("PRAGMA user_version").fetchone()["user_version"])
    if version > SCHEMA_VERSION:
        conn.close()
        raise RecordStoreError(
            f"record store database {path} has schema version {version}, newer than this "
            f"taskctx-records ({SCHEMA_VERSION}); upgrade taskctx-records",
            path=path,
        )
    if version < upto:
        if read_only:
            conn.close()
            raise RecordStoreError(
                f"record store database {path} has schema version {version} and needs a "
                f"migration to {upto}; open it once with mode='read_write'",
                path=path,
            )
        migrate(db, path, upto=upto)
    return db
