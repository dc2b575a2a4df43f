"""What PostgreSQL spells differently from SQLite (:class:`~taskctx_records.backend.Dialect`).

The store revision is a counter row (``store_state.revision``): a write transaction locks
that row first (``SELECT ... FOR UPDATE``), so writers take turns from their first
statement to their commit, exactly as ``BEGIN IMMEDIATE`` makes them on SQLite, and
revisions commit in the order they were allocated. Content is ``bytea`` (text and JSON as
UTF-8). JSON filters compare ``jsonb`` values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from taskctx_records.backend import Connection, Dialect

__all__ = ["POSTGRES", "PostgresDialect"]


class PostgresDialect(Dialect):
    """PostgreSQL's spelling of the store's engine-specific statements."""

    name = "postgresql"
    content_bytes = "content"
    unindexed = ""

    def current_revision(self, conn: Connection) -> int:
        """The counter row's revision (every write advances it in its transaction)."""
        return int(conn.execute("SELECT revision FROM store_state WHERE id = 1").fetchone()[0])

    def allocate(self, conn: Connection, count: int) -> int:
        """Advance the counter by ``count`` in the caller's write transaction (whose first
        statement locked its row) and return the first of the new revisions."""
        row = conn.execute(
            "UPDATE store_state SET revision = revision + ? WHERE id = 1 RETURNING revision",
            (count,),
        ).fetchone()
        return int(row[0]) - count + 1

    def stored_content(self, stored: str | bytes | None) -> Any:
        """``bytea``: text and JSON as their UTF-8 bytes."""
        return stored.encode("utf-8") if isinstance(stored, str) else stored

    def json_match(
        self, column: str, path: Sequence[str], value: Any, value_json: str
    ) -> tuple[list[str], list[Any]]:
        """``jsonb`` equality of the value at ``path`` with ``value_json``: types as JSON
        has them (``1`` is not ``"1"``, ``true`` is not ``1``; numbers by value, so ``1``
        is ``1.0`` as on SQLite). The path is a strict jsonpath of object keys, so a key
        never indexes an array (``"0"`` is a key, as in SQLite's ``$."0"``); objects and
        arrays compare as values, where SQLite compares their JSON text."""
        if column.endswith("content"):
            # a CASE, not the caller's content_type test beside it: PostgreSQL may evaluate
            # AND-ed conditions in any order, and text content is not JSON
            kind = column.removesuffix("content") + "content_type"
            document = f"CASE WHEN {kind} = 'json' THEN convert_from({column}, 'UTF8')::jsonb END"
        else:
            document = f"{column}::jsonb"
        keys = "".join('."' + _escaped(part) + '"' for part in path)
        found = f"jsonb_path_query_first({document}, ?::jsonpath, '{{}}'::jsonb, true)"
        return [f"{found} = ?::jsonb"], ["strict $" + keys, value_json]


def _escaped(key: str) -> str:
    """``key`` as the inside of a double-quoted jsonpath key."""
    return key.replace("\\", "\\\\").replace('"', '\\"')


POSTGRES = PostgresDialect()
