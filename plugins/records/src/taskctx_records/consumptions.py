"""Context consumptions persisted in a RecordStore's event log.

``TaskContext(task_id, consumption_log=RecordConsumptionLog(records))`` keeps every
consumption of the task as an event of type ``context_consumed`` on the stream
``taskctx.consumptions/<task id>``, with the consumption key
``<package id>|<request id>|<response id>`` as idempotency key. A new TaskContext over
the same store lists the consumptions earlier ones recorded, in recording order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from taskctx.consumption import ContextConsumption, conflict_error, same_consumption
from taskctx_records.errors import EventConflictError

if TYPE_CHECKING:
    from taskctx_records.store import RecordStore
    from taskctx_records.values import Event

__all__ = ["CONSUMED_EVENT", "RecordConsumptionLog", "consumption_stream"]

CONSUMED_EVENT = "context_consumed"
"""The event type of a recorded consumption."""

_PAGE = 500


def consumption_stream(task_id: str) -> str:
    """The event stream holding the consumptions of ``task_id``."""
    return f"taskctx.consumptions/{task_id}"


def _key(consumption: ContextConsumption) -> str:
    return "|".join(consumption.key)


class RecordConsumptionLog:
    """A :class:`~taskctx.consumption.ConsumptionLog` on a read-write RecordStore."""

    def __init__(self, store: RecordStore) -> None:
        from taskctx_records.store import RecordStore

        if not isinstance(store, RecordStore):
            raise TypeError(f"store must be a RecordStore, not {type(store).__name__}")
        if store.mode != "read_write":
            raise ValueError(f"{store!r} is read-only; consumptions need a store opened read_write")
        self.store = store

    def __repr__(self) -> str:
        return f"RecordConsumptionLog({self.store!r})"

    def _events(self, task_id: str) -> list[Event]:
        page = self.store.events(consumption_stream(task_id), page_size=_PAGE)
        events = list(page.events)
        while page.has_more and page.cursor is not None:
            page = self.store.events_continue(page.cursor)
            events.extend(page.events)
        return [e for e in events if e.type == CONSUMED_EVENT]

    def append(self, consumption: ContextConsumption) -> ContextConsumption:
        """Append ``consumption`` once; a key recorded before returns the stored one when
        the content is the same and raises ``ConsumptionConflictError`` when not."""
        key = _key(consumption)
        try:
            event = self.store.append_event(
                consumption_stream(consumption.task_id),
                CONSUMED_EVENT,
                consumption.model_dump(mode="json"),
                actor=consumption.consumer.name,
                task_id=consumption.task_id,
                idempotency_key=key,
            )
        except EventConflictError:  # the key is taken by a payload recorded at another time
            for event in self._events(consumption.task_id):
                if event.idempotency_key == key:
                    stored = ContextConsumption.model_validate(event.payload)
                    if same_consumption(stored, consumption):
                        return stored
                    raise conflict_error(stored, consumption) from None
            raise
        return ContextConsumption.model_validate(event.payload)

    def consumptions(self, task_id: str) -> Sequence[ContextConsumption]:
        """Every consumption of ``task_id`` in the store, in recording order."""
        return tuple(ContextConsumption.model_validate(e.payload) for e in self._events(task_id))
