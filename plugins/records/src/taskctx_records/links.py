"""Links between records: a directed, typed relation (source, target, relation, meta).

A link takes the next store revision and needs both ends alive when it is written. Links
are append-only like everything else: relating the same triple again inserts a new row, and
:func:`find` returns the latest link per (source, target, relation), in revision order.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

from taskctx.errors import NotFoundError
from taskctx_records.content import canonical_json
from taskctx_records.values import Link
from taskctx_records.writes import Transaction, allocate, utc_now

__all__ = ["add", "find"]


def add(
    write: Transaction,
    source_id: str,
    target_id: str,
    relation: str,
    meta: Mapping[str, Any] | None = None,
) -> Link:
    """Relate two existing records in one write transaction (the latest link of a triple wins)."""
    if not relation:
        raise ValueError("a link needs a relation name")
    now = utc_now()
    meta_json = canonical_json(dict(meta or {}), "link meta")
    with write() as conn:
        for record_id in (source_id, target_id):
            row = conn.execute(
                "SELECT deleted FROM records WHERE id = ? ORDER BY version DESC LIMIT 1",
                (record_id,),
            ).fetchone()
            if row is None or row["deleted"]:
                raise NotFoundError(f"no record {record_id!r} to link")
        revision = allocate(conn, 1)
        conn.execute(
            "INSERT INTO links (revision, source_id, target_id, relation, meta, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (revision, source_id, target_id, relation, meta_json, now),
        )
    return Link(
        source_id=source_id,
        target_id=target_id,
        relation=relation,
        meta=dict(meta or {}),
        revision=revision,
        created_at=datetime.fromisoformat(now),
    )


def find(
    read: Transaction,
    record_id: str,
    relation: str | None = None,
    direction: Literal["out", "in"] = "out",
) -> list[Link]:
    """Links from (``out``) or to (``in``) a record, optionally of one relation."""
    if direction not in ("out", "in"):
        raise ValueError("direction must be 'out' or 'in'")
    column = "source_id" if direction == "out" else "target_id"
    sql = (
        "SELECT source_id, target_id, relation, meta, revision, created_at FROM links "
        f"WHERE {column} = ?"
    )
    params: list[Any] = [record_id]
    if relation is not None:
        sql += " AND relation = ?"
        params.append(relation)
    with read() as conn:
        rows = conn.execute(sql + " ORDER BY revision", params).fetchall()
    latest: dict[tuple[str, str, str], Link] = {}
    for row in rows:
        link = Link(
            source_id=row["source_id"],
            target_id=row["target_id"],
            relation=row["relation"],
            meta=json.loads(row["meta"]),
            revision=row["revision"],
            created_at=datetime.fromisoformat(row["created_at"]),
        )
        latest[(link.source_id, link.target_id, link.relation)] = link
    return sorted(latest.values(), key=lambda link: link.revision)
