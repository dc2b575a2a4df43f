"""``taskctx state``: where taskctx keeps what it derives from folders, and clearing it.

Everything under ``<state folder>/folders/`` is derived (indexes, digests, parse caches:
:func:`taskctx.statefiles.folder_state_dir`), so deleting it loses nothing but the time
to build it again. The cursor key and anything else in the state folder are kept.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import click

from taskctx.statefiles import FOLDERS_PART, default_state_dir, folder_state_dir

__all__ = ["state_command"]


def _size(path: Path) -> int:
    """Bytes of the regular files under ``path`` (links not followed)."""
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                continue
    return total


def _clear(path: Path) -> None:
    """Delete ``path``, a folder of derived state (a link there is unlinked, not followed)."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)


@click.command("state")
@click.argument("paths", nargs=-1, type=click.Path(file_okay=False), metavar="[PATH]...")
@click.option(
    "--state-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The state folder (default: $TASKCTX_STATE_DIR, else the user cache folder).",
)
@click.option("--clear", is_flag=True, help="Delete the derived state shown.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of the folders.")
def state_command(
    paths: tuple[str, ...], state_dir: Path | None, clear: bool, as_json: bool
) -> None:
    """Show (or --clear) the derived state of each PATH, or of every folder read.

    A folder's index, digests and parse cache live outside it, in
    <state folder>/folders/<name>-<digest>/; deleting them only costs a new index and
    parse on the next read.
    """
    base = state_dir if state_dir is not None else default_state_dir()
    rows: list[tuple[str | None, Path]]
    if paths:
        rows = [(path, folder_state_dir(Path(path), base).path) for path in paths]
    else:
        folders = base / FOLDERS_PART
        found = sorted(folders.iterdir()) if folders.is_dir() else []
        rows = [(None, where) for where in found]
    report = []
    for path, where in rows:
        size = _size(where) if where.is_dir() else 0
        if clear:
            _clear(where)
        report.append({"path": path, "state": str(where), "bytes": size, "cleared": clear})
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    if not report:
        click.echo(f"no folder state under {base / FOLDERS_PART}")
    for row in report:
        verb = "cleared" if clear else "holds"
        name = f"{row['path']}: " if row["path"] is not None else ""
        click.echo(f"{name}{row['state']} {verb} {row['bytes']:,} bytes")
