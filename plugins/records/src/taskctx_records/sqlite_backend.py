"""The SQLite backend: ``<root>/.taskctx/records/records.db``, one process's connection.

The database is opened through :func:`taskctx_records.schema.open_database` (WAL, 30 s
busy timeout, its folders and files checked first). Every write runs in one
``BEGIN IMMEDIATE`` transaction under this backend's lock, so writers of every process
take turns and revisions commit in order. Cursors are signed with the key in
``<root>/.taskctx/records/cursor.key`` (or ``$TASKCTX_CURSOR_KEY``).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any

from taskctx.cursor import load_or_create_key
from taskctx.errors import PolicyError
from taskctx_records.location import DB_NAME, check_key_file
from taskctx_records.schema import (
    StoreConnection,
    open_database,
    translate_errors,
    translated_error,
)

__all__ = ["STATE_SUBDIR", "SqliteBackend", "WriteTransaction"]

STATE_SUBDIR = Path(".taskctx") / "records"


class WriteTransaction:
    """One ``BEGIN IMMEDIATE`` transaction under the store's lock: COMMIT on success,
    ROLLBACK on any exception, sqlite3 errors raised as RecordStoreError. A class, not a
    generator, since every write enters one."""

    __slots__ = ("conn", "lock", "path")

    def __init__(self, conn: StoreConnection, lock: threading.RLock, path: Path) -> None:
        """A transaction on ``conn`` (its errors name ``path``) under ``lock``."""
        self.conn = conn
        self.lock = lock
        self.path = path

    def __enter__(self) -> StoreConnection:
        self.lock.acquire()
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except BaseException as exc:
            self.lock.release()
            if isinstance(exc, sqlite3.Error):
                raise translated_error(self.path, exc) from exc
            raise
        return self.conn

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        # what translate_errors does, inline: every write enters and leaves one of these
        try:
            self.conn.execute("COMMIT" if exc is None else "ROLLBACK")
        except sqlite3.Error as error:
            raise translated_error(self.path, error) from error
        finally:
            self.lock.release()
        if isinstance(exc, sqlite3.Error):
            raise translated_error(self.path, exc) from exc


class SqliteBackend:
    """A record store's SQLite database under ``root`` (see the module docstring)."""

    def __init__(self, root: Path, *, read_only: bool) -> None:
        """Open (read-write: create and migrate) the database under ``root``."""
        self.root = root
        self.state_root = root
        self.read_only = read_only
        self.state_dir = root / STATE_SUBDIR
        self.path = self.state_dir / DB_NAME
        self.address = str(root)
        self.location = str(self.path)
        self._lock = threading.RLock()
        conn = open_database(self.path, read_only=read_only).conn
        assert isinstance(conn, StoreConnection)  # open_database connects with it
        self.conn = conn
        with translate_errors(self.path):
            row = self.conn.execute("SELECT store_id FROM store_state WHERE id = 1").fetchone()
        self.store_id: str = row["store_id"]

    @property
    def identity(self) -> str:
        """The absolute root: a relative one would name another store from another folder."""
        return str(self.root.resolve())

    @property
    def reopen(self) -> str:
        """The absolute root."""
        return self.identity

    def read(self) -> AbstractContextManager[StoreConnection]:
        """The connection under this backend's lock, sqlite3 errors translated."""
        return self._reading()

    @contextmanager
    def _reading(self) -> Iterator[StoreConnection]:
        with self._lock, translate_errors(self.path):
            yield self.conn

    def write(self) -> AbstractContextManager[StoreConnection]:
        """One ``BEGIN IMMEDIATE`` transaction (PolicyError on a read-only store)."""
        if self.read_only:
            raise PolicyError(f"record store {self.path} is read_only: writes are refused")
        return WriteTransaction(self.conn, self._lock, self.path)

    def cursor_key(self) -> bytes:
        """``$TASKCTX_CURSOR_KEY``, else ``cursor.key`` beside the database (made once)."""
        check_key_file(self.state_dir)
        return load_or_create_key(self.state_dir)

    def describe(self) -> Mapping[str, Any]:
        """``{"root": ...}``: the folder the store was opened under."""
        return {"root": str(self.root)}

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self.conn.close()
