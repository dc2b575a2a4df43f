"""The seam between :class:`~taskctx_records.RecordStore` and the database under it.

A record store's logic (versions, tombstones, scopes, keyset pages, signed cursors,
events, links, checkpoints, snapshots) is written once, as SQL both engines run, against
the :class:`Connection` a :class:`StoreBackend` opens. What differs between engines lives
in two places only: the backend (how the database is opened and checked, how a write
transaction excludes other writers, where the cursor key lives, how errors read) and its
:class:`Dialect` (the few statements the engines spell differently). SQLite's backend is
:class:`taskctx_records.sqlite.SqliteBackend`; another distribution adds one for a URL
scheme through the ``register_record_backends`` hook (:mod:`taskctx_records.hookspecs`).

Statements use ``?`` placeholders; a backend whose driver spells them otherwise
translates them in its connection.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

__all__ = [
    "CURRENT_REVISION_SQL",
    "Connection",
    "Dialect",
    "Row",
    "Rows",
    "StoreBackend",
]

CURRENT_REVISION_SQL = (
    "SELECT max("
    "(SELECT coalesce(max(revision), 0) FROM records), "
    "(SELECT coalesce(max(revision), 0) FROM links), "
    "(SELECT coalesce(max(revision), 0) FROM events), "
    "(SELECT coalesce(max(revision), 0) FROM checkpoints)) AS revision"
)
"""The store revision: the largest revision of any row a write added (each table keeps
its rows' revisions in a key or an index, so each max is one seek)."""


class Row(Protocol):
    """One result row: its columns by name (and by position)."""

    def __getitem__(self, key: Any, /) -> Any: ...

    def keys(self) -> list[str]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Rows(Protocol):
    """The result of one statement."""

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    """What the store's modules run their SQL on: one connection, in the backend's read
    or write transaction, with its engine's :class:`Dialect`."""

    @property
    def dialect(self) -> Dialect: ...

    def execute(self, sql: str, parameters: Any = ..., /) -> Rows: ...

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> Rows: ...


class Dialect:
    """The statements engines spell differently; these are SQLite's (JSON1, rowids)."""

    name = "sqlite"
    content_bytes = "CAST(content AS BLOB)"
    """An expression of a ``records`` row's stored content as bytes."""
    unindexed = "+"
    """What goes before a column that the planner must not look up in an index (SQLite's
    unary ``+``: its planner would otherwise pick the revision index over the keyset one;
    PostgreSQL estimates from statistics, and a ``+`` would only blind it)."""

    def current_revision(self, conn: Connection) -> int:
        """The current store revision (0 for an empty store), as ``conn`` sees it."""
        return int(conn.execute(CURRENT_REVISION_SQL).fetchone()["revision"])

    def allocate(self, conn: Connection, count: int) -> int:
        """The first of ``count`` new revisions, in the caller's write transaction.

        Nothing is reserved: the caller writes rows at exactly these revisions before it
        allocates again, and the write transaction keeps every other writer out until it
        commits, so revisions commit in order.
        """
        return self.current_revision(conn) + 1

    def stored_content(self, stored: str | bytes | None) -> Any:
        """The ``content`` column's value for content stored as ``stored`` (SQLite keeps
        text as TEXT and bytes as BLOB in the one column)."""
        return stored

    def json_match(
        self, column: str, path: Sequence[str], value: Any, value_json: str
    ) -> tuple[list[str], list[Any]]:
        """WHERE clauses (and their parameters) true when the JSON at ``path`` in
        ``column`` (``r.content`` or ``r.meta``, stored JSON text) equals ``value``
        (whose canonical JSON is ``value_json``), compared as JSON: ``1`` is not ``"1"``."""
        where = "$" + "".join(f'."{part}"' for part in path)
        if value is None or isinstance(value, bool):
            literal = "null" if value is None else ("true" if value else "false")
            return [f"json_type({column}, ?) = ?"], [where, literal]
        if isinstance(value, (dict, list)):
            return (
                [
                    f"json_type({column}, ?) IN ('object', 'array')",
                    f"json_extract({column}, ?) = ?",
                ],
                [where, where, value_json],
            )
        if isinstance(value, str):
            return [f"json_type({column}, ?) = 'text' AND json_extract({column}, ?) = ?"], [
                where,
                where,
                value,
            ]
        return [
            f"json_type({column}, ?) IN ('integer', 'real') AND json_extract({column}, ?) = ?"
        ], [where, where, value]


class StoreBackend(Protocol):
    """One record store's database: opened, checked and migrated by its engine.

    ``address`` is the ``root`` that opens it again (the folder, or the URL without its
    password); ``location`` names it in messages (the database file, or that URL);
    ``identity`` names it in source identities (stable across processes and machines);
    ``state_root`` is the local folder for state derived from it (a source's index).
    """

    store_id: str
    address: str
    location: str
    state_root: Path
    read_only: bool

    @property
    def identity(self) -> str: ...

    @property
    def reopen(self) -> str:
        """The ``root`` that opens this store again from any folder (absolute)."""
        ...

    def read(self) -> AbstractContextManager[Connection]:
        """The connection, for statements that only read (each sees committed rows)."""
        ...

    def write(self) -> AbstractContextManager[Connection]:
        """One write transaction: every other writer waits until it commits or rolls
        back; errors are raised as :class:`~taskctx_records.errors.RecordStoreError`."""
        ...

    def cursor_key(self) -> bytes:
        """The key this store's cursors are signed with: one per store, the same for every
        process that opens it (``$TASKCTX_CURSOR_KEY`` overrides it)."""
        ...

    def describe(self) -> Mapping[str, Any]:
        """Secret-free facts for catalogs (``root`` or ``url``)."""
        ...

    def close(self) -> None:
        """Release the connection(s)."""
        ...
