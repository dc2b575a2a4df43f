"""Registers the ``task_workspace`` source kind and the CLI's ``PATH...`` through the
ordinary hooks."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from taskctx import CliOption, CliSource, CliValue, SourceFactory
from taskctx.hookspecs import hookimpl
from taskctx_workspace.source import DEFAULT_CHUNK_CHARS, WorkspaceSource

if TYPE_CHECKING:
    from taskctx.plugins import PluginHost

__all__ = ["make_source", "register_cli_sources", "register_source_kinds"]


def make_source(
    root: str | Path,
    mode: Literal["read_only", "read_write"] = "read_only",
    execution_id: str | None = None,
    create: bool | None = None,
    chunk_chars: int = DEFAULT_CHUNK_CHARS,
    state_dir: str | Path | None = None,
    host: PluginHost | None = None,
) -> WorkspaceSource:
    """The factory behind ``host.source("task_workspace", root=..., mode=...)``.

    ``create`` None: a missing root is made for a ``read_write`` workspace only. Reading
    a folder that is not there is an error naming it (a mistyped
    ``--source task_workspace:root=...`` must not make an empty folder and read it).
    ``state_dir`` is the base of the folder's derived state (``TaskWorkspace``).
    """
    from taskctx_workspace.workspace import TaskWorkspace

    if create is None:
        create = mode == "read_write"

    workspace = TaskWorkspace(
        root,
        mode=mode,
        execution_id=execution_id,
        create=create,
        host=host,
        state_dir=state_dir,
    )
    return WorkspaceSource(workspace, chunk_chars=chunk_chars)


@hookimpl
def register_source_kinds(register: Callable[[str, SourceFactory], None]) -> None:
    """Source kind ``task_workspace``."""
    register("task_workspace", make_source)


@hookimpl
def register_cli_sources(register: Callable[[CliSource], None]) -> None:
    """``taskctx read PATH...`` and ``taskctx index PATH...``: each folder, read only."""
    register(
        CliSource(
            kind="task_workspace",
            value_option="root",
            binding_id="files",
            help="Attach each folder as a task workspace, read only (taskctx-workspace).",
            metavar="PATH",
            multiple=True,
            value=CliValue.EXISTING_DIRECTORY,
            fixed_options={"mode": "read_only"},
            index_binding_id="folder",
            options=(
                CliOption(
                    flag="--chunk-chars",
                    option="chunk_chars",
                    help=(
                        "Describe each folder's text files longer than N characters also in "
                        f"passages of about N (default {DEFAULT_CHUNK_CHARS})."
                    ),
                    metavar="N",
                    value=CliValue.POSITIVE_INTEGER,
                ),
            ),
        )
    )
