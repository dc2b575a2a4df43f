"""Fixtures of the langchain tests: a real TaskContext over a TaskWorkspace on tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest
from taskctx_workspace import TaskWorkspace

from taskctx import PluginHost, TaskContext

FILES = {
    "notes/upload.md": "The upload times out after 30 s on the staging server.\n",
    "notes/retry.md": "Every upload is retried three times before it fails.\n",
    "notes/limits.md": "An upload over 2 GB is refused by the proxy.\n",
    "notes/upload-log.txt": "upload started; upload stalled; upload failed\n",
    "README.md": "A project about something else entirely.\n",
}


def workspace_context(root: Path, task_id: str = "lc-task") -> TaskContext:
    """A TaskContext over a TaskWorkspace holding FILES under ``root``."""
    project = root / "project"
    for path, text in FILES.items():
        (project / path).parent.mkdir(parents=True, exist_ok=True)
        (project / path).write_text(text, encoding="utf-8")
    ctx = TaskContext(task_id, host=PluginHost(allow=["taskctx-fts"]), state_dir=root / "state")
    ctx.attach(TaskWorkspace(project, mode="read_only").source(), binding_id="files")
    return ctx


@pytest.fixture
def ctx(tmp_path: Path) -> TaskContext:
    """A TaskContext over a workspace of five small files (four mention "upload")."""
    return workspace_context(tmp_path)
