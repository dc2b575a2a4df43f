"""Fixtures of the workspace tests: hosts without entry points and small workspaces."""

from __future__ import annotations

from pathlib import Path

import pytest
from taskctx_workspace import TaskWorkspace

from taskctx import PluginHost


@pytest.fixture
def host() -> PluginHost:
    """A host that loads no entry-point plugin (only the kernel's built-ins)."""
    return PluginHost(allow=[])


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A small folder: text, nested text, a hidden file."""
    folder = tmp_path / "ws"
    (folder / "src").mkdir(parents=True)
    (folder / "notes.txt").write_text("alpha\nbeta\n", encoding="utf-8")
    (folder / "src" / "app.py").write_text("print('hi')\n", encoding="utf-8")
    (folder / ".env").write_text("SECRET=1\n", encoding="utf-8")
    return folder


@pytest.fixture
def ro(root: Path, host: PluginHost) -> TaskWorkspace:
    """A read-only workspace over ``root``."""
    return TaskWorkspace(root, host=host)


@pytest.fixture
def rw(root: Path, host: PluginHost) -> TaskWorkspace:
    """A read-write workspace over ``root``."""
    return TaskWorkspace(root, mode="read_write", host=host)


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    """A folder with one long file of paragraphs that all hold the word 'paragraph'
    (every passage and every part of it matches that query)."""
    root = tmp_path / "notes"
    root.mkdir()
    body = "".join(f"paragraph {n} " + "text " * 60 + "\n\n" for n in range(30))
    (root / "notes.txt").write_text(body, encoding="utf-8")
    return root
