"""Signed, budgeted pages of one record store: the owner of its query and event cursors.

A :class:`StorePager` fetches a page of a query (:class:`~taskctx_records.query.QuerySpec`)
or an event query (:class:`~taskctx_records.events.EventSpec`) pinned to a revision, charges
the materialization budget, and signs the continuation cursor with the store's key; given
a cursor back it verifies it was issued by this store for that operation and continues
the page it carries.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from taskctx.cursor import CursorSigner
from taskctx.errors import CursorError
from taskctx_records import events as event_log
from taskctx_records.budget import MaterializationBudget
from taskctx_records.query import QUERY_PURPOSE, QuerySpec, fetch_page, make_page
from taskctx_records.values import EventPage, QueryPage
from taskctx_records.writes import Transaction

__all__ = ["BINDING_ID", "StorePager"]

BINDING_ID = "records"


class StorePager:
    """Pages and cursors of one store (``store_id``, signed with the key ``key_of`` gives)."""

    __slots__ = ("_budget", "_key_of", "_read", "_revision_of", "_signer", "store_id")

    def __init__(
        self,
        store_id: str,
        key_of: Callable[[], bytes],
        read: Transaction,
        revision_of: Callable[[], int],
        budget: MaterializationBudget,
    ) -> None:
        """Page through the store whose read transaction is ``read``."""
        self.store_id = store_id
        self._key_of = key_of
        self._read = read
        self._revision_of = revision_of
        self._budget = budget
        self._signer: CursorSigner | None = None

    @property
    def signer(self) -> CursorSigner:
        """The cursor signer of this store (its key fetched, or made, on first use)."""
        if self._signer is None:
            self._signer = CursorSigner(self._key_of(), QUERY_PURPOSE)
        return self._signer

    def verify(self, cursor: str, op: str) -> dict[str, Any]:
        """The body of ``cursor``; CursorError unless this store issued it for ``op``."""
        body = self.signer.verify(cursor)
        if body.get("op") != op:
            raise CursorError(f"cursor is for {body.get('op')!r}, not {op!r}")
        if body.get("store") != self.store_id:
            raise CursorError("cursor was issued by another record store")
        if not isinstance(body.get("rev"), int) or body["rev"] > self._revision_of():
            raise CursorError("cursor snapshot revision is not in this store")
        return body

    def issue(self, op: str, body: Mapping[str, Any], ttl: float) -> str:
        """A signed cursor of this store for ``op`` (``query`` or ``events``)."""
        return self.signer.issue({"op": op, "store": self.store_id, **body}, ttl)

    # -- queries --------------------------------------------------------------------------

    def query_page(
        self,
        spec: QuerySpec,
        revision: int,
        after: str | None,
        considered: int | None,
        delivered_before: int,
        page: int,
        ttl: float,
        operation: str,
    ) -> QueryPage:
        """The page of ``spec`` at ``revision`` after the keyset position ``after``."""
        limit = spec.limit
        self._budget.charge(operation, limit)
        with self._read() as conn:
            rows = fetch_page(conn, spec, revision, after, limit + 1)
        return make_page(
            rows,
            spec,
            revision=revision,
            considered=considered,
            delivered_before=delivered_before,
            page=page,
            ttl=ttl,
            issue=lambda body: self.issue("query", body, ttl),
            binding_id=BINDING_ID,
        )

    def query_continue(self, cursor: str) -> QueryPage:
        """The next page of the query and snapshot a cursor carries (never newer history)."""
        body = self.verify(cursor, "query")
        spec = QuerySpec.from_body(body.get("spec"))
        if spec.digest() != body.get("qh"):
            raise CursorError("cursor query hash does not match its query")
        return self.query_page(
            spec,
            int(body["rev"]),
            str(body["after"]),
            body.get("considered"),
            int(body["delivered"]),
            int(body["page"]) + 1,
            float(body["ttl"]),
            "query_continue",
        )

    # -- events ---------------------------------------------------------------------------

    def event_page(
        self,
        spec: event_log.EventSpec,
        revision: int,
        after: int | None,
        considered: int,
        page: int,
        ttl: float,
    ) -> EventPage:
        """The page of the event query ``spec`` at ``revision`` after revision ``after``."""
        self._budget.charge("events", spec.page_size)
        with self._read() as conn:
            rows = event_log.fetch_events(conn, spec, revision, after, spec.page_size + 1)
        return event_log.make_page(
            rows,
            spec,
            revision=revision,
            considered=considered,
            page=page,
            ttl=ttl,
            issue=lambda body: self.issue("events", body, ttl),
            binding_id=BINDING_ID,
        )

    def events_continue(self, cursor: str) -> EventPage:
        """The next page of the event query and snapshot a cursor carries."""
        body = self.verify(cursor, "events")
        spec = event_log.EventSpec.from_body(body.get("spec"))
        if spec.digest() != body.get("qh"):
            raise CursorError("cursor query hash does not match its query")
        return self.event_page(
            spec,
            int(body["rev"]),
            int(body["after"]),
            int(body["considered"]),
            int(body["page"]) + 1,
            float(body["ttl"]),
        )
