"""Exact reads: one record as of a revision (``RecordStore.get``), and many, each as of
its own revision, in one SQL query (``RecordStore.get_many``)."""

from __future__ import annotations

from collections.abc import Sequence

from taskctx.errors import NotFoundError
from taskctx_records.backend import Connection, Row
from taskctx_records.query import RECORD_COLUMNS, row_to_record
from taskctx_records.values import Record

__all__ = ["QUERY_ROWS", "record_row", "records_at"]

QUERY_ROWS = 300
"""Records asked for in one query (three parameters each, under SQLite's oldest limit)."""


def record_row(conn: Connection, record_id: str, revision: int) -> Row:
    """The row of the version of ``record_id`` alive at ``revision`` (NotFoundError if
    the record is absent or deleted then)."""
    row: Row | None = conn.execute(
        f"SELECT {RECORD_COLUMNS}, r.deleted FROM records r WHERE r.id = ? "
        "AND r.revision <= ? ORDER BY r.version DESC LIMIT 1",
        (record_id, revision),
    ).fetchone()
    if row is None or row["deleted"]:
        state = "deleted" if row is not None else "absent"
        raise NotFoundError(f"record {record_id!r} is {state} at revision {revision}")
    return row


def records_at(conn: Connection, wanted: Sequence[tuple[str, int]]) -> list[Record | NotFoundError]:
    """Each ``(record id, revision)`` as ``RecordStore.get`` reads it (the version alive
    at that revision), or the NotFoundError ``get`` raises, in order; one query per
    :data:`QUERY_ROWS` records."""
    answers: list[Record | NotFoundError] = []
    for start in range(0, len(wanted), QUERY_ROWS):
        chunk = wanted[start : start + QUERY_ROWS]
        values = ", ".join("(?, ?, ?)" for _ in chunk)
        params = [value for pos, (rid, rev) in enumerate(chunk) for value in (pos, rid, rev)]
        rows = conn.execute(
            f"WITH wanted(pos, id, rev) AS (VALUES {values}) "
            f"SELECT w.pos AS pos, {RECORD_COLUMNS}, r.deleted FROM wanted w "
            "JOIN records r ON r.id = w.id AND r.version = (SELECT MAX(x.version) "
            "FROM records x WHERE x.id = w.id AND x.revision <= w.rev)",
            params,
        ).fetchall()
        found = {int(row["pos"]): row for row in rows}
        for pos, (record_id, revision) in enumerate(chunk):
            row = found.get(pos)
            if row is None or row["deleted"]:
                state = "deleted" if row is not None else "absent"
                answers.append(
                    NotFoundError(f"record {record_id!r} is {state} at revision {revision}")
                )
            else:
                answers.append(row_to_record(row))
    return answers
