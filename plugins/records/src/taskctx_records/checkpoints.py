"""Run checkpoints: a run's state saved as numbered versions, with optimistic concurrency.

Each save takes the next store revision and the run's next ``state_version`` (from 1).
``expected_state_version`` is the version the caller believes is the latest (``0``: none
yet); a mismatch raises :class:`~taskctx_records.errors.CheckpointConflictError` and writes
nothing.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from taskctx_records.content import canonical_json
from taskctx_records.errors import CheckpointConflictError
from taskctx_records.values import Checkpoint
from taskctx_records.writes import Transaction, allocate, utc_now

__all__ = ["latest", "save"]


def save(
    write: Transaction, run_id: str, state: Any, expected_state_version: int | None = None
) -> Checkpoint:
    """Save ``state`` as the run's next version in one write transaction."""
    if not run_id:
        raise ValueError("a checkpoint needs a run_id")
    state_json = canonical_json(state, "checkpoint state")
    now = utc_now()
    with write() as conn:
        row = conn.execute(
            "SELECT COALESCE(MAX(state_version), 0) AS current FROM checkpoints WHERE run_id = ?",
            (run_id,),
        ).fetchone()
        current = int(row["current"])
        if expected_state_version is not None and expected_state_version != current:
            raise CheckpointConflictError(run_id, expected_state_version, current)
        revision = allocate(conn, 1)
        conn.execute(
            "INSERT INTO checkpoints (run_id, state_version, state, revision, created_at) "
            "VALUES (?, ?, ?, ?, ?)",
            (run_id, current + 1, state_json, revision, now),
        )
    return Checkpoint(
        run_id=run_id,
        state_version=current + 1,
        state=json.loads(state_json),
        revision=revision,
        created_at=datetime.fromisoformat(now),
    )


def latest(read: Transaction, run_id: str) -> Checkpoint | None:
    """The run's latest checkpoint, or None."""
    with read() as conn:
        row = conn.execute(
            "SELECT state_version, state, revision, created_at FROM checkpoints "
            "WHERE run_id = ? ORDER BY state_version DESC LIMIT 1",
            (run_id,),
        ).fetchone()
    if row is None:
        return None
    return Checkpoint(
        run_id=run_id,
        state_version=row["state_version"],
        state=json.loads(row["state"]),
        revision=row["revision"],
        created_at=datetime.fromisoformat(row["created_at"]),
    )
