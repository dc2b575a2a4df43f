"""Fixtures of the llamaindex tests: a real TaskContext over a TaskWorkspace on tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest
from taskctx_workspace import TaskWorkspace

from taskctx import PluginHost, TaskContext

FILES = {
    "notes/upload.md": "The upload times out after 30 s on the staging server.\n",
    "notes/retry.md": "Every upload is retried three times before it fails.\n",
    "notes/limits.md": "An upload over 2 GB is refused by the proxy.\n",
    "README.md": "A project about something else entirely.\n",
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A folder holding FILES."""
    root = tmp_path / "project"
    for path, text in FILES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def ctx(tmp_path: Path, project: Path) -> TaskContext:
    """A TaskContext with binding ``files`` over a read-only workspace of FILES."""
    context = TaskContext(
        "li-task", host=PluginHost(allow=["taskctx-fts"]), state_dir=tmp_path / "state"
    )
    context.attach(TaskWorkspace(project, mode="read_only").source(), binding_id="files")
    return context
