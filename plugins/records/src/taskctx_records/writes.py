"""Record version rows: what ``put``, ``put_many`` and ``delete`` insert in one transaction.

Record ids are ``rec_`` + the 16-digit zero-padded revision that created the record
(``rec_0000000000000042``): unique, stable across updates, sortable by creation order.
A caller may name a record (``record_id=``) instead; its next ``put`` writes version 2.
A record keeps its collection for life.

Also the pieces every kind of write shares: :func:`allocate` (the next store revisions),
:func:`utc_now` (the ``created_at`` stamp) and :data:`Transaction`, the backend's read or
write transaction opener that links, checkpoints and snapshots are handed. A ``put`` of a
new record takes the short way (:func:`prepare_new` before the lock, :func:`write_new`
inside it): the same rows.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, NamedTuple

from taskctx.errors import NotFoundError
from taskctx_records.backend import Connection
from taskctx_records.content import Encoded, canonical_json, encode, unchecked_canonical_json
from taskctx_records.query import scope_pairs
from taskctx_records.schema import OPEN_END
from taskctx_records.values import RecordRef, record_id_of

__all__ = [
    "PutItem",
    "Transaction",
    "allocate",
    "current_revision",
    "new_record_id",
    "prepare_new",
    "utc_now",
    "write_new",
    "write_versions",
]

Transaction = Callable[[], AbstractContextManager[Connection]]
"""Opens one store transaction: the backend's ``write`` or ``read``."""

_RECORD_INSERT = (
    "INSERT INTO records (id, version, revision, valid_to, collection, kind, scope, source, "
    "meta, content_type, content, sha256, size, deleted, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_SCOPE_INSERT = (
    "INSERT INTO record_scope (id, version, revision, key, value, current) "
    "VALUES (?, ?, ?, ?, ?, ?)"
)


_second_stamp: tuple[int, str] = (-1, "")
"""The last whole second :func:`utc_now` formatted, and its ``YYYY-MM-DDTHH:MM:SS``."""


def utc_now() -> str:
    """The current UTC time, ISO 8601: the ``created_at`` of every row a write inserts.

    The text ``datetime.now(timezone.utc).isoformat()`` gives, with the date and time of
    day formatted once a second (most writes of a second share them).
    """
    global _second_stamp
    second, nanos = divmod(time.time_ns(), 1_000_000_000)
    cached, prefix = _second_stamp
    if second != cached:
        prefix = datetime.fromtimestamp(second, timezone.utc).isoformat()[:19]
        _second_stamp = (second, prefix)
    micros = nanos // 1000
    return f"{prefix}.{micros:06d}+00:00" if micros else f"{prefix}+00:00"


_AUTOMATIC_ID = re.compile(r"rec_\d{16}")


def new_record_id(revision: int) -> str:
    """The id of a record created at ``revision``."""
    return f"rec_{revision:016d}"


def _check_fields(collection: Any, scope: object, meta: object) -> None:
    """Refuse a missing collection, or a scope or meta that is not a JSON object."""
    if not isinstance(collection, str) or not collection:
        raise ValueError("put needs collection=: a non-empty name such as 'observations'")
    if scope is not None and scope.__class__ is not dict and not isinstance(scope, Mapping):
        raise TypeError("scope must be a JSON object (a mapping), e.g. {'task_id': 'x'}")
    if meta is not None and meta.__class__ is not dict and not isinstance(meta, Mapping):
        raise TypeError("meta must be a JSON object (a mapping)")


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
        _check_fields(collection, scope, meta)
        named = None if record_id is None else record_id_of(record_id, "record_id")
        if named == "":
            raise ValueError("record_id must be a non-empty string")
        return cls(content, collection, kind, scope, source, meta, named)


def current_revision(conn: Connection) -> int:
    """The current store revision (0 for an empty store), as ``conn`` sees it."""
    return conn.dialect.current_revision(conn)


def allocate(conn: Connection, count: int) -> int:
    """The first of ``count`` new revisions, in the caller's write transaction
    (:meth:`~taskctx_records.backend.Dialect.allocate`)."""
    return conn.dialect.allocate(conn, count)


class _Latest(NamedTuple):
    """What a write needs of a record's latest version (scope and meta as stored JSON)."""

    version: int
    collection: str
    scope: str
    meta: str
    deleted: bool
    kind: str | None
    source: str | None


