"""taskctx-postgres: taskctx's record store on PostgreSQL, for teams past one machine.

``RecordStore("postgresql://user@host:port/db")`` opens (or creates) the store in that
database through :class:`~taskctx_postgres.backend.PostgresBackend`, the backend this
distribution registers for ``postgresql://`` and ``postgres://`` URLs.
"""

from __future__ import annotations

from taskctx_postgres.backend import PostgresBackend
from taskctx_postgres.url import Target, parse_target

__all__ = ["PostgresBackend", "Target", "parse_target"]
