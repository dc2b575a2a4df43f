"""Paging: where the next page of a result starts, and the cursor that carries it there.

The one owner of paging state. The assembler and the selection step only say where
they stopped; :func:`next_position` decides whether there is a next page, and
:class:`ResultCursors` signs and opens the cursors that continue a result.
"""

from __future__ import annotations

import attrs

from taskctx.cursor import CursorSigner
from taskctx.errors import CursorError
from taskctx.model import ContextReadIntent, Snapshot

__all__ = [
    "CURSOR_PURPOSE",
    "MAX_CURSOR_PARTS",
    "Continuation",
    "ResultCursors",
    "next_position",
]

CURSOR_PURPOSE = "taskctx.reader.v1"
MAX_CURSOR_PARTS = 256
"""How many part refs a cursor carries at most (the latest): a cursor stays a few KB
however many pages a result has; a reader in the same process remembers them all."""


def next_position(stopped_at: int | None, ranked: int, ranking_goes_on: bool) -> int | None:
    """Where the next page starts, or None when this page is the last.

    ``stopped_at`` is the first ranked candidate the page did not handle (None: optional
    selection was off, so there is nothing more to page through); ``ranked`` how many
    candidates the page saw; ``ranking_goes_on`` whether a binding's ranking was cut at
    the search window, so the next page asks for more.
    """
    if stopped_at is None:
        return None
    if stopped_at < ranked:
        return stopped_at
    return ranked if ranking_goes_on else None


@attrs.define(slots=True, frozen=True)
class Continuation:
    """What a cursor carries: the snapshot, the intent, where the page starts, and the
    refs of the parts (``chars:S-E``) the result's earlier pages delivered, so a reader
    in another process continuing it cuts no part that repeats them."""

    snapshot: Snapshot
    intent: ContextReadIntent
    position: int
    page: int
    parts: tuple[str, ...] = ()


@attrs.define(slots=True, frozen=True)
class ResultCursors:
    """Signs and opens the cursors of one task and consumer."""

    signer: CursorSigner
    task_id: str
    consumer: str
    ttl: float

    @classmethod
    def for_reader(cls, key: bytes, task_id: str, consumer: str, ttl: float) -> ResultCursors:
        """The cursors of a reader of ``task_id`` for ``consumer``, signed with ``key``."""
        return cls(CursorSigner(key, CURSOR_PURPOSE), task_id, consumer, ttl)

    def issue(self, at: Continuation) -> str:
        """A signed cursor that continues the result at ``at``."""
        return self.signer.issue(
            {
                "task": self.task_id,
                "consumer": self.consumer,
                "snapshot": at.snapshot.model_dump(mode="json"),
                "intent": at.intent.model_dump(mode="json"),
                "position": at.position,
                "page": at.page,
                "parts": list(at.parts),
            },
            self.ttl,
        )

    def open(self, cursor: str) -> Continuation:
        """Verify ``cursor`` and say where it continues; CursorError names what is wrong."""
        body = self.signer.verify(cursor)
        try:
            snapshot = Snapshot.model_validate(body["snapshot"])
            intent = ContextReadIntent.model_validate(body["intent"])
            position, page = int(body["position"]), int(body["page"])
            parts = tuple(str(ref) for ref in body.get("parts", ()))
        except (KeyError, TypeError, ValueError) as exc:
            raise CursorError(f"malformed cursor payload: {exc}") from None
        if body.get("task") != self.task_id or body.get("consumer") != self.consumer:
            raise CursorError("cursor was issued for another task or consumer")
        return Continuation(snapshot, intent, position, page, parts)
