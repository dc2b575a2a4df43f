"""Context consumptions: which blocks of which package a model response consumed.

A host records a consumption after a model response succeeded, never before and never
for a failed request: :meth:`TaskContext.record_consumption` is called with the ids of
the request and of its response, or :meth:`TaskContext.consuming` wraps the call and
records only when its block exits without an exception.

The key of a consumption is ``(package_id, request_id, response_id)``. Recording the
same key again with the same content (blocks, phase, consumer) returns the consumption
first recorded, so a retried bookkeeping step is harmless; the same key with other
content raises :class:`~taskctx.errors.ConsumptionConflictError`.

Where consumptions live is a :class:`ConsumptionLog`: in memory by default, or a
persistent one a plugin provides (``taskctx_records.RecordConsumptionLog`` keeps them in
a RecordStore's event log, so a new TaskContext over the same store lists them).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Literal, Protocol, runtime_checkable

import attrs
from pydantic import Field

from taskctx.errors import ConsumptionConflictError, TaskCtxError
from taskctx.model import ContextConsumer, ContextPackage, ContextRef, FrozenModel, Snapshot

__all__ = [
    "ConsumptionLog",
    "ContextConsumption",
    "MemoryConsumptionLog",
    "PendingConsumption",
    "conflict_error",
    "make_consumption",
    "same_consumption",
]


class ContextConsumption(FrozenModel):
    """One model response's consumption of blocks of one package (an audit fact)."""

    version: Literal[1] = 1
    package_id: str
    task_id: str
    consumer: ContextConsumer
    phase: str | None = None
    request_id: str
    response_id: str
    block_ids: tuple[str, ...]
    refs: tuple[ContextRef, ...]
    """The canonical refs of ``block_ids``, in the same order."""
    snapshot: Snapshot
    """The pinned revisions the package was read from."""
    recorded_at: datetime = Field(default_factory=lambda: datetime.now(timezone.utc))

    @property
    def key(self) -> tuple[str, str, str]:
        """``(package_id, request_id, response_id)``: what makes a consumption unique."""
        return (self.package_id, self.request_id, self.response_id)


def same_consumption(a: ContextConsumption, b: ContextConsumption) -> bool:
    """Whether two consumptions record the same fact (everything but ``recorded_at``)."""
    return a.model_dump(exclude={"recorded_at"}) == b.model_dump(exclude={"recorded_at"})


def conflict_error(stored: ContextConsumption, new: ContextConsumption) -> ConsumptionConflictError:
    """The error for ``new`` recorded under the key of ``stored`` with other content."""
    package_id, request_id, response_id = new.key
    return ConsumptionConflictError(
        f"package {package_id!r}, request {request_id!r}, response {response_id!r} was "
        f"already recorded with other content (blocks {list(stored.block_ids)}, phase "
        f"{stored.phase!r}, consumer {stored.consumer.name!r})"
    )


@runtime_checkable
class ConsumptionLog(Protocol):
    """Where a TaskContext keeps its consumptions (``TaskContext(consumption_log=...)``)."""

    def append(self, consumption: ContextConsumption) -> ContextConsumption:
        """Store ``consumption``; return the stored one (the first recorded, for a key
        recorded before with the same content). Raise ``ConsumptionConflictError`` for
        a key recorded before with other content."""
        ...

    def consumptions(self, task_id: str) -> Sequence[ContextConsumption]:
        """Every consumption of ``task_id``, in the order they were recorded."""
        ...


@attrs.define(slots=True)
class MemoryConsumptionLog:
    """The default log: consumptions held by the TaskContext, lost with the process
    unless exported (``TaskContext.export_state``)."""

    _items: list[ContextConsumption] = attrs.field(factory=list)

    def append(self, consumption: ContextConsumption) -> ContextConsumption:
        """Store ``consumption`` unless its key is already held (then return that one)."""
        for stored in self._items:
            if stored.task_id == consumption.task_id and stored.key == consumption.key:
                if not same_consumption(stored, consumption):
                    raise conflict_error(stored, consumption)
                return stored
        self._items.append(consumption)
        return consumption

    def consumptions(self, task_id: str) -> Sequence[ContextConsumption]:
        """The consumptions of ``task_id`` held, in recording order."""
        return tuple(c for c in self._items if c.task_id == task_id)


def _non_empty(name: str, value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    if not value.strip():
        raise ValueError(f"{name} must be a non-empty string")
    return value


def _block_ids(package: ContextPackage, block_ids: Sequence[str] | None) -> tuple[str, ...]:
    known = [block.block_id for block in package.blocks]
    if block_ids is None:
        if not known:
            raise ValueError(f"package {package.package_id} has no blocks to consume")
        return tuple(known)
    if isinstance(block_ids, (str, bytes)) or not isinstance(block_ids, Sequence):
        raise TypeError(
            f"block_ids must be a sequence of block id strings or None (all blocks), "
            f"not {type(block_ids).__name__}"
        )
    wrong = [type(b).__name__ for b in block_ids if not isinstance(b, str)]
    if wrong:
        raise TypeError(f"block_ids must hold strings, not {', '.join(sorted(set(wrong)))}")
    if not block_ids:
        raise ValueError("block_ids is empty; pass None to record every block of the package")
    repeated = sorted({b for b in block_ids if block_ids.count(b) > 1})
    if repeated:
        raise ValueError(f"block_ids names these blocks more than once: {repeated}")
    unknown = [b for b in block_ids if b not in known]
    if unknown:
        raise ValueError(
            f"block ids {unknown} are not blocks of package {package.package_id} "
            f"(its blocks: {known})"
        )
    return tuple(block_ids)


def make_consumption(
    package: ContextPackage,
    task_id: str,
    *,
    request_id: str,
    response_id: str,
    block_ids: Sequence[str] | None = None,
    phase: str | None = None,
) -> ContextConsumption:
    """A consumption of ``package`` by one response, checked: every bad input raises a
    ``TypeError`` or ``ValueError`` naming what is wrong."""
    if not isinstance(package, ContextPackage):
        raise TypeError(f"package must be a ContextPackage, not {type(package).__name__}")
    if package.task_id != task_id:
        raise TaskCtxError(
            f"package {package.package_id} belongs to task {package.task_id!r}, not {task_id!r}"
        )
    request_id = _non_empty("request_id", request_id)
    response_id = _non_empty("response_id", response_id)
    if phase is not None:
        phase = _non_empty("phase", phase)
    ids = _block_ids(package, block_ids)
    by_id = {block.block_id: block for block in package.blocks}
    return ContextConsumption(
        package_id=package.package_id,
        task_id=task_id,
        consumer=package.consumer,
        phase=phase if phase is not None else package.phase,
        request_id=request_id,
        response_id=response_id,
        block_ids=ids,
        refs=tuple(by_id[b].ref for b in ids),
        snapshot=package.snapshot,
    )


@attrs.define(slots=True)
class PendingConsumption:
    """What ``with ctx.consuming(package, request_id=...) as pending:`` yields.

    Set ``response_id`` (and, if only some blocks were sent, ``block_ids``) inside the
    block; when it exits without an exception the consumption is recorded and kept in
    ``consumption``. An exception records nothing.
    """

    package: ContextPackage
    request_id: str
    response_id: str | None = None
    block_ids: Sequence[str] | None = None
    phase: str | None = None
    consumption: ContextConsumption | None = None
