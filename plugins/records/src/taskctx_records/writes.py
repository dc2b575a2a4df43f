"""Record version rows: what ``put``, ``put_many`` and ``delete`` insert in one transaction.

Record ids are ``rec_`` + the 16-digit zero-padded revision that created the record
(``rec_0000000000000042``): unique, stable across updates, sortable by creation order.
A caller may name a record (``record_id=``) instead; its next ``put`` writes version 2.
A record keeps its collection for life.

Also the pieces every kind of write shares: :func:`allocate` (the next store revisions),
:func:`utc_now` (the ``created_at`` stamp) and :data:`Transaction`, the store's read or
write transaction opener that links, checkpoints and snapshots are handed.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, NamedTuple

from taskctx.errors import NotFoundError
from taskctx_records.content import Encoded, canonical_json, encode, unchecked_canonical_json
from taskctx_records.query import scope_pairs
from taskctx_records.schema import OPEN_END
from taskctx_records.values import RecordRef, record_id_of

__all__ = ["PutItem", "Transaction", "allocate", "new_record_id", "utc_now", "write_versions"]

Transaction = Callable[[], AbstractContextManager[sqlite3.Connection]]
"""Opens one store transaction: ``RecordStore._write`` (BEGIN IMMEDIATE) or ``_read``."""

_RECORD_INSERT = (
    "INSERT INTO records (id, version, revision, valid_to, collection, kind, scope, source, "
    "meta, content_type, content, sha256, size, deleted, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_SCOPE_INSERT = (
    "INSERT INTO record_scope (id, version, revision, key, value, current) "
    "VALUES (?, ?, ?, ?, ?, ?)"
)


def utc_now() -> str:
    """The current UTC time, ISO 8601: the ``created_at`` of every row a write inserts."""
    return datetime.now(timezone.utc).isoformat()


_AUTOMATIC_ID = re.compile(r"rec_\d{16}")


def new_record_id(revision: int) -> str:
    """The id of a record created at ``revision``."""
    return f"rec_{revision:016d}"


@dataclass(frozen=True)
class PutItem:
    """One version to write: content (None with ``delete``) and its keywords."""

    content: Any
    collection: str
    kind: str | None = None
    scope: Mapping[str, Any] | None = None
    source: str | None = None
    meta: Mapping[str, Any] | None = None
    record_id: str | None = None
    delete: bool = False

    @classmethod
    def from_keywords(cls, item: Mapping[str, Any]) -> PutItem:
        """A put_many item: a dict with ``content`` and put's keywords."""
        unknown = set(item) - {"content", "collection", "kind", "scope", "source", "meta",
                               "record_id"}  # fmt: skip
        if unknown:
            raise TypeError(f"unknown put_many keys: {sorted(unknown)}")
        if "content" not in item:
            raise TypeError("every put_many item needs 'content'")
        return cls.checked(
            item["content"],
            collection=item.get("collection"),
            kind=item.get("kind"),
            scope=item.get("scope"),
            source=item.get("source"),
            meta=item.get("meta"),
            record_id=item.get("record_id"),
        )

    @classmethod
    def checked(
        cls,
        content: Any,
        *,
        collection: Any,
        kind: str | None,
        scope: Mapping[str, Any] | None,
        source: str | None,
        meta: Mapping[str, Any] | None,
        record_id: object,
    ) -> PutItem:
        """Validate put's arguments (collection required, scope/meta JSON objects; a
        ``record_id`` is an id, a RecordRef or a Record)."""
        if not isinstance(collection, str) or not collection:
            raise ValueError("put needs collection=: a non-empty name such as 'observations'")
        if scope is not None and not isinstance(scope, Mapping):
            raise TypeError("scope must be a JSON object (a mapping), e.g. {'task_id': 'x'}")
        if meta is not None and not isinstance(meta, Mapping):
            raise TypeError("meta must be a JSON object (a mapping)")
        named = None if record_id is None else record_id_of(record_id, "record_id")
        if named == "":
            raise ValueError("record_id must be a non-empty string")
        return cls(content, collection, kind, scope, source, meta, named)


def allocate(conn: sqlite3.Connection, count: int) -> int:
    """Take ``count`` revisions in the caller's transaction; return the first."""
    row = conn.execute(
        "UPDATE store_state SET revision = revision + ? WHERE id = 1 RETURNING revision",
        (count,),
    ).fetchone()
    return int(row["revision"]) - count + 1


class _Latest(NamedTuple):
    """What a write needs of a record's latest version (scope and meta as stored JSON)."""

    version: int
    collection: str
    scope: str
    meta: str
    deleted: bool
    kind: str | None
    source: str | None


def _latest(conn: sqlite3.Connection, record_id: str) -> _Latest | None:
    row = conn.execute(
        "SELECT version, collection, scope, meta, deleted, kind, source FROM records "
        "WHERE id = ? ORDER BY version DESC LIMIT 1",
        (record_id,),
    ).fetchone()
    if row is None:
        return None
    return _Latest(
        version=int(row["version"]),
        collection=row["collection"],
        scope=row["scope"],
        meta=row["meta"],
        deleted=bool(row["deleted"]),
        kind=row["kind"],
        source=row["source"],
    )


