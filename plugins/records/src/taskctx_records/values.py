"""Frozen pydantic values the record store returns: records, refs, pages, events, ..."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from taskctx.model import FrozenModel, SourceCoverage

__all__ = [
    "BoundedRead",
    "Checkpoint",
    "ContentType",
    "Event",
    "EventPage",
    "Link",
    "MaterializationEvent",
    "QueryPage",
    "Record",
    "RecordId",
    "RecordRef",
    "Snapshot",
    "format_content_version",
    "format_revision",
    "parse_content_version",
    "parse_revision",
    "record_id_of",
]

ContentType = Literal["text", "bytes", "json"]

_REVISION = re.compile(r"r(0|[1-9][0-9]*)")


def format_revision(revision: int) -> str:
    """``r<N>``: a store revision as the ``record_store`` source writes it."""
    if isinstance(revision, bool) or not isinstance(revision, int) or revision < 0:
        raise ValueError(f"a store revision is an int >= 0, not {revision!r}")
    return f"r{revision}"


def parse_revision(text: str) -> int:
    """The store revision ``r<N>`` names; ValueError naming ``text`` for anything else."""
    match = _REVISION.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"not a record store revision ('r<N>', e.g. 'r12'): {text!r}")
    return int(match[1])


def format_content_version(revision: int, sha256: str) -> str:
    """``r<N>:<sha256>``: the content version of the record version written at ``revision``."""
    return f"{format_revision(revision)}:{sha256}"


def parse_content_version(text: str) -> int:
    """The store revision a ``r<N>:<sha256>`` content version was written at; ValueError
    naming ``text`` for anything else."""
    head, colon, _ = text.partition(":") if isinstance(text, str) else ("", "", "")
    if not colon:
        raise ValueError(f"not a record content version ('r<N>:<sha256>'): {text!r}")
    return parse_revision(head)


class RecordRef(FrozenModel):
    """What a ``put`` wrote: the record id, its new version and the store revision it took."""

    id: str
    collection: str
    version: int
    revision: int
    content_type: ContentType
    sha256: str
    size: int


def record_id_of(value: object, parameter: str) -> str:
    """The record id ``value`` names: a ``str`` id, or the ``id`` of a RecordRef or Record.

    Anything else is a TypeError naming ``parameter`` and the types accepted. A ref names
    its record, not its version: reads still follow ``at_revision`` (default: now).
    """
    if isinstance(value, str):
        return value
    if isinstance(value, (RecordRef, Record)):
        return value.id
    raise TypeError(
        f"{parameter} must be a record id (str), a RecordRef or a Record, "
        f"not {type(value).__name__}"
    )


class Record(FrozenModel):
    """One version of a record as of some revision (``revision`` is when this version was
    written). ``content`` is ``str`` (text), ``bytes`` (bytes) or a JSON value (json)."""

    id: str
    collection: str
    kind: str | None = None
    scope: Mapping[str, Any] = Field(default_factory=dict)
    source: str | None = None
    meta: Mapping[str, Any] = Field(default_factory=dict)
    content_type: ContentType
    content: Any
    sha256: str
    size: int
    version: int
    revision: int
    created_at: datetime


RecordId = str | RecordRef | Record
"""What names a record: its id, the RecordRef ``put`` returned, or a Record read."""


class BoundedRead(FrozenModel):
    """A bounded slice of a record's canonical content; ``sha256`` and ``size`` are of the
    whole. Text and JSON are sliced by characters (``text``), bytes by bytes (``data``)."""

    record_id: str
    offset: int
    text: str | None = None
    data: bytes | None = None
    eof: bool
    sha256: str
    size: int
    chars: int | None = None
    version: int
    revision: int


class Link(FrozenModel):
    """A directed, typed relation between two records."""

    source_id: str
    target_id: str
    relation: str
    meta: Mapping[str, Any] = Field(default_factory=dict)
    revision: int
    created_at: datetime


class Checkpoint(FrozenModel):
    """A run's saved state; ``state_version`` counts from 1 per run."""

    run_id: str
    state_version: int
    state: Any
    revision: int
    created_at: datetime


class Snapshot(FrozenModel):
    """A named store revision: a number, not a copy."""

    name: str
    revision: int
    created_at: datetime


class Event(FrozenModel):
    """One appended event; ``sequence`` counts from 1 per stream."""

    stream: str
    sequence: int
    type: str
    payload: Any
    actor: str | None = None
    task_id: str | None = None
    idempotency_key: str | None = None
    revision: int
    created_at: datetime


class QueryPage(FrozenModel):
    """One page of a record query pinned to ``revision``.

    ``has_more`` says whether another page exists; ``coverage`` how much of the whole
    matching set (at ``revision``) this page holds.
    """

    records: tuple[Record, ...]
    cursor: str | None
    has_more: bool
    coverage: SourceCoverage
    revision: int
    page: int = 1


class EventPage(FrozenModel):
    """One page of an event query pinned to ``revision``."""

    events: tuple[Event, ...]
    cursor: str | None
    has_more: bool
    coverage: SourceCoverage
    revision: int
    page: int = 1


class MaterializationEvent(FrozenModel):
    """One operation that expanded more records than the materialization budget allows."""

    operation: str
    count: int
    limit: int
    call_site: str
