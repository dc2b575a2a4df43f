"""PostgreSQL fixtures: one server per test session, one fresh database per test.

The server is the one ``TASKCTX_PG_DSN`` names (``.ci/run`` starts a throwaway cluster and
exports it); without it, the first test that asks starts one from Debian's packages
(tests/pgcluster.py) and stops it at the end of the session. In CI a server that cannot
start fails the test; locally the test is skipped with a message that says how to get one.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from tests.pgcluster import HOW_TO_GET_ONE, Cluster, ClusterError

DSN_VARIABLE = "TASKCTX_PG_DSN"


def _unavailable(reason: str) -> None:
    message = f"PostgreSQL is not available ({reason}); {HOW_TO_GET_ONE}"
    if os.environ.get("CI") == "true":
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster | None]:
    """The cluster this session started, or None when ``TASKCTX_PG_DSN`` names a server."""
    if os.environ.get(DSN_VARIABLE):
        yield None
        return
    try:
        cluster = Cluster.create()
    except (ClusterError, OSError) as error:
        _unavailable(str(error))
        return
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def pg_private_cluster() -> Iterator[Cluster]:
    """A cluster of this test's own (for tests that stop or restart the server)."""
    try:
        cluster = Cluster.create()
    except (ClusterError, OSError) as error:
        _unavailable(str(error))
        raise
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def pg_dsn(pg_cluster: Cluster | None) -> str:
    """A libpq URL of a server's maintenance database this session may create databases on."""
    return pg_cluster.dsn if pg_cluster is not None else os.environ[DSN_VARIABLE]


@pytest.fixture
def pg_database(pg_dsn: str) -> Iterator[str]:
    """The URL of a new, empty database, dropped (with its connections) after the test."""
    psycopg = pytest.importorskip("psycopg", reason="taskctx-postgres is not installed")
    name = f"taskctx_test_{uuid.uuid4().hex[:16]}"
    try:
        with psycopg.connect(pg_dsn, autocommit=True, connect_timeout=10) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
    except psycopg.OperationalError as error:
        _unavailable(f"cannot create a database on {pg_dsn}: {error}")
    base, _, _ = pg_dsn.rpartition("/")
    try:
        yield f"{base}/{name}"
    finally:
        with psycopg.connect(pg_dsn, autocommit=True, connect_timeout=10) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