class _Version(NamedTuple):
    """The fields of one new version (a tombstone keeps its record's) and its content."""

    collection: str
    scope_json: str
    meta_json: str
    kind: str | None
    source: str | None
    pairs: tuple[tuple[str, str], ...]
    encoded: Encoded
    stored: Any

    def row(
        self, record_id: str, version: int, revision: int, deleted: bool, now: str
    ) -> tuple[Any, ...]:
        """The ``records`` row of this version (the order of :data:`_RECORD_INSERT`)."""
        return (
            record_id,
            version,
            revision,
            OPEN_END,
            self.collection,
            self.kind,
            self.scope_json,
            self.source,
            self.meta_json,
            self.encoded.content_type,
            self.stored,
            self.encoded.sha256,
            self.encoded.size,
            int(deleted),
            now,
        )

    def ref(self, record_id: str, version: int, revision: int) -> RecordRef:
        """The RecordRef a write of this version returns."""
        return RecordRef(
            id=record_id,
            collection=self.collection,
            version=version,
            revision=revision,
            content_type=self.encoded.content_type,
            sha256=self.encoded.sha256,
            size=self.encoded.size,
        )


def _resolve_id(
    conn: sqlite3.Connection, latest: Mapping[str, _Latest], item: PutItem, revision: int
) -> tuple[str, _Latest | None]:
    """The id ``item`` writes (a new one at ``revision`` when unnamed) and its latest
    version (this transaction's ``latest`` first); a free name of automatic form is refused."""
    record_id = item.record_id
    if record_id is None:
        return new_record_id(revision), None
    previous = latest.get(record_id) or _latest(conn, record_id)
    if previous is None and _AUTOMATIC_ID.fullmatch(record_id):
        raise ValueError(
            f"record id {record_id!r} has the form of automatic ids (rec_<16 digits>) "
            "and no such record exists; choose another id"
        )
    return record_id, previous


def _version_of(item: PutItem, record_id: str, previous: _Latest | None) -> _Version:
    """What the version ``item`` writes holds: a tombstone repeats the latest's fields."""
    if item.delete:
        if previous is None or previous.deleted:
            raise NotFoundError(f"no record {record_id!r} to delete")
        return _Version(
            previous.collection,
            previous.scope,
            previous.meta,
            previous.kind,
            previous.source,
            scope_pairs(json.loads(previous.scope)),
            encode(""),
            None,
        )
    collection = item.collection
    if previous is not None and previous.collection != collection:
        raise ValueError(
            f"record {record_id!r} is in collection {previous.collection!r}; a record "
            f"keeps its collection (asked {collection!r})"
        )
    encoded = encode(item.content)
    scope_json, pairs = _scope_fields(item.scope)
    meta_json = canonical_json(dict(item.meta), "record meta") if item.meta else "{}"
    return _Version(
        collection,
        scope_json,
        meta_json,
        item.kind,
        item.source,
        pairs,
        encoded,
        encoded.stored,
    )


def _scope_fields(scope: Mapping[str, Any] | None) -> tuple[str, tuple[tuple[str, str], ...]]:
    """A new version's scope as stored JSON and as :func:`scope_pairs` pairs, from one
    depth check of the whole scope (its values are parts of it, so they are within it)."""
    if not scope:
        return "{}", ()
    whole = dict(scope)
    text = canonical_json(whole, "record scope")
    pairs = sorted((str(key), unchecked_canonical_json(value)) for key, value in whole.items())
    return text, tuple(pairs)


def write_versions(conn: sqlite3.Connection, items: Sequence[PutItem], now: str) -> list[RecordRef]:
    """Insert one version per item with consecutive new revisions (caller's transaction)."""
    if not items:
        return []
    first = allocate(conn, len(items))
    latest: dict[str, _Latest] = {}
    record_rows: list[tuple[Any, ...]] = []
    scope_rows: list[tuple[Any, ...]] = []
    supersede: list[tuple[int, str, int]] = []
    refs: list[RecordRef] = []
    for offset, item in enumerate(items):
        revision = first + offset
        record_id, previous = _resolve_id(conn, latest, item, revision)
        new = _version_of(item, record_id, previous)
        version = 1 if previous is None else previous.version + 1
        if previous is not None:
            supersede.append((revision, record_id, previous.version))
            old_pairs = scope_pairs(json.loads(previous.scope))
            if old_pairs and old_pairs != new.pairs:  # departure: the old scope sees the change
                scope_rows += [(record_id, version, revision, k, v, 0) for k, v in old_pairs]
        scope_rows += [(record_id, version, revision, k, v, 1) for k, v in new.pairs]
        record_rows.append(new.row(record_id, version, revision, item.delete, now))
        latest[record_id] = _Latest(
            version,
            new.collection,
            new.scope_json,
            new.meta_json,
            item.delete,
            new.kind,
            new.source,
        )
        refs.append(new.ref(record_id, version, revision))
    conn.executemany(_RECORD_INSERT, record_rows)
    if supersede:
        conn.executemany("UPDATE records SET valid_to = ? WHERE id = ? AND version = ?", supersede)
    if scope_rows:
        conn.executemany(_SCOPE_INSERT, scope_rows)
    return refs
