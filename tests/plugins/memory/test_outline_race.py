"""The workspace outline never lists a folder swapped for a symlink to outside (issue 13)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from taskctx_memory.outline import WorkspaceOutline
from taskctx_memory.request import RequestTurn

from tests.plugins.workspace.races import SWAPPER

SECRET = "outside-secret-name.txt"


@pytest.mark.slow
def test_a_folder_swapped_for_a_link_is_never_listed(tmp_path: Path) -> None:
    """A second process swaps ``d`` for a symlink to outside; no outline shows its names."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / SECRET).write_text("x")
    root = tmp_path / "ws"
    (root / "d").mkdir(parents=True)
    (root / "d" / "f.txt").write_text("inside")
    outline = WorkspaceOutline(root)
    turn = RequestTurn(boundary="user_input", run_id="run", request=1)
    ready = tmp_path / "ready"
    swapper = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, "1.5", str(ready), str(outside), str(root / "d")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.005)
    outlines = leaks = 0
    while swapper.poll() is None:
        section = outline.contribute(turn)
        assert section is not None
        outlines += 1
        leaks += SECRET in section.text
    _, err = swapper.communicate(timeout=30)
    assert swapper.returncode == 0, err.decode()
    assert outlines > 50
    assert leaks == 0, f"{leaks} of {outlines} outlines listed the outside folder"
