"""A folder's derived state (index, digests, parse cache) lives outside it, in a state
folder the user chooses: reading a folder writes nothing into it, and a folder on a
read-only filesystem is read."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from taskctx_workspace import TaskWorkspace
from taskctx_workspace.source import WorkspaceSource

from taskctx import PluginHost, TaskContext
from taskctx.cli import main
from taskctx.statefiles import STATE_DIR_ENV, folder_state_dir
from tests.readonly import read_only_runner

ENV = {"TASKCTX_LOAD_PLUGINS": "taskctx-workspace,taskctx-fts"}


def _tree(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every path under ``root`` with its bytes (files) and mtime."""
    found = {}
    for path in sorted(root.rglob("*")):
        data = path.read_bytes() if path.is_file() else b""
        found[str(path.relative_to(root))] = (data, path.stat().st_mtime_ns)
    return found


def _folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    (root / "sub").mkdir(parents=True)
    (root / "guide.md").write_text("# Upload\n\nThe upload times out after 30 s.\n")
    (root / "sub" / "notes.txt").write_text("upload notes " * 500)
    return root


def test_reading_and_indexing_a_folder_write_nothing_into_it(tmp_path: Path) -> None:
    """``taskctx read`` and ``taskctx index`` leave the folder's tree as it was."""
    root = _folder(tmp_path)
    before = _tree(root)
    for args in (["index", str(root)], ["read", str(root), "-q", "upload"]):
        result = CliRunner().invoke(main, args, env=ENV)
        assert result.exit_code == 0, result.output
    assert _tree(root) == before
    assert (folder_state_dir(root).path / "index").is_dir()


def test_the_state_folder_is_the_parameter_else_the_environment(tmp_path: Path) -> None:
    """``state_dir=`` wins; else ``$TASKCTX_STATE_DIR``; the folder's part is keyed by its
    real path, so two spellings share it and two folders of one name do not."""
    root = _folder(tmp_path)
    chosen = tmp_path / "chosen"
    workspace = TaskWorkspace(root, state_dir=chosen)
    assert workspace.derived_dir.parent == chosen / "folders"
    assert workspace.derived_dir.name.startswith("docs-")
    from_env = TaskWorkspace(root)
    assert from_env.derived_dir.parents[1] == Path(os.environ[STATE_DIR_ENV])
    link = tmp_path / "docs-link"
    link.symlink_to(root, target_is_directory=True)
    assert TaskWorkspace(link).derived_dir == from_env.derived_dir
    other = tmp_path / "elsewhere" / "docs"
    other.mkdir(parents=True)
    assert TaskWorkspace(other).derived_dir != from_env.derived_dir
    host = PluginHost(allow=["taskctx-workspace"])
    source = host.source("task_workspace", root=str(root), state_dir=str(chosen))
    assert isinstance(source, WorkspaceSource)
    assert source.rebuild_options()["state_dir"] == str(chosen)


def test_an_unwritable_state_folder_still_reads_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A state folder that cannot be made keeps the caches and index in memory, says so
    once per binding and names the environment variable, and the read goes on."""
    root = _folder(tmp_path)
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    monkeypatch.setenv(STATE_DIR_ENV, str(blocked / "state"))
    host = PluginHost(allow=["taskctx-workspace", "taskctx-fts"])
    ctx = TaskContext("t", host=host, state_dir=tmp_path / "ctx")
    ctx.attach(host.source("task_workspace", root=str(root)), binding_id="docs")
    with caplog.at_level(logging.WARNING, logger="taskctx.index"):
        package = ctx.reader("a").read("upload times out")
    assert "guide.md" in {b.ref.path for b in package.blocks}
    (warning,) = [r for r in caplog.records if "kept in memory" in r.getMessage()]
    assert "TASKCTX_STATE_DIR" in warning.getMessage()


def test_a_folder_on_a_read_only_filesystem_is_read(tmp_path: Path) -> None:
    """``taskctx read`` of a read-only mount delivers its files (it used to fail with
    ``[Errno 30] Read-only file system: '<root>/.taskctx'``)."""
    root = _folder(tmp_path)
    before = _tree(root)
    taskctx = [str(Path(sys.executable).with_name("taskctx"))]
    command = [*read_only_runner(), str(root), *taskctx, "read", str(root), "-q", "upload"]
    env = {**os.environ, **ENV, STATE_DIR_ENV: str(tmp_path / "state")}
    result = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    assert result.returncode == 0, result.stderr
    assert "The upload times out after 30 s." in result.stdout
    assert "Read-only file system" not in result.stderr
    assert _tree(root) == before


def test_taskctx_state_shows_and_clears_a_folders_derived_state(tmp_path: Path) -> None:
    """``taskctx state PATH`` names the folder's state and its size; ``--clear`` deletes
    it (the next read builds it again); with no PATH every folder's state is listed."""
    root = _folder(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    (other / "a.txt").write_text("upload")
    for folder in (root, other):
        assert CliRunner().invoke(main, ["index", str(folder)], env=ENV).exit_code == 0
    where = folder_state_dir(root).path
    shown = CliRunner().invoke(main, ["state", str(root), "--json"])
    assert shown.exit_code == 0, shown.output
    (row,) = json.loads(shown.output)
    assert row["state"] == str(where)
    assert row["bytes"] > 0
    assert not row["cleared"]
    listed = json.loads(CliRunner().invoke(main, ["state", "--json"]).output)
    assert {r["state"] for r in listed} == {str(where), str(folder_state_dir(other).path)}
    cleared = CliRunner().invoke(main, ["state", str(root), "--clear"])
    assert cleared.exit_code == 0
    assert f"{root}: {where} cleared" in cleared.output
    assert not where.exists()
    assert folder_state_dir(other).path.exists()
    assert CliRunner().invoke(main, ["read", str(root), "-q", "upload"], env=ENV).exit_code == 0
    assert where.exists()
    everything = CliRunner().invoke(main, ["state", "--clear"])
    assert everything.exit_code == 0
    assert not (Path(os.environ[STATE_DIR_ENV]) / "folders").exists() or not any(
        (Path(os.environ[STATE_DIR_ENV]) / "folders").iterdir()
    )
