"""taskctx-records: a durable, append-only record store for task context (SQLite, or a
database a backend plugin serves, such as PostgreSQL through taskctx-postgres).

Versioned records with exact reads as of any revision, links, checkpoints, snapshots
(revision numbers), an indexed event log, keyset queries with signed snapshot-bound
cursors, and a materialization budget. Source kind ``record_store``.
"""

from __future__ import annotations

from taskctx_records.budget import MaterializationWarning
from taskctx_records.consumptions import RecordConsumptionLog
from taskctx_records.errors import (
    CheckpointConflictError,
    EventConflictError,
    PinnedViewLimitError,
    RecordStoreCorruptError,
    RecordStoreError,
    RecordStorePathError,
    RecordStoreUnavailableError,
)
from taskctx_records.pinned import PinnedView, PinnedViewLimits
from taskctx_records.store import DB_NAME, RecordStore
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
    format_content_version,
    parse_content_version,
)

__all__ = [
    "DB_NAME",
    "BoundedRead",
    "Checkpoint",
    "CheckpointConflictError",
    "Event",
    "EventConflictError",
    "EventPage",
    "Link",
    "MaterializationEvent",
    "MaterializationWarning",
    "PinnedView",
    "PinnedViewLimitError",
    "PinnedViewLimits",
    "QueryPage",
    "Record",
    "RecordConsumptionLog",
    "RecordId",
    "RecordRef",
    "RecordStore",
    "RecordStoreCorruptError",
    "RecordStoreError",
    "RecordStorePathError",
    "RecordStoreUnavailableError",
    "Snapshot",
    "format_content_version",
    "parse_content_version",
]
