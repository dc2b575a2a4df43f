"""The stat walk of a workspace: which files exist, with their stamps, and nothing read.

Depth first with ``os.scandir``, names sorted by code point within each folder, so two
walks of the same tree give the same order. Skipped: the root's ``.taskctx/``, temporary
siblings of atomic writes, FIFOs, sockets and devices, symlinks to folders (never
followed, so no cycles), and symlinks to files that escape the root, loop, enter
``.taskctx/`` or (unless hidden files are wanted) name a hidden file.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

from taskctx.errors import PolicyError
from taskctx.media import is_hidden_path
from taskctx_workspace.paths import TEMP_MARKER, is_state_name, normalize_prefix, resolve_confined
from taskctx_workspace.results import FileStat

__all__ = ["ErrorHandler", "Stamp", "stamps", "walk"]

Stamp = tuple[int, int, int, int]

ErrorHandler = Callable[[str, OSError], None]
"""Called with the relative path and the error of a folder or file that could not be read."""


def walk(
    root: Path,
    *,
    include_hidden: bool = True,
    prefix: str = "",
    on_error: ErrorHandler | None = None,
) -> Iterator[FileStat]:
    """Regular files under ``root`` (a resolved folder) whose path starts with ``prefix``.

    The prefix is checked at once (PolicyError); the walk happens as the result is iterated.
    """
    found = _walk(root, include_hidden, normalize_prefix(prefix), on_error)
    return (FileStat.of(rel, st) for rel, st in found)


def stamps(root: Path, *, include_hidden: bool = True) -> dict[str, Stamp]:
    """Every regular file's stamp (size, mtime_ns, inode, ctime_ns), without FileStat objects.

    The same files as :func:`walk`; this is the hot path of revision checks.
    """
    return {
        rel: (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)
        for rel, st in _walk(root, include_hidden, "", None, ordered=False)
    }


def _walk(
    root: Path,
    include_hidden: bool,
    wanted: str,
    on_error: ErrorHandler | None,
    *,
    ordered: bool = True,
) -> Iterator[tuple[str, os.stat_result]]:
    stack: list[tuple[str, Iterator[os.DirEntry[str]]]] = []

    def enter(rel_dir: str) -> None:
        folder = os.path.join(root, rel_dir) if rel_dir else os.fspath(root)
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda e: e.name) if ordered else list(listing)
        except OSError as exc:
            if on_error is not None:
                on_error(rel_dir, exc)
            return
        stack.append((rel_dir, iter(entries)))

    enter("")
    while stack:
        rel_dir, entries = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
            continue
        name = entry.name
        rel = f"{rel_dir}/{name}" if rel_dir else name
        if TEMP_MARKER in name or (not rel_dir and is_state_name(name)):
            continue
        if not include_hidden and name.startswith("."):
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                if rel.startswith(wanted) or wanted.startswith(rel + "/"):
                    enter(rel)
                continue
            if not rel.startswith(wanted):
                continue
            if entry.is_symlink():
                st = linked_file(root, rel, include_hidden=include_hidden)
            elif entry.is_file(follow_symlinks=False):
                st = entry.stat(follow_symlinks=False)
            else:
                continue  # FIFO, socket, device
        except OSError as exc:
            if on_error is not None:
                on_error(rel, exc)
            continue
        if st is not None:
            yield rel, st


def linked_file(root: Path, rel: str, *, include_hidden: bool) -> os.stat_result | None:
    """The stat of the regular file the symlink ``rel`` names, if it is allowed."""
    try:
        real = resolve_confined(root, rel)
        st = os.stat(real)
    except (PolicyError, FileNotFoundError, NotADirectoryError):
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    if not include_hidden and is_hidden_path(os.path.relpath(real, root)):
        return None
    return st
