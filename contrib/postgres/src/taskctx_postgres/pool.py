"""The connection pool every part of taskctx-postgres opens the same way."""

from __future__ import annotations

from psycopg_pool import ConnectionPool

from taskctx_postgres.url import Target

__all__ = ["open_pool"]


def open_pool(target: Target, size: int, name: str) -> ConnectionPool:
    """An opened pool of up to ``size`` autocommit connections to ``target``.

    The URL's ``connect_timeout`` bounds the wait for a pooled connection too, and each
    connection is checked as it is handed out, so after a server restart the pool replaces
    dead ones instead of failing the next operations. Raises ``PoolTimeout`` when no
    connection opens in time (the caller says which server).
    """
    pool = ConnectionPool(
        target.url,
        min_size=1,
        max_size=max(1, size),
        kwargs={"autocommit": True, "connect_timeout": target.connect_timeout},
        timeout=target.connect_timeout,
        check=ConnectionPool.check_connection,
        open=False,
        name=name,
    )
    pool.open(wait=True, timeout=target.connect_timeout)
    return pool
