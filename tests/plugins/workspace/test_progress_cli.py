"""Progress of the slow phase on a terminal: documents read, items indexed; never on a
pipe and never with --json."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

TASKCTX = str(Path(sys.executable).with_name("taskctx"))


def _folder(tmp_path: Path) -> Path:
    root = tmp_path / "manuals"
    root.mkdir()
    for n in range(30):
        (root / f"m{n:02}.md").write_text(f"# Manual {n}\n\nThe upload step {n} retries.\n")
    return root


def _run(args: list[str], tmp_path: Path, *, terminal: bool) -> tuple[str, str]:
    """Run taskctx with stderr on a pseudo-terminal (or a pipe); (stdout, stderr)."""
    env = {
        **os.environ,
        "TASKCTX_STATE_DIR": str(tmp_path / "state"),
        "TASKCTX_LOAD_PLUGINS": "taskctx-workspace,taskctx-fts",
    }
    if not terminal:
        done = subprocess.run([TASKCTX, *args], capture_output=True, text=True, env=env, check=True)
        return done.stdout, done.stderr
    leader, follower = pty.openpty()
    stdout = tmp_path / "stdout.txt"
    with stdout.open("wb") as sink:
        process = subprocess.Popen([TASKCTX, *args], stdout=sink, stderr=follower, env=env)
        os.close(follower)
        chunks = []
        while True:
            try:
                data = os.read(leader, 65536)
            except OSError:  # the other end closed
                break
            if not data:
                break
            chunks.append(data)
        os.close(leader)
        assert process.wait() == 0
    return stdout.read_text(encoding="utf-8"), b"".join(chunks).decode(errors="replace")


def _bars(stderr: str) -> set[tuple[str, str]]:
    """(task, done/total) of every bar drawn."""
    return set(re.findall(r"((?:reading|indexing) \S+)\s+\[[#-]+\]\s+(\d+/\d+)", stderr))


@pytest.mark.parametrize("command", ["index", "read"])
def test_a_terminal_sees_the_files_read_and_the_items_indexed(tmp_path: Path, command: str) -> None:
    """A cold run draws a bar per phase that reaches its total."""
    root = _folder(tmp_path)
    args = [command, str(root)] + (["-q", "upload"] if command == "read" else [])
    out, err = _run(args, tmp_path, terminal=True)
    bars = _bars(err)
    assert ("reading manuals", "30/30") in bars
    assert any(
        label == "indexing files" and at.split("/")[0] == at.split("/")[1] for label, at in bars
    ), bars
    assert "indexing" not in out
    assert "reading manuals" not in out


def test_a_pipe_and_json_output_see_no_progress(tmp_path: Path) -> None:
    """stderr on a pipe gets no bar; --json gets none even on a terminal."""
    root = _folder(tmp_path)
    _, piped = _run(["index", str(root)], tmp_path, terminal=False)
    assert piped == ""
    (tmp_path / "state").rename(tmp_path / "state-first")
    out, err = _run(["read", str(root), "-q", "upload", "--json"], tmp_path, terminal=True)
    assert err == ""
    assert out.lstrip().startswith("{")
