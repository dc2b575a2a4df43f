"""``store.pinned_view()``: one fixed revision for a multi-query assembly, within limits.

A view is a revision number, not a copy: every query, get and continuation through it reads
"as of" that revision. It bounds what one assembly may expand: ``max_candidates`` records
(default 10,000), ``max_bytes`` of record content (64 MiB) and ``lifetime_s`` (300 s);
passing one raises :class:`~taskctx_records.errors.PinnedViewLimitError`, as does any use
after the ``with`` block.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from taskctx.errors import CursorError
from taskctx_records.errors import PinnedViewLimitError
from taskctx_records.request import QueryRequest, takes_query_request
from taskctx_records.values import QueryPage, Record, RecordId

if TYPE_CHECKING:
    from taskctx_records.store import RecordStore

__all__ = ["PinnedView", "PinnedViewLimits"]


@dataclass(frozen=True)
class PinnedViewLimits:
    """What one pinned view may expand and for how long."""

    max_candidates: int = 10_000
    max_bytes: int = 64 * 1024 * 1024
    lifetime_s: float = 300.0


class PinnedView:
    """Reads of one store at one revision; use as ``with store.pinned_view() as view:``."""

    def __init__(self, store: RecordStore, revision: int, limits: PinnedViewLimits) -> None:
        self.store = store
        self.revision = revision
        self.limits = limits
        self.candidates = 0
        self.bytes = 0
        self._opened = time.monotonic()
        self._closed = False

    def __enter__(self) -> PinnedView:
        return self

    def __exit__(self, *exc: object) -> None:
        self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise PinnedViewLimitError("pinned view is closed (used after its with block)")
        age = time.monotonic() - self._opened
        if age > self.limits.lifetime_s:
            raise PinnedViewLimitError(
                f"pinned view at revision {self.revision} outlived its lifetime "
                f"({age:.1f} s > {self.limits.lifetime_s} s); open a new one"
            )

    def _charge(self, records: Sequence[Record]) -> None:
        self.candidates += len(records)
        self.bytes += sum(record.size for record in records)
        if self.candidates > self.limits.max_candidates:
            raise PinnedViewLimitError(
                f"pinned view expanded {self.candidates} records, over its limit of "
                f"{self.limits.max_candidates}"
            )
        if self.bytes > self.limits.max_bytes:
            raise PinnedViewLimitError(
                f"pinned view expanded {self.bytes} bytes, over its limit of "
                f"{self.limits.max_bytes}"
            )

    @takes_query_request
    def query(self, request: QueryRequest) -> QueryPage:
        """``RecordStore.query`` at the view's revision (the same arguments); a ``cursor``
        continues a query of this view."""
        self._check_open()
        if request.cursor is not None:
            self.store.check_cursor_query(request.cursor, request.spec)
            return self.query_continue(request.cursor)
        page = self.store.query_at(request.spec, self.revision, cursor_ttl=request.cursor_ttl)
        self._charge(page.records)
        return page

    def query_continue(self, cursor: str) -> QueryPage:
        """``RecordStore.query_continue`` for a cursor of this view's revision."""
        self._check_open()
        page = self.store.query_continue(cursor)
        if page.revision != self.revision:
            raise CursorError("cursor belongs to another revision than this pinned view")
        self._charge(page.records)
        return page

    def get(self, record_id: RecordId) -> Record:
        """``RecordStore.get`` at the view's revision (an id, a RecordRef or a Record)."""
        self._check_open()
        record = self.store.get(record_id, at_revision=self.revision)
        self._charge([record])
        return record
