"""The append-only event log: per-stream sequences, idempotency keys, indexed queries.

An event takes the next store revision (its global position) and the next sequence of its
stream (from 1). Indexes on ``(task_id, revision)``, ``(type, revision)``,
``(actor, revision)`` and ``(stream, revision)`` are maintained by SQLite on every insert,
so a query by task id reads and decodes only its hits, in revision order, by keyset.

``expected_sequence`` is optimistic concurrency in the EventStoreDB sense: the sequence the
caller believes the stream's *last* event has (``0`` for an empty stream); a mismatch
raises :class:`~taskctx_records.errors.EventConflictError`. An ``idempotency_key`` seen
before on the stream returns the stored event unchanged; reusing it for a different type
or payload is a conflict.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from taskctx.errors import CursorError
from taskctx_records.backend import Connection, Row
from taskctx_records.content import canonical_json
from taskctx_records.errors import EventConflictError
from taskctx_records.query import continuation, make_coverage
from taskctx_records.values import Event, EventPage

__all__ = [
    "EVENT_COLUMNS",
    "EventSpec",
    "append",
    "count_events",
    "fetch_events",
    "make_page",
    "row_to_event",
]

EVENT_COLUMNS = (
    "stream, sequence, type, payload, actor, task_id, idempotency_key, revision, created_at"
)


def row_to_event(row: Row | Mapping[str, Any]) -> Event:
    """An Event from a row selected with :data:`EVENT_COLUMNS` (or the same names in a dict)."""
    return Event.model_construct(
        stream=row["stream"],
        sequence=row["sequence"],
        type=row["type"],
        payload=json.loads(row["payload"]),
        actor=row["actor"],
        task_id=row["task_id"],
        idempotency_key=row["idempotency_key"],
        revision=row["revision"],
        created_at=datetime.fromisoformat(row["created_at"]),
    )


def append(
    conn: Connection,
    *,
    revision_of: Any,
    now: str,
    stream: str,
    type: str,
    payload: Any,
    actor: str | None,
    task_id: str | None,
    idempotency_key: str | None,
    expected_sequence: int | None,
) -> Event:
    """Append one event inside the caller's write transaction.

    ``revision_of()`` allocates the next store revision (called only when a row is written).
    """
    if not stream or not isinstance(stream, str):
        raise ValueError("an event needs a non-empty stream name")
    if not type or not isinstance(type, str):
        raise ValueError("an event needs a non-empty type")
    payload_json = canonical_json(payload, "event payload")
    if idempotency_key is not None:
        seen = _replayed(conn, stream, type, payload_json, idempotency_key, expected_sequence)
        if seen is not None:
            return seen
    last = int(
        conn.execute(
            "SELECT COALESCE(MAX(sequence), 0) AS last FROM events WHERE stream = ?", (stream,)
        ).fetchone()["last"]
    )
    if expected_sequence is not None and expected_sequence != last:
        raise EventConflictError(
            f"stream {stream!r} is at sequence {last}, not the expected {expected_sequence}",
            stream=stream,
            expected=expected_sequence,
            actual=last,
        )
    revision = int(revision_of())
    values = {
        "stream": stream,
        "sequence": last + 1,
        "type": type,
        "payload": payload_json,
        "actor": actor,
        "task_id": task_id,
        "idempotency_key": idempotency_key,
        "revision": revision,
        "created_at": now,
    }
    marks = ", ".join("?" for _ in values)
    conn.execute(
        f"INSERT INTO events ({', '.join(values)}) VALUES ({marks})", list(values.values())
    )
    return row_to_event(values)


def _replayed(
    conn: Connection,
    stream: str,
    type: str,
    payload_json: str,
    idempotency_key: str,
    expected_sequence: int | None,
) -> Event | None:
    """The stored event of ``idempotency_key`` on ``stream`` (None if the key is new);
    EventConflictError if it was used for another type or payload."""
    row = conn.execute(
        f"SELECT {EVENT_COLUMNS} FROM events WHERE stream = ? AND idempotency_key = ?",
        (stream, idempotency_key),
    ).fetchone()
    if row is None:
        return None
    if row["type"] != type or row["payload"] != payload_json:
        raise EventConflictError(
            f"idempotency key {idempotency_key!r} on stream {stream!r} was used for "
            f"another event (sequence {row['sequence']}, type {row['type']!r})",
            stream=stream,
            expected=expected_sequence,
            actual=int(row["sequence"]),
        )
    return row_to_event(row)


@dataclass(frozen=True)
class EventSpec:
    """What an event query asks (hashed into its cursor)."""

    stream: str | None = None
    task_id: str | None = None
    type: str | None = None
    actor: str | None = None
    order: Literal["asc", "desc"] = "asc"
    page_size: int = 50

    def to_body(self) -> dict[str, Any]:
        """JSON-safe form for a cursor."""
        return {
            "stream": self.stream,
            "task_id": self.task_id,
            "type": self.type,
            "actor": self.actor,
            "order": self.order,
            "page_size": self.page_size,
        }

    @classmethod
    def from_body(cls, body: Any) -> EventSpec:
        """The spec a cursor carries (CursorError if it is not one)."""
        try:
            return cls(**{key: body[key] for key in cls().to_body()})
        except (KeyError, TypeError) as exc:
            raise CursorError(f"cursor does not carry an event query: {exc}") from None

    def digest(self) -> str:
        """The query hash a cursor is bound to."""
        return hashlib.sha256(canonical_json(self.to_body()).encode()).hexdigest()[:32]


def _where(spec: EventSpec, revision: int) -> tuple[str, list[Any]]:
    clauses = ["revision <= ?"]
    params: list[Any] = [revision]
    for column in ("stream", "task_id", "type", "actor"):
        value = getattr(spec, column)
        if value is not None:
            clauses.append(f"{column} = ?")
            params.append(value)
    return "FROM events WHERE " + " AND ".join(clauses), params


def count_events(conn: Connection, spec: EventSpec, revision: int) -> int:
    """Matching events at ``revision`` by indexed COUNT."""
    where, params = _where(spec, revision)
    return int(conn.execute(f"SELECT COUNT(*) AS matching {where}", params).fetchone()["matching"])


def fetch_events(
    conn: Connection, spec: EventSpec, revision: int, after: int | None, limit: int
) -> list[Row]:
    """Up to ``limit`` event rows after the keyset position ``after`` (a revision)."""
    where, params = _where(spec, revision)
    if after is not None:
        where += f" AND revision {'>' if spec.order == 'asc' else '<'} ?"
        params.append(after)
    direction = "ASC" if spec.order == "asc" else "DESC"
    params.append(limit)
    sql = f"SELECT {EVENT_COLUMNS} {where} ORDER BY revision {direction} LIMIT ?"
    return list(conn.execute(sql, params).fetchall())


def make_page(
    rows: Sequence[Row],
    spec: EventSpec,
    *,
    revision: int,
    considered: int,
    page: int,
    ttl: float,
    issue: Callable[[dict[str, Any]], str],
    binding_id: str,
) -> EventPage:
    """The page of up to ``spec.page_size`` of ``rows`` (one more means more follow).

    ``issue(body)`` signs the continuation cursor (the store adds its op and id).
    """
    has_more = len(rows) > spec.page_size
    found = tuple(row_to_event(row) for row in rows[: spec.page_size])
    next_cursor = None
    if has_more:
        next_cursor = issue(
            continuation(
                spec.to_body(), spec.digest(), revision, found[-1].revision, considered, page, ttl
            )
        )
    coverage = make_coverage(
        binding_id=binding_id,
        considered=considered,
        delivered=len(found),
        first_page=page == 1,
        has_more=has_more,
        revision=revision,
    )
    return EventPage(
        events=found,
        cursor=next_cursor,
        has_more=has_more,
        coverage=coverage,
        revision=revision,
        page=page,
    )
