"""A slice of one record's canonical content as of a revision (``RecordStore.read_bounded``)."""

from __future__ import annotations

from typing import Any

from taskctx.errors import NotFoundError
from taskctx_records.backend import Connection, Row
from taskctx_records.values import BoundedRead

__all__ = ["bounded_row", "bounded_slice"]


def bounded_row(conn: Connection, record_id: str, revision: int) -> Row:
    """The stored content (as bytes) and facts of the version alive at ``revision``;
    NotFoundError if the record is absent or deleted then."""
    row: Row | None = conn.execute(
        f"SELECT content_type, {conn.dialect.content_bytes} AS raw, sha256, size, version, "
        "revision, deleted FROM records WHERE id = ? AND revision <= ? "
        "ORDER BY version DESC LIMIT 1",
        (record_id, revision),
    ).fetchone()
    if row is None or row["deleted"]:
        raise NotFoundError(f"record {record_id!r} is absent at revision {revision}")
    return row


def bounded_slice(row: Row, record_id: str, offset: int, limit: int | None) -> BoundedRead:
    """``limit`` characters (text, JSON) or bytes (bytes) of ``row``'s content from
    ``offset`` (None: to the end)."""
    content_type, raw = row["content_type"], bytes(row["raw"] or b"")
    common: dict[str, Any] = {
        "record_id": record_id,
        "offset": offset,
        "sha256": row["sha256"],
        "size": row["size"],
        "version": row["version"],
        "revision": row["revision"],
    }
    # sliced in Python: SQLite's substr() and length() stop at a NUL in text
    end = None if limit is None else offset + limit
    if content_type == "bytes":
        piece = raw[offset:end]
        return BoundedRead(data=piece, eof=offset + len(piece) >= len(raw), **common)
    text = raw.decode("utf-8")
    cut = text[offset:end]
    return BoundedRead(text=cut, chars=len(text), eof=offset + len(cut) >= len(text), **common)
