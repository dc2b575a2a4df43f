"""``RecordStore``: versioned records, links, checkpoints, snapshots and events.

The rows live in a backend's database (:mod:`taskctx_records.backend`): by default
SQLite at ``<root>/.taskctx/records/records.db`` (:mod:`taskctx_records.sqlite_backend`),
or the database a URL names (``postgresql://...``, through the backend a plugin
registers for its scheme: :mod:`taskctx_records.backends`). Every write runs in one write
transaction that excludes other writers and takes the next store revision(s); a snapshot
is a revision number, and every read "as of" a revision is exact. Query cursors are
signed with the store's key, so another RecordStore on the same store continues them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from taskctx.cursor import CursorSigner, check_ttl
from taskctx.errors import CursorError, NotFoundError
from taskctx_records import checkpoints as run_checkpoints
from taskctx_records import events as event_log
from taskctx_records import links as record_links
from taskctx_records import snapshots as named_snapshots
from taskctx_records.backend import Connection, Row, StoreBackend
from taskctx_records.backends import open_backend
from taskctx_records.bounded import bounded_row, bounded_slice
from taskctx_records.budget import (
    DEFAULT_MATERIALIZATION_LIMIT,
    MaterializationBudget,
    MemoryProbe,
)
from taskctx_records.bulkread import record_row, records_at
from taskctx_records.location import DB_NAME
from taskctx_records.paging import StorePager
from taskctx_records.pinned import PinnedView, PinnedViewLimits
from taskctx_records.query import (
    QuerySpec,
    count_matching,
    fetch_page,
    row_to_record,
    scope_pairs,
    scope_revision,
    touched_ids,
)
from taskctx_records.request import QueryRequest, takes_query_request
from taskctx_records.schema import StoreConnection
from taskctx_records.sqlite_backend import STATE_SUBDIR, SqliteBackend
from taskctx_records.values import (
    BoundedRead,
    Checkpoint,
    Event,
    EventPage,
    Link,
    MaterializationEvent,
    QueryPage,
    Record,
    RecordId,
    RecordRef,
    Snapshot,
    record_id_of,
)
from taskctx_records.writes import (
    PutItem,
    allocate,
    current_revision,
    prepare_new,
    utc_now,
    write_new,
    write_versions,
)

if TYPE_CHECKING:
    from taskctx.plugins import PluginHost
    from taskctx_records.source import RecordSource

__all__ = ["DB_NAME", "STATE_SUBDIR", "RecordStore"]


class RecordStore:
    """A durable, append-only record store under ``<root>/.taskctx/records/``."""

    def __init__(
        self,
        root: str | Path,
        mode: Literal["read_only", "read_write"] = "read_write",
        host: PluginHost | None = None,
        materialization_limit: int = DEFAULT_MATERIALIZATION_LIMIT,
        strict: bool = False,
        *,
        memory_probe: MemoryProbe | None = None,
    ) -> None:
        """Open (or make) the store under the folder ``root``, or in the database the URL
        ``root`` names (``postgresql://user@host:port/db``: the backend registered for its
        scheme, found through ``host``).

        ``memory_probe`` measures the memory left for the materialization budget's
        tight-memory rule (default :func:`taskctx_records.budget.available_memory`).
        """
        if mode not in ("read_only", "read_write"):
            raise ValueError(f"mode must be 'read_only' or 'read_write', not {mode!r}")
        self.mode = mode
        self._host = host
        self._budget = MaterializationBudget(
            materialization_limit, strict=strict, memory=memory_probe
        )
        self._backend: StoreBackend = open_backend(root, mode == "read_only", lambda: self.host)
        self.root = self._backend.state_root
        """The local folder of the store's derived state (the store's own folder on SQLite)."""
        self.store_id: str = self._backend.store_id
        self._pager = StorePager(
            self.store_id,
            self._backend.cursor_key,
            self._read,
            lambda: self.revision,
            self._budget,
        )

    @property
    def backend(self) -> StoreBackend:
        """The database this store keeps its rows in (:mod:`taskctx_records.backend`)."""
        return self._backend

    @property
    def location(self) -> str:
        """What names this store in messages: its database file, or its URL without a
        password."""
        return self._backend.location

    @property
    def state_dir(self) -> Path:
        """``<root>/.taskctx/records`` (SQLite: the database's folder)."""
        return self.root / STATE_SUBDIR

    @property
    def path(self) -> Path:
        """The SQLite database file (AttributeError on another backend)."""
        return self._sqlite().path

    @property
    def _conn(self) -> StoreConnection:
        """The SQLite connection, for tools and tests that inspect the file."""
        return self._sqlite().conn

    def _sqlite(self) -> SqliteBackend:
        if not isinstance(self._backend, SqliteBackend):
            raise AttributeError(f"record store {self.location} is not SQLite")
        return self._backend

    # -- plumbing -------------------------------------------------------------------------

    @property
    def host(self) -> PluginHost:
        """The plugin host (the default host from the environment when none was given)."""
        if self._host is None:
            from taskctx.plugins import PluginHost

            self._host = PluginHost.from_environment()
        return self._host

    @property
    def materialization_limit(self) -> int:
        """Records one operation may expand before it warns (strict: raises)."""
        return self._budget.limit

    @property
    def materialization_events(self) -> list[MaterializationEvent]:
        """The operations that passed the materialization budget, with their call sites."""
        return list(self._budget.events)

    @property
    def signer(self) -> CursorSigner:
        """The cursor signer of this store's root (key made on first use)."""
        return self._pager.signer

    def close(self) -> None:
        """Close the database connection(s)."""
        self._backend.close()

    def __enter__(self) -> RecordStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RecordStore({self._backend.address!r}, mode={self.mode!r})"

    def _read(self) -> AbstractContextManager[Connection]:
        return self._backend.read()

    def _pin(self, at_revision: int | None) -> int:
        current = self.revision
        if at_revision is None:
            return current
        if at_revision < 0 or at_revision > current:
            raise ValueError(f"revision {at_revision} is not in 0..{current}")
        return at_revision

    @property
    def revision(self) -> int:
        """The current store revision (0 for an empty store): one counter for every write."""
        with self._read() as conn:
            return current_revision(conn)

    # -- records --------------------------------------------------------------------------

    def put(
        self,
        content: Any,
        *,
        collection: str,
        kind: str | None = None,
        scope: Mapping[str, Any] | None = None,
        source: str | None = None,
        meta: Mapping[str, Any] | None = None,
        record_id: RecordId | None = None,
    ) -> RecordRef:
        """Write a record (a new version when ``record_id`` names an existing one)."""
        if record_id is None:  # checked and encoded before the write lock is taken
            new = prepare_new(
                content, collection=collection, kind=kind, scope=scope, source=source, meta=meta
            )
            with self._backend.write() as conn:
                return write_new(conn, new, utc_now())
        item = PutItem.checked(
            content,
            collection=collection,
            kind=kind,
            scope=scope,
            source=source,
            meta=meta,
            record_id=record_id,
        )
        with self._backend.write() as conn:
            return write_versions(conn, [item], utc_now())[0]

    def put_many(self, items: Iterable[Mapping[str, Any]]) -> list[RecordRef]:
        """Write many records in ONE transaction (dicts of ``content`` plus put's keywords)."""
        checked = [PutItem.from_keywords(item) for item in items]
        with self._backend.write() as conn:
            return write_versions(conn, checked, utc_now())

    def delete(self, record_id: RecordId) -> RecordRef:
        """Write a tombstone version; the record is absent from then on (history stays)."""
        item = PutItem(None, "", record_id=record_id_of(record_id, "record_id"), delete=True)
        with self._backend.write() as conn:
            return write_versions(conn, [item], utc_now())[0]

    def get(self, record_id: RecordId, *, at_revision: int | None = None) -> Record:
        """The record as of ``at_revision`` (default: now); NotFoundError if absent/deleted.

        ``record_id`` is an id or the RecordRef ``put`` returned (or a Record): it names the
        record; the version read is the one alive at ``at_revision``.
        """
        record_id = record_id_of(record_id, "record_id")
        revision = self._pin(at_revision)
        with self._read() as conn:
            return row_to_record(record_row(conn, record_id, revision))

    def get_many(
        self, wanted: Sequence[tuple[RecordId, int | None]]
    ) -> list[Record | NotFoundError | ValueError]:
        """Many ``get(record_id, at_revision=...)`` in one query, in order: each the record
        or the error that ``get`` raises for it (NotFoundError, ValueError for a revision
        out of range), never raising it for one."""
        current = self.revision
        checked: list[tuple[str, int] | ValueError] = []
        for record_id, at in wanted:
            rid = record_id_of(record_id, "record_id")
            if at is not None and not 0 <= at <= current:
                checked.append(ValueError(f"revision {at} is not in 0..{current}"))
            else:
                checked.append((rid, current if at is None else at))
        asked = [item for item in checked if not isinstance(item, ValueError)]
        with self._read() as conn:
            found = iter(records_at(conn, asked))
        return [item if isinstance(item, ValueError) else next(found) for item in checked]

    def read_bounded(
        self,
        record_id: RecordId,
        offset: int = 0,
        limit: int | None = None,
        *,
        at_revision: int | None = None,
    ) -> BoundedRead:
        """A slice of the canonical content: characters for text/JSON, bytes for bytes."""
        record_id = record_id_of(record_id, "record_id")
        if offset < 0 or (limit is not None and limit < 0):
            raise ValueError("offset and limit must not be negative")
        revision = self._pin(at_revision)
        with self._read() as conn:
            row = bounded_row(conn, record_id, revision)
        return bounded_slice(row, record_id, offset, limit)

    # -- queries --------------------------------------------------------------------------

    @takes_query_request
    def query(self, request: QueryRequest) -> QueryPage:
        """First page of the records matching, pinned to the current revision.

        The arguments are those of :func:`taskctx_records.request.query_request`
        (``collection, kind, scope, filters, order, page_size, cursor_ttl`` and keyword-only
        ``max_records``, ``max_bytes``, ``cursor``). Given a ``cursor``, it must be one this
        very query issued (else CursorError) and the page continues it.
        """
        if request.cursor is not None:
            self.check_cursor_query(request.cursor, request.spec)
            return self.query_continue(request.cursor)
        return self.query_at(request.spec, self.revision, cursor_ttl=request.cursor_ttl)

    def check_cursor_query(self, cursor: str, spec: QuerySpec) -> None:
        """CursorError unless ``cursor`` is a valid query cursor issued for ``spec``."""
        body = self._pager.verify(cursor, "query")
        if body.get("qh") != spec.digest():
            raise CursorError("cursor was issued for another query")

    def query_at(
        self, spec: QuerySpec, revision: int, *, cursor_ttl: float = 3600, operation: str = "query"
    ) -> QueryPage:
        """First page of ``spec`` pinned to ``revision`` (used by pinned views too)."""
        cursor_ttl = check_ttl(cursor_ttl)
        with self._read() as conn:
            considered = count_matching(conn, spec, revision)
        return self._pager.query_page(spec, revision, None, considered, 0, 1, cursor_ttl, operation)

    def query_continue(self, cursor: str) -> QueryPage:
        """The next page of the query and snapshot a cursor carries (never newer history)."""
        return self._pager.query_continue(cursor)

    def scope_revision(
        self, scope: Mapping[str, Any] | None, collections: Sequence[str] | None
    ) -> int:
        """The highest revision of any record version (tombstones and departures included)
        visible through ``scope`` and ``collections``; writes outside leave it unchanged."""
        with self._read() as conn:
            return scope_revision(conn, scope_pairs(scope), collections)

    def touched_ids(self, since: int, until: int) -> list[str]:
        """Ids of records with a version (or tombstone) written in ``(since, until]``."""
        with self._read() as conn:
            return touched_ids(conn, since, until)

    def iter_visible(
        self,
        scope: Mapping[str, Any] | None,
        collections: Sequence[str] | None,
        at_revision: int,
        after_id: RecordId | None = None,
        limit: int = 500,
    ) -> list[Record]:
        """Records alive at ``at_revision`` in scope, ordered by id, after ``after_id``."""
        rows = self.visible_rows(scope, collections, at_revision, after_id, limit)
        return [row_to_record(row) for row in rows]

    def visible_rows(
        self,
        scope: Mapping[str, Any] | None,
        collections: Sequence[str] | None,
        at_revision: int,
        after_id: RecordId | None = None,
        limit: int = 500,
    ) -> list[Row]:
        """The rows :meth:`iter_visible` makes its Records of (:data:`RECORD_COLUMNS`, stored
        values undecoded), for a reader that needs only some of their fields."""
        after_id = None if after_id is None else record_id_of(after_id, "after_id")
        spec = QuerySpec(
            scope=scope_pairs(scope),
            collections=None if collections is None else tuple(collections),
        )
        self._budget.charge("iter_visible", limit)
        with self._read() as conn:
            return fetch_page(conn, spec, self._pin(at_revision), after_id, limit)

    def pinned_view(
        self,
        *,
        max_candidates: int = 10_000,
        max_bytes: int = 64 * 1024 * 1024,
        lifetime_s: float = 300.0,
    ) -> PinnedView:
        """A context manager fixing the current revision for a multi-query assembly."""
        limits = PinnedViewLimits(
            max_candidates=max_candidates, max_bytes=max_bytes, lifetime_s=lifetime_s
        )
        return PinnedView(self, self.revision, limits)

    # -- links, checkpoints, snapshots: see their modules --------------------------------

    def link(
        self,
        source_id: RecordId,
        target_id: RecordId,
        relation: str,
        meta: Mapping[str, Any] | None = None,
    ) -> Link:
        """Relate two existing records (the latest link of a triple wins); :mod:`.links`."""
        source = record_id_of(source_id, "source_id")
        target = record_id_of(target_id, "target_id")
        return record_links.add(self._backend.write, source, target, relation, meta)

    def links(
        self,
        record_id: RecordId,
        relation: str | None = None,
        direction: Literal["out", "in"] = "out",
    ) -> list[Link]:
        """Links from (``out``) or to (``in``) a record, optionally of one relation."""
        record_id = record_id_of(record_id, "record_id")
        return record_links.find(self._read, record_id, relation, direction)

    def checkpoint(
        self, run_id: str, state: Any, expected_state_version: int | None = None
    ) -> Checkpoint:
        """Save a run's state as its next version (``expected_state_version``: 0 = none yet)."""
        return run_checkpoints.save(self._backend.write, run_id, state, expected_state_version)

    def latest_checkpoint(self, run_id: str) -> Checkpoint | None:
        """The run's latest checkpoint, or None."""
        return run_checkpoints.latest(self._read, run_id)

    def snapshot(self, name: str | None = None, keep_last: int = 10) -> Snapshot:
        """Name the current revision; keep only the ``keep_last`` newest snapshots."""
        return named_snapshots.take(self._backend.write, name, keep_last)

    def snapshots(self) -> list[Snapshot]:
        """The kept snapshots, oldest first."""
        return named_snapshots.kept(self._read)

    # -- events ---------------------------------------------------------------------------

    def append_event(
        self,
        stream: str,
        type: str,
        payload: Any,
        *,
        actor: str | None = None,
        task_id: str | None = None,
        idempotency_key: str | None = None,
        expected_sequence: int | None = None,
    ) -> Event:
        """Append an event to ``stream`` (sequence from 1); see :mod:`taskctx_records.events`."""
        with self._backend.write() as conn:
            return event_log.append(
                conn,
                revision_of=lambda: allocate(conn, 1),
                now=utc_now(),
                stream=stream,
                type=type,
                payload=payload,
                actor=actor,
                task_id=task_id,
                idempotency_key=idempotency_key,
                expected_sequence=expected_sequence,
            )

    def events(
        self,
        stream: str | None = None,
        *,
        task_id: str | None = None,
        type: str | None = None,
        actor: str | None = None,
        order: Literal["asc", "desc"] = "asc",
        page_size: int = 50,
        cursor_ttl: float = 3600,
    ) -> EventPage:
        """First page of the matching events in revision order, pinned to the current revision."""
        cursor_ttl = check_ttl(cursor_ttl)
        if order not in ("asc", "desc"):
            raise ValueError(f"order must be 'asc' or 'desc', not {order!r}")
        if page_size < 1:
            raise ValueError("page_size must be at least 1")
        spec = event_log.EventSpec(stream, task_id, type, actor, order, page_size)
        revision = self.revision
        with self._read() as conn:
            considered = event_log.count_events(conn, spec, revision)
        return self._pager.event_page(spec, revision, None, considered, 1, cursor_ttl)

    def events_continue(self, cursor: str) -> EventPage:
        """The next page of the event query and snapshot a cursor carries."""
        return self._pager.events_continue(cursor)

    # -- source ---------------------------------------------------------------------------

    def source(
        self,
        scope: Mapping[str, Any] | None = None,
        collections: Sequence[str] | None = None,
    ) -> RecordSource:
        """The ``record_store`` ContextSource over this store, limited to scope/collections."""
        from taskctx_records.source import RecordSource

        return RecordSource(self, scope=scope, collections=collections)
