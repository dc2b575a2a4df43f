"""The store's SQL on psycopg: ``?`` placeholders, rows by column name or position.

taskctx-records writes its statements once, with ``?`` placeholders and rows read as
``row["revision"]`` (:mod:`taskctx_records.backend`). :class:`PgConnection` runs them on a
psycopg connection: each statement is translated once (``?`` -> ``%s``, a literal ``%``
doubled) and its rows are tuples that also answer to their column names.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import psycopg
from psycopg.rows import RowMaker
from taskctx_records.backend import Dialect

__all__ = ["PgConnection", "named_rows", "translate"]

_TRANSLATED: dict[str, str] = {}
_ROW_CLASSES: dict[tuple[str, ...], type[tuple[Any, ...]]] = {}


def translate(sql: str) -> str:
    """``sql`` with ``?`` placeholders as psycopg's ``%s`` (outside string literals) and
    every literal ``%`` doubled."""
    known = _TRANSLATED.get(sql)
    if known is not None:
        return known
    pieces = sql.split("'")
    for index in range(0, len(pieces), 2):  # the even pieces are outside quotes
        pieces[index] = pieces[index].replace("%", "%%").replace("?", "%s")
    for index in range(1, len(pieces), 2):
        pieces[index] = pieces[index].replace("%", "%%")
    translated = "'".join(pieces)
    if len(_TRANSLATED) < 4096:
        _TRANSLATED[sql] = translated
    return translated


def _row_class(names: tuple[str, ...]) -> type[tuple[Any, ...]]:
    """A tuple class whose items are also found by column name (``row["id"]``)."""
    known = _ROW_CLASSES.get(names)
    if known is not None:
        return known
    index = {name: position for position, name in enumerate(names)}
    item = tuple.__getitem__

    def getitem(self: tuple[Any, ...], key: Any) -> Any:
        return item(self, index[key] if key.__class__ is str else key)

    def keys(self: tuple[Any, ...]) -> list[str]:
        return list(names)

    made: type[tuple[Any, ...]] = type(
        "PgRow", (tuple,), {"__slots__": (), "__getitem__": getitem, "keys": keys}
    )
    _ROW_CLASSES[names] = made
    return made


def named_rows(cursor: Any) -> RowMaker[Any]:
    """psycopg row factory: rows are tuples that answer to their column names too."""
    description = cursor.description
    if description is None:
        return tuple
    made = _row_class(tuple(column.name for column in description))
    maker: Callable[[Sequence[Any]], Any] = made
    return maker


class PgConnection:
    """A psycopg connection as the store's modules use it
    (:class:`~taskctx_records.backend.Connection`)."""

    __slots__ = ("_conn", "dialect")

    def __init__(self, conn: psycopg.Connection[Any], dialect: Dialect) -> None:
        """Run statements on ``conn`` (whose transactions its owner manages)."""
        self._conn = conn
        self.dialect = dialect

    def execute(self, sql: str, parameters: Any = (), /) -> psycopg.Cursor[Any]:
        """Run one statement; its cursor holds the rows."""
        cursor = self._conn.cursor(row_factory=named_rows)
        # a list, even empty: psycopg reads placeholders (and ``%%``) only when given one
        cursor.execute(translate(sql), list(parameters))
        return cursor

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> psycopg.Cursor[Any]:
        """Run one statement for each parameter sequence (pipelined by psycopg)."""
        cursor = self._conn.cursor(row_factory=named_rows)
        cursor.executemany(translate(sql), [list(row) for row in parameters])
        return cursor
