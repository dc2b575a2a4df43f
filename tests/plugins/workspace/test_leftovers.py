"""Temporary files of killed writers are removed later, a live writer's never.

A writer's temporary file is named ``.<name>.taskctx-tmp-<pid>-<random>`` and locked
while it lives. The next write into the same folder (and, in read-write mode, any walk
that meets it) removes it once its lock is free and its pid is dead.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from taskctx_workspace import TaskWorkspace
from taskctx_workspace.paths import TEMP_MARKER

from taskctx import PluginHost

NEW = b"new text, longer than the old one\n" * 1000

WRITER = textwrap.dedent(
    """
    import os, signal, sys, time
    from taskctx import PluginHost
    from taskctx_workspace import TaskWorkspace, staging

    root, mode, execution, action, ready, go = sys.argv[1:7]
    ws = TaskWorkspace(root, mode=mode, execution_id=execution, host=PluginHost(allow=[]))
    staged = ws.stage("candidate.txt", b"new text, longer than the old one\\n" * 1000)

    def hook(step):
        if step != "temp_synced":
            return
        open(ready, "w").close()
        if action == "die":
            os.kill(os.getpid(), signal.SIGKILL)
        while not os.path.exists(go):
            time.sleep(0.01)

    staging._step_hook = hook
    ws.promote(staged, "out/report.txt", staged.sha256)
    print("promoted")
    """
)


def _writer(
    tmp_path: Path, root: Path, mode: str, action: str, execution: str = "run"
) -> tuple[subprocess.Popen[bytes], Path]:
    ready = tmp_path / f"{action}-{time.monotonic_ns()}.ready"
    go = tmp_path / "go"
    child = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(root), mode, execution, action, str(ready), str(go)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while not ready.exists():
        assert child.poll() is None or action == "die", child.stderr.read() if child.stderr else ""
        assert time.monotonic() < deadline, "the writer never reached its temp file"
        time.sleep(0.01)
    return child, go


def _temps(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if TEMP_MARKER in p.name)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["read_write", "read_only"])
def test_a_killed_promotions_temp_is_removed_and_a_live_writers_is_kept(
    tmp_path: Path, host: PluginHost, mode: str
) -> None:
    """kill -9 mid-promotion leaves a temp; the next write into that folder removes it,
    while another process still writing there keeps its own and then finishes."""
    root = tmp_path / "ws"
    (root / "out").mkdir(parents=True)
    (root / "out" / "report.txt").write_bytes(b"old\n")
    folder = root / "out" if mode == "read_write" else root / ".taskctx/files/run/out"
    dead, _ = _writer(tmp_path, root, mode, "die")
    dead.communicate(timeout=60)
    assert dead.returncode == -signal.SIGKILL
    (leftover,) = _temps(folder)
    assert f"{TEMP_MARKER}{dead.pid}-" in leftover
    live, go = _writer(tmp_path, root, mode, "wait")
    (live_temp,) = [name for name in _temps(folder) if name != leftover]
    assert f"{TEMP_MARKER}{live.pid}-" in live_temp

    ws = TaskWorkspace(root, mode=mode, execution_id="run", host=host)  # type: ignore[arg-type]
    ws.write_file("out/other.txt", "another write into the same folder\n")
    assert _temps(folder) == [live_temp]

    go.touch()
    out, err = live.communicate(timeout=60)
    assert live.returncode == 0, err.decode()
    assert out.decode().strip() == "promoted"
    assert (folder / "report.txt").read_bytes() == NEW
    assert _temps(folder) == []


@pytest.mark.slow
def test_a_read_write_walk_removes_leftovers_a_read_only_one_does_not(
    tmp_path: Path, host: PluginHost
) -> None:
    """A leftover in a folder nobody writes to again is removed by a read-write walk
    (listing, revisions); a read-only workspace never touches the external tree."""
    root = tmp_path / "ws"
    (root / "out").mkdir(parents=True)
    dead, _ = _writer(tmp_path, root, "read_write", "die")
    dead.communicate(timeout=60)
    assert dead.returncode == -signal.SIGKILL
    assert len(_temps(root / "out")) == 1
    TaskWorkspace(root, host=host).list_files(include_hidden=True)
    TaskWorkspace(root, host=host).stamps()
    assert len(_temps(root / "out")) == 1
    assert TaskWorkspace(root, mode="read_write", host=host).stamps() == {}
    assert _temps(root / "out") == []


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(timeout=60)
    return child.pid


def test_only_unlocked_files_of_dead_pids_are_removed(rw: TaskWorkspace) -> None:
    """An unlocked temp named for a live pid (a writer between create and lock, or in
    another pid namespace) is kept; one named for a dead pid is removed."""
    folder = rw.root / "src"
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        alive = f".app.py{TEMP_MARKER}{sleeper.pid}-0123456789ab"
        dead = f".app.py{TEMP_MARKER}{_dead_pid()}-0123456789ab"
        (folder / alive).write_text("live writer")
        (folder / dead).write_text("dead writer")
        rw.write_file("src/app.py", "print('new')\n")
        assert _temps(folder) == [alive]
    finally:
        sleeper.kill()
        sleeper.wait(timeout=60)
    TaskWorkspace(rw.root, mode="read_write", host=rw.host).write_file("src/app.py", "again\n")
    assert _temps(folder) == []


def test_leftovers_of_older_versions_are_removed_after_an_hour(rw: TaskWorkspace) -> None:
    """A temp named without a pid (older versions) is removed once an hour old, not before."""
    folder = rw.root / "src"
    old = folder / f".app.py{TEMP_MARKER}0123456789ab"
    recent = folder / f".app.py{TEMP_MARKER}ba9876543210"
    old.write_text("old")
    recent.write_text("recent")
    hours_ago = time.time() - 7200
    os.utime(old, (hours_ago, hours_ago))
    rw.write_file("src/app.py", "print('new')\n")
    assert _temps(folder) == [recent.name]


def test_things_named_like_temps_that_are_not_files_are_left_alone(
    rw: TaskWorkspace, tmp_path: Path
) -> None:
    """A symlink or a folder with a temp's name is never followed nor removed."""
    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    folder = rw.root / "src"
    link = folder / f".app.py{TEMP_MARKER}{_dead_pid()}-0123456789ab"
    os.symlink(outside, link)
    made = folder / f".x{TEMP_MARKER}{_dead_pid()}-0123456789ab"
    made.mkdir()
    rw.write_file("src/app.py", "print('new')\n")
    assert link.is_symlink()
    assert made.is_dir()
    assert outside.read_text() == "keep"
