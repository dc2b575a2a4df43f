"""The PostgreSQL backend of a record store (:class:`~taskctx_records.backend.StoreBackend`).

One database holds one store (its ``store_state`` row names it). Connections come from a
psycopg pool, in autocommit mode: a read runs each statement on its own (every statement
sees what had committed when it began, and pinned reads ask only for revisions that had
all committed), a write runs in one transaction whose first statement locks the revision
counter row, so writers on every machine take turns and revisions commit in order
(:mod:`taskctx_postgres.dialect`). Every connection is checked as the pool hands it out,
so after a server restart the next operation runs on a new one; an operation whose
connection is lost midway raises
:class:`~taskctx_records.errors.RecordStoreUnavailableError` (a write's says that its
commit may or may not have reached the server). Nothing is retried behind the caller.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import psycopg
from psycopg_pool import PoolTimeout
from taskctx_records.errors import RecordStoreError, RecordStoreUnavailableError

from taskctx.cursor import KEY_ENV
from taskctx.errors import NotFoundError, PolicyError
from taskctx.statefiles import default_state_dir
from taskctx_postgres.connection import PgConnection
from taskctx_postgres.dialect import POSTGRES
from taskctx_postgres.pool import open_pool
from taskctx_postgres.schema import SCHEMA_VERSION, installed_version, migrate
from taskctx_postgres.url import Target, parse_target

__all__ = ["POOL_SIZE", "PostgresBackend"]
POOL_SIZE = 4
"""Connections one store keeps open at most (threads of one process share them)."""


class PostgresBackend:
    """A record store in the PostgreSQL database ``url`` names (see the module docstring)."""

    def __init__(self, url: str, *, read_only: bool, pool_size: int = POOL_SIZE) -> None:
        """Connect, check (read-write: create or migrate) the schema, open the pool."""
        self.target: Target = parse_target(url)
        self.read_only = read_only
        self.address = self.location = self.target.redacted
        self._closed = threading.Event()
        with self._connect() as conn:
            self.store_id, self._key = self._prepare(conn)
        self.state_root = default_state_dir() / "record-stores" / f"postgresql-{self.store_id}"
        try:
            self._pool = open_pool(self.target, pool_size, self.location)
        except PoolTimeout as exc:
            raise self._unavailable(exc, "could not open its connection pool") from None

    # -- identity -------------------------------------------------------------------------

    @property
    def identity(self) -> str:
        """``postgresql:<store id>``: the same for every machine that opens the database,
        whatever host name or address each uses for it."""
        return f"postgresql:{self.store_id}"

    @property
    def reopen(self) -> str:
        """The URL without its password (libpq finds it in ``PGPASSWORD`` or ``~/.pgpass``)."""
        return self.target.redacted

    def describe(self) -> Mapping[str, Any]:
        """``{"url": ...}`` without the password."""
        return {"url": self.target.redacted}

    def cursor_key(self) -> bytes:
        """``$TASKCTX_CURSOR_KEY``, else the key in ``store_state`` (made with the store),
        so every instance on every machine verifies every other's cursors."""
        explicit = os.environ.get(KEY_ENV)
        return explicit.encode() if explicit else self._key.encode()

    # -- connections ----------------------------------------------------------------------

    def read(self) -> AbstractContextManager[PgConnection]:
        """A pooled connection (autocommit: each statement reads what has committed)."""
        return self._reading()

    def write(self) -> AbstractContextManager[PgConnection]:
        """One transaction that first locks the revision counter (PolicyError read-only)."""
        if self.read_only:
            raise PolicyError(f"record store {self.location} is read_only: writes are refused")
        return self._writing()

    @contextmanager
    def _reading(self) -> Iterator[PgConnection]:
        try:
            with self._pool.connection() as conn:
                yield PgConnection(conn, POSTGRES)
        except psycopg.OperationalError as exc:
            raise self._unavailable(exc, "lost its connection") from exc
        except PoolTimeout as exc:
            raise self._unavailable(exc, "has no free connection") from exc
        except psycopg.Error as exc:
            raise self._failed(exc) from exc

    @contextmanager
    def _writing(self) -> Iterator[PgConnection]:
        try:
            with self._pool.connection() as conn, conn.transaction():
                conn.execute("SELECT revision FROM store_state WHERE id = 1 FOR UPDATE")
                yield PgConnection(conn, POSTGRES)
        except psycopg.OperationalError as exc:
            raise self._unavailable(
                exc, "lost its connection during a write (it may or may not have committed)"
            ) from exc
        except PoolTimeout as exc:
            raise self._unavailable(exc, "has no free connection") from exc
        except psycopg.Error as exc:
            raise self._failed(exc) from exc

    def close(self) -> None:
        """Close the pool's connections."""
        if not self._closed.is_set():
            self._closed.set()
            self._pool.close()

    # -- opening --------------------------------------------------------------------------

    def _connect(self) -> psycopg.Connection[Any]:
        try:
            return psycopg.connect(
                self.target.url, autocommit=True, connect_timeout=self.target.connect_timeout
            )
        except psycopg.Error as exc:
            raise self._unavailable(exc, "cannot connect") from None

    def _prepare(self, conn: psycopg.Connection[Any]) -> tuple[str, str]:
        """The store id and cursor key, after the schema is made or upgraded."""
        try:
            version = installed_version(conn)
            if version > SCHEMA_VERSION:
                raise RecordStoreError(
                    f"record store database {self.location} has schema version {version}, "
                    f"newer than this taskctx-postgres ({SCHEMA_VERSION}); upgrade it",
                    path=self.location,
                )
            if version < SCHEMA_VERSION:
                if self.read_only and version == 0:
                    raise NotFoundError(
                        f"no record store in database {self.location} (read_only does not "
                        "create one; open it once with mode='read_write')"
                    )
                if self.read_only:
                    raise RecordStoreError(
                        f"record store database {self.location} has schema version {version};"
                        " open it once with mode='read_write' to migrate it",
                        path=self.location,
                    )
                migrate(conn)
            row = conn.execute("SELECT store_id, cursor_key FROM store_state WHERE id = 1")
            store_id, key = row.fetchone() or (None, None)
        except psycopg.Error as exc:
            raise self._failed(exc) from exc
        return str(store_id), str(key)

    # -- errors ---------------------------------------------------------------------------

    def _unavailable(self, exc: BaseException, what: str) -> RecordStoreUnavailableError:
        reason = self.target.scrub(_first_line(str(exc)))
        return RecordStoreUnavailableError(
            f"record store {self.location}: PostgreSQL at {self.target.host}:{self.target.port}"
            f" (database {self.target.dbname!r}) {what}: {reason}",
            path=self.location,
        )

    def _failed(self, exc: psycopg.Error) -> RecordStoreError:
        reason = self.target.scrub(_first_line(str(exc)))
        return RecordStoreError(
            f"record store database {self.location}: {reason}", path=self.location
        )


def _first_line(message: str) -> str:
    lines = [line for line in message.strip().splitlines() if line.strip()]
    return lines[0] if lines else "no message"
