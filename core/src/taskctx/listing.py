"""Listing every descriptor of a context's bindings, page by page, on one pinned snapshot.

What an agent host shows as "the resources" (an MCP server's ``resources/list``, a
retriever's catalogue): each binding's descriptors in binding order, hidden paths left
out unless asked for. The first page pins every binding's revision; the cursor is signed
with the context's cursor key and carries the pinned revisions, so a later page never
mixes snapshots: a source that moved fails the listing (StaleReaderError), and so does a
change of the bindings. A binding that did not answer when the listing began is named in
``unavailable``, never listed as empty.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs
from pydantic import Field

from taskctx.cursor import CursorSigner
from taskctx.descriptors import EnumerationRequest, SourceDescriptor
from taskctx.entries import SourceBinding
from taskctx.errors import CursorError, SourceUnavailableError, StaleReaderError
from taskctx.frozen import FrozenModel
from taskctx.media import is_hidden_path

__all__ = [
    "LISTING_CURSOR_PURPOSE",
    "DescriptorListing",
    "ListedDescriptor",
    "ListingCursors",
    "current_revisions",
    "list_descriptors",
]

LISTING_CURSOR_PURPOSE = "taskctx.listing.v1"


class ListedDescriptor(FrozenModel):
    """One listed item: the binding it belongs to and its descriptor."""

    binding_id: str
    descriptor: SourceDescriptor


class DescriptorListing(FrozenModel):
    """One page of a listing: the items, the cursor of the next page (None: the last),
    the revisions the listing is pinned to, and the bindings that did not answer."""

    items: tuple[ListedDescriptor, ...]
    next_cursor: str | None
    revisions: Mapping[str, str | None] = Field(default_factory=dict)
    unavailable: tuple[str, ...] = ()


@attrs.define(slots=True, frozen=True)
class _Position:
    revisions: dict[str, str | None]
    binding: int
    source_cursor: str | None
    skip: int


@attrs.define(slots=True, frozen=True)
class ListingCursors:
    """Signs and opens the listing cursors of one context (task and bindings revision)."""

    signer: CursorSigner
    task_id: str
    context_revision: str
    ttl: float

    @classmethod
    def for_context(
        cls, key: bytes, task_id: str, context_revision: str, ttl: float
    ) -> ListingCursors:
        """The listing cursors of task ``task_id`` at bindings revision ``context_revision``."""
        return cls(CursorSigner(key, LISTING_CURSOR_PURPOSE), task_id, context_revision, ttl)

    def issue(self, at: _Position) -> str:
        """A signed cursor continuing the listing at ``at``."""
        body = {
            "task": self.task_id,
            "context": self.context_revision,
            "snapshot": at.revisions,
            "binding": at.binding,
            "source_cursor": at.source_cursor,
            "skip": at.skip,
        }
        return self.signer.issue(body, self.ttl)

    def open(self, cursor: str) -> _Position:
        """Verify ``cursor`` and say where the listing stands; CursorError or
        StaleReaderError names what is wrong."""
        body = self.signer.verify(cursor)
        try:
            revisions = {str(k): None if v is None else str(v) for k, v in body["snapshot"].items()}
            position = _Position(
                revisions, int(body["binding"]), body["source_cursor"], int(body["skip"])
            )
            task, context = str(body["task"]), str(body["context"])
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise CursorError(f"malformed listing cursor payload: {exc}") from None
        if task != self.task_id:
            raise CursorError("listing cursor was issued for another task")
        if context != self.context_revision:
            raise StaleReaderError("the bindings changed since this listing began; list again")
        return position


async def current_revisions(bindings: Mapping[str, SourceBinding]) -> dict[str, str | None]:
    """Each binding's current revision; None for one that did not answer."""
    revisions: dict[str, str | None] = {}
    for binding_id, binding in bindings.items():
        try:
            revisions[binding_id] = await binding.source.async_revision()
        except Exception:  # a source that cannot answer is named unavailable, not raised
            revisions[binding_id] = None
    return revisions


async def list_descriptors(
    bindings: Mapping[str, SourceBinding],
    cursors: ListingCursors,
    cursor: str | None,
    page_size: int,
    include_hidden: bool = False,
) -> DescriptorListing:
    """One page of at most ``page_size`` descriptors across ``bindings`` (the next page
    when ``cursor`` is one this listing issued)."""
    at = (
        cursors.open(cursor)
        if cursor is not None
        else _Position(await current_revisions(bindings), 0, None, 0)
    )
    order = list(bindings)
    unavailable = tuple(b for b in order if at.revisions.get(b) is None)
    items: list[ListedDescriptor] = []
    position, source_cursor, skip = at.binding, at.source_cursor, at.skip

    def page(next_at: _Position | None) -> DescriptorListing:
        next_cursor = cursors.issue(next_at) if next_at is not None else None
        return DescriptorListing(
            items=tuple(items),
            next_cursor=next_cursor,
            revisions=at.revisions,
            unavailable=unavailable,
        )

    while position < len(order):
        binding_id = order[position]
        revision = at.revisions.get(binding_id)
        if revision is None:  # unavailable when the listing began: nothing to list
            position, source_cursor, skip = position + 1, None, 0
            continue
        listed, next_source = await _source_page(
            binding_id, bindings[binding_id], revision, source_cursor, page_size
        )
        if not include_hidden:
            listed = [d for d in listed if not is_hidden_path(d.path)]
        taken = listed[skip : skip + page_size - len(items)]
        items += [ListedDescriptor(binding_id=binding_id, descriptor=d) for d in taken]
        if skip + len(taken) < len(listed):  # the page is full inside this source page
            return page(_Position(at.revisions, position, source_cursor, skip + len(taken)))
        if next_source is None:
            position, source_cursor, skip = position + 1, None, 0
        else:
            source_cursor, skip = next_source, 0
        if len(items) >= page_size:
            more = position < len(order)
            return page(_Position(at.revisions, position, source_cursor, 0) if more else None)
    return page(None)


async def _source_page(
    binding_id: str,
    binding: SourceBinding,
    revision: str,
    source_cursor: str | None,
    page_size: int,
) -> tuple[list[SourceDescriptor], str | None]:
    """One enumeration page of a binding at its pinned revision, and its next cursor."""
    request = EnumerationRequest(cursor=source_cursor, page_size=page_size, revision=revision)
    found = await binding.source.async_enumerate_descriptors(request)
    if found.revision != revision:
        raise StaleReaderError(
            f"source {binding_id!r} moved from revision {revision!r} to "
            f"{found.revision!r} since this listing began; list again"
        )
    if found.next_cursor is not None and found.next_cursor == source_cursor:
        raise SourceUnavailableError(
            f"source {binding_id!r} returned the same enumeration cursor twice"
        )
    return list(found.descriptors), found.next_cursor
