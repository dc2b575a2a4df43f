"""Named snapshots: a snapshot is a store revision with a name, not a copy.

Every read "as of" a revision is exact (the store is append-only), so naming the current
revision is all a snapshot takes. Only the ``keep_last`` newest names are kept; the
revisions they named stay readable either way.
"""

from __future__ import annotations

from datetime import datetime

from taskctx_records.values import Snapshot
from taskctx_records.writes import Transaction, current_revision, utc_now

__all__ = ["kept", "take"]


def take(write: Transaction, name: str | None = None, keep_last: int = 10) -> Snapshot:
    """Name the current revision in one write transaction; keep the ``keep_last`` newest."""
    if keep_last < 1:
        raise ValueError("keep_last must be at least 1")
    now = utc_now()
    with write() as conn:
        revision = current_revision(conn)
        if name is None:
            seq = conn.execute("SELECT COALESCE(MAX(seq), 0) + 1 AS next FROM snapshots").fetchone()
            name = f"snapshot-{revision}-{seq['next']}"
        if conn.execute("SELECT 1 FROM snapshots WHERE name = ?", (name,)).fetchone():
            raise ValueError(f"a snapshot named {name!r} exists")
        conn.execute(
            "INSERT INTO snapshots (name, revision, created_at) VALUES (?, ?, ?)",
            (name, revision, now),
        )
        conn.execute(
            "DELETE FROM snapshots WHERE seq NOT IN "
            "(SELECT seq FROM snapshots ORDER BY seq DESC LIMIT ?)",
            (keep_last,),
        )
    return Snapshot(name=name, revision=revision, created_at=datetime.fromisoformat(now))


def kept(read: Transaction) -> list[Snapshot]:
    """The kept snapshots, oldest first."""
    with read() as conn:
        rows = conn.execute(
            "SELECT name, revision, created_at FROM snapshots ORDER BY seq"
        ).fetchall()
    return [
        Snapshot(
            name=row["name"],
            revision=row["revision"],
            created_at=datetime.fromisoformat(row["created_at"]),
        )
        for row in rows
    ]