def _latest(conn: Connection, record_id: str) -> _Latest | None:
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
        self, record_id: str, version: int, revision: int, deleted: bool, now: str, content: Any
    ) -> tuple[Any, ...]:
        """The ``records`` row of this version (the order of :data:`_RECORD_INSERT`);
        ``content`` is the stored content as the backend keeps it
        (:meth:`~taskctx_records.backend.Dialect.stored_content`)."""
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
            content,
            self.encoded.sha256,
            self.encoded.size,
            int(deleted),
            now,
        )

    def ref(self, record_id: str, version: int, revision: int) -> RecordRef:
        """The RecordRef a write of this version returns (validated: in pydantic 2 that
        is faster than ``model_construct``)."""
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
    conn: Connection, latest: Mapping[str, _Latest], item: PutItem, revision: int
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
    return _new_version(item.content, collection, item.kind, item.scope, item.source, item.meta)


def _new_version(
    content: Any,
    collection: str,
    kind: str | None,
    scope: Mapping[str, Any] | None,
    source: str | None,
    meta: Mapping[str, Any] | None,
) -> _Version:
    """A version holding ``content``: encoded, scope and meta as stored JSON."""
    encoded = encode(content)
    scope_json, pairs = _scope_fields(scope)
    meta_json = canonical_json(dict(meta), "record meta") if meta else "{}"
    return _Version(collection, scope_json, meta_json, kind, source, pairs, encoded, encoded.stored)


_ScopeFields = tuple[str, tuple[tuple[str, str], ...]]
_SCOPE_SCALARS = frozenset({str, int, float, bool, type(None)})
_SCOPE_CACHE: dict[tuple[tuple[str, type, object], ...], _ScopeFields] = {}
_SCOPE_CACHE_SIZE = 256
"""Scopes of scalar values remembered by :func:`_scope_fields` (most writes repeat a few)."""


def _scope_fields(scope: Mapping[str, Any] | None) -> _ScopeFields:
    """A new version's scope as stored JSON and as :func:`scope_pairs` pairs, from one
    depth check of the whole scope (its values are parts of it, so they are within it).

    A scope of string keys and scalar values is remembered by its items and the values'
    types (``True``, ``1`` and ``1.0`` are equal keys in Python, but not the same JSON).
    """
    if not scope:
        return "{}", ()
    whole = dict(scope)
    parts: list[tuple[str, type, object]] = []
    for name, value in whole.items():
        kind = value.__class__
        if name.__class__ is not str or kind not in _SCOPE_SCALARS:
            break
        parts.append((name, kind, value))
    key = tuple(parts) if len(parts) == len(whole) else None
    if key is not None:
        known = _SCOPE_CACHE.get(key)
        if known is not None:
            return known
    text = canonical_json(whole, "record scope")
    pairs = sorted((str(name), unchecked_canonical_json(value)) for name, value in whole.items())
    fields = text, tuple(pairs)
    if key is not None:
        if len(_SCOPE_CACHE) >= _SCOPE_CACHE_SIZE:
            _SCOPE_CACHE.clear()
        _SCOPE_CACHE[key] = fields
    return fields


def prepare_new(
    content: Any,
    *,
    collection: Any,
    kind: str | None,
    scope: Mapping[str, Any] | None,
    source: str | None,
    meta: Mapping[str, Any] | None,
) -> _Version:
    """The version a put of a new, unnamed record writes: its arguments checked as
    :meth:`PutItem.checked` checks them, then encoded, with no lock held."""
    _check_fields(collection, scope, meta)
    return _new_version(content, collection, kind, scope, source, meta)


def write_new(conn: Connection, new: _Version, now: str) -> RecordRef:
    """Insert ``new`` as version 1 of a new record at the next revision (the rows
    :func:`write_versions` writes for it, in the caller's transaction)."""
    revision = allocate(conn, 1)
    record_id = new_record_id(revision)
    content = conn.dialect.stored_content(new.stored)
    conn.execute(_RECORD_INSERT, new.row(record_id, 1, revision, False, now, content))
    for key, value in new.pairs:
        conn.execute(_SCOPE_INSERT, (record_id, 1, revision, key, value, 1))
    return new.ref(record_id, 1, revision)


def write_versions(conn: Connection, items: Sequence[PutItem], now: str) -> list[RecordRef]:
    """Insert one version per item with consecutive new revisions (caller's transaction)."""
    if not items:
        return []
    first = allocate(conn, len(items))
    stored_content = conn.dialect.stored_content
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
        content = stored_content(new.stored)
        record_rows.append(new.row(record_id, version, revision, item.delete, now, content))
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
