"""The throwaway cluster the tests and CI start (tests/pgcluster.py, tests/pgfixtures.py)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import psycopg
import pytest

from tests.pgcluster import Cluster

pytestmark = pytest.mark.postgres

ROOT = Path(__file__).resolve().parents[3]


def test_the_script_starts_a_cluster_and_stops_it_by_pid() -> None:
    """`pgcluster.py start` prints exports of a server on 127.0.0.1 with fsync off;
    `stop PID DIR` ends that process and removes its folder."""
    script = str(ROOT / "tests" / "pgcluster.py")
    started = subprocess.run(
        [sys.executable, script, "start"], capture_output=True, text=True, check=True, timeout=120
    )
    exports = dict(
        shlex.split(line)[1].split("=", 1) for line in started.stdout.splitlines() if line
    )
    pid, folder = int(exports["TASKCTX_PG_PID"]), Path(exports["TASKCTX_PG_DIR"])
    try:
        assert exports["TASKCTX_PG_DSN"].startswith("postgresql://postgres@127.0.0.1:")
        with psycopg.connect(exports["TASKCTX_PG_DSN"]) as conn:
            settings: dict[str, str] = dict(
                conn.execute(
                    "SELECT name, setting FROM pg_settings WHERE name IN "
                    "('fsync', 'listen_addresses')"
                ).fetchall()
            )
        assert settings == {"fsync": "off", "listen_addresses": "127.0.0.1"}
    finally:
        subprocess.run([sys.executable, script, "stop", str(pid), str(folder)], check=True)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not folder.exists()


def test_a_restart_keeps_the_data(pg_private_cluster: Cluster) -> None:
    """restart() stops the server by its pid and starts it on the same data and port."""
    with psycopg.connect(pg_private_cluster.dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE kept (n integer)")
        conn.execute("INSERT INTO kept VALUES (7)")
    before = pg_private_cluster.pid
    pg_private_cluster.restart(immediate=True)
    assert pg_private_cluster.pid != before
    with psycopg.connect(pg_private_cluster.dsn) as conn:
        assert conn.execute("SELECT n FROM kept").fetchall() == [(7,)]


NEEDS_SERVER = textwrap.dedent(
    """
    def test_needs_a_server(pg_dsn):
        pass
    """
)


@pytest.mark.parametrize(("ci", "outcome"), [("true", "1 error"), ("", "1 skipped")])
def test_a_server_that_cannot_start_fails_in_ci_and_skips_locally(
    tmp_path: Path, ci: str, outcome: str
) -> None:
    """Without binaries and without TASKCTX_PG_DSN, a test needing PostgreSQL fails under
    CI=true and is skipped otherwise, saying in both cases how to get a server."""
    (tmp_path / "test_needs.py").write_text(NEEDS_SERVER)
    (tmp_path / "conftest.py").write_text("from tests.pgfixtures import pg_cluster, pg_dsn\n")
    environment = {k: v for k, v in os.environ.items() if k != "TASKCTX_PG_DSN"}
    environment.update(CI=ci, TASKCTX_PG_BINDIR=str(tmp_path / "no-postgres"), PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(tmp_path)],
        capture_output=True, text=True, env=environment, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert outcome in done.stdout, done.stdout
    assert (done.returncode == 0) is (ci != "true")
    assert "./.ci/install-postgres" in done.stdout
    assert "TASKCTX_PG_DSN" in done.stdout
