"""Registers the ``task_workspace`` source kind through the ordinary hook."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from taskctx import SourceFactory
from taskctx.hookspecs import hookimpl
from taskctx_workspace.source import DEFAULT_CHUNK_CHARS, WorkspaceSource

if TYPE_CHECKING:
    from taskctx.plugins import PluginHost

__all__ = ["make_source", "register_source_kinds"]


def make_source(
    root: str | Path,
    mode: Literal["read_only", "read_write"] = "read_only",
    execution_id: str | None = None,
    create: bool = True,
    chunk_chars: int = DEFAULT_CHUNK_CHARS,
    host: PluginHost | None = None,
) -> WorkspaceSource:
    """The factory behind ``host.source("task_workspace", root=..., mode=...)``."""
    from taskctx_workspace.workspace import TaskWorkspace

    workspace = TaskWorkspace(root, mode=mode, execution_id=execution_id, create=create, host=host)
    return WorkspaceSource(workspace, chunk_chars=int(chunk_chars))


@hookimpl
def register_source_kinds(register: Callable[[str, SourceFactory], None]) -> None:
    """Source kind ``task_workspace``."""
    register("task_workspace", make_source)
