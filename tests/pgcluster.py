"""A throwaway PostgreSQL cluster from Debian's packages, for tests and CI.

``initdb`` into a temporary directory (as the ``postgres`` user when run as root, since the
server refuses to run as root), listen on 127.0.0.1 only on a free port with fsync off, and
stop the server by its pid. Standard library only, so ``.ci/run`` can use it before the
virtualenv exists::

    eval "$(python3 tests/pgcluster.py start)"   # exports TASKCTX_PG_DSN, _PID and _DIR
    python3 tests/pgcluster.py stop "$TASKCTX_PG_PID" "$TASKCTX_PG_DIR"
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SERVER_USER = "postgres"
HOW_TO_GET_ONE = (
    "install Debian's postgresql package (./.ci/install-postgres does) or point "
    "TASKCTX_PG_DSN at a server you may create databases on"
)


class ClusterError(RuntimeError):
    """The cluster could not be created, started or stopped; the message says why."""


def find_bindir() -> Path:
    """The newest PostgreSQL server bin folder (``TASKCTX_PG_BINDIR`` overrides)."""
    override = os.environ.get("TASKCTX_PG_BINDIR")
    candidates = (
        [Path(override)]
        if override
        else sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=_major_version)
    )
    for bindir in reversed(candidates):
        if (bindir / "initdb").is_file() and (bindir / "postgres").is_file():
            return bindir
    where = override or "/usr/lib/postgresql/*/bin"
    raise ClusterError(f"no PostgreSQL server binaries (initdb, postgres) in {where}")


def _major_version(bindir: Path) -> int:
    name = bindir.parent.name
    return int(name) if name.isdigit() else 0


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _as_server_user() -> dict[str, Any]:
    """Popen arguments that run a command as the postgres user when we are root."""
    if os.geteuid() != 0:
        return {}
    return {"user": SERVER_USER, "group": SERVER_USER, "extra_groups": []}


@dataclass
class Cluster:
    """One throwaway cluster: its folder, port and server process."""

    base: Path
    port: int
    bindir: Path
    pid: int = 0
    _process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def datadir(self) -> Path:
        """The cluster's data directory."""
        return self.base / "data"

    @property
    def log(self) -> Path:
        """The server's log file."""
        return self.base / "server.log"

    @property
    def dsn(self) -> str:
        """A libpq URL for the superuser's maintenance database."""
        return f"postgresql://{SERVER_USER}@127.0.0.1:{self.port}/postgres"

    @classmethod
    def create(cls) -> Cluster:
        """``initdb`` a new cluster into a fresh temporary folder and start it."""
        bindir = find_bindir()
        base = Path(tempfile.mkdtemp(prefix="taskctx-pg-"))
        if os.geteuid() == 0:
            shutil.chown(base, SERVER_USER, SERVER_USER)
        cluster = cls(base=base, port=free_port(), bindir=bindir)
        try:
            cluster._initdb()
            cluster.start()
        except BaseException:
            cluster.stop()
            raise
        return cluster

    def _initdb(self) -> None:
        command = [
            str(self.bindir / "initdb"),
            "-D",
            str(self.datadir),
            "-A",
            "trust",
            "-U",
            SERVER_USER,
            "-E",
            "UTF8",
            "--locale=C.UTF-8",
            "--no-sync",
        ]
        done = subprocess.run(
            command, capture_output=True, text=True, check=False, **_as_server_user()
        )
        if done.returncode != 0:
            raise ClusterError(f"initdb failed ({done.returncode}): {done.stderr.strip()}")

    def start(self, timeout: float = 60.0) -> None:
        """Start the server (again) on the same port and wait until it accepts connections."""
        command = [
            str(self.bindir / "postgres"), "-D", str(self.datadir),
            "-c", "listen_addresses=127.0.0.1", "-p", str(self.port),
            "-c", f"unix_socket_directories={self.base}",
            "-c", "fsync=off", "-c", "full_page_writes=off", "-c", "max_connections=200",
            # commit times of rows, so tests can check that revisions commit in order
            "-c", "track_commit_timestamp=on",
        ]  # fmt: skip
        with self.log.open("ab") as log:
            self._process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, **_as_server_user(),
            )  # fmt: skip
        self.pid = self._process.pid
        self._wait_ready(timeout)

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        ready = [str(self.bindir / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(self.port)]
        while time.monotonic() < deadline:
            if self._process is not None and self._process.poll() is not None:
                raise ClusterError(f"the server exited at start-up: {self._log_tail()}")
            if subprocess.run(ready, check=False).returncode == 0:
                return
            time.sleep(0.05)
        raise ClusterError(f"the server did not accept connections in {timeout:.0f} s")

    def _log_tail(self) -> str:
        with contextlib.suppress(OSError):
            return self.log.read_text(errors="replace")[-2000:].strip()
        return "(no log)"

    def halt(self, timeout: float = 30.0, *, immediate: bool = False) -> None:
        """Stop the server by its pid and keep its files: a fast shutdown (SIGINT), or with
        ``immediate`` PostgreSQL's immediate shutdown (SIGQUIT: no checkpoint, crash
        recovery at the next start), SIGKILL after ``timeout`` seconds either way."""
        if self.pid:
            first = signal.SIGQUIT if immediate else signal.SIGINT
            stop_pid(self.pid, timeout, self._process, first=first)
        self.pid, self._process = 0, None

    def restart(self, *, immediate: bool = False) -> None:
        """Stop the server and start it again on the same data and port."""
        self.halt(immediate=immediate)
        self.start()

    def stop(self) -> None:
        """Stop the server and remove the cluster's folder."""
        self.halt()
        shutil.rmtree(self.base, ignore_errors=True)


def stop_pid(
    pid: int,
    timeout: float = 30.0,
    process: subprocess.Popen[bytes] | None = None,
    *,
    first: signal.Signals = signal.SIGINT,
) -> None:
    """``first`` (SIGINT: PostgreSQL's fast shutdown) to ``pid``, SIGKILL after ``timeout``."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, first)
    if not _wait_gone(pid, timeout, process):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        _wait_gone(pid, 10.0, process)


def _wait_gone(pid: int, timeout: float, process: subprocess.Popen[bytes] | None) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None:
            if process.poll() is not None:
                return True
        else:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return True
        time.sleep(0.05)
    return False


def main(argv: list[str]) -> int:
    """``start`` prints shell exports; ``stop PID DIR`` stops the server and removes DIR."""
    if argv[:1] == ["start"]:
        cluster = Cluster.create()
        for name, value in (("DSN", cluster.dsn), ("PID", cluster.pid), ("DIR", cluster.base)):
            print(f"export TASKCTX_PG_{name}={shlex.quote(str(value))}")
        return 0
    if argv[:1] == ["stop"] and len(argv) == 3:
        stop_pid(int(argv[1]))
        shutil.rmtree(argv[2], ignore_errors=True)
        return 0
    print("usage: pgcluster.py start | stop PID DIR", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
