"""The stat walk of a workspace: which files exist, with their stamps, and nothing read.

Depth first with ``os.scandir`` on folder descriptors, names sorted by code point within
each folder, so two walks of the same tree give the same order. Each folder is opened
relative to its parent's descriptor without following links
(:mod:`taskctx_workspace.beneath`), so a folder swapped for a symlink mid-walk is never
entered. Skipped: the root's ``.taskctx/``, temporary siblings of atomic writes (handed
to ``on_temp`` when given), FIFOs, sockets and devices, symlinks to folders (never
followed, so no cycles), and symlinks to files that escape the root, loop, enter
``.taskctx/`` or (unless hidden files are wanted) name a hidden file.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator

from taskctx.errors import PolicyError
from taskctx.media import is_hidden_path
from taskctx.nofollow import DIR_FLAGS
from taskctx_workspace.beneath import Base, Root
from taskctx_workspace.paths import TEMP_MARKER, is_state_name, normalize_prefix
from taskctx_workspace.results import FileStat

__all__ = ["ErrorHandler", "Stamp", "TempHandler", "linked_file", "stamps", "walk"]

Stamp = tuple[int, int, int, int]

ErrorHandler = Callable[[str, OSError], None]
"""Called with the relative path and the error of a folder or file that could not be read."""
TempHandler = Callable[[int, str], None]
"""Called with a folder descriptor and the name of a temporary file of an atomic write in it."""

_SWAPPED = (errno.ENOTDIR, errno.ELOOP)


def walk(
    root: Root,
    *,
    include_hidden: bool = True,
    prefix: str = "",
    on_error: ErrorHandler | None = None,
    on_temp: TempHandler | None = None,
) -> Iterator[FileStat]:
    """Regular files under ``root`` whose path starts with ``prefix``.

    The prefix is checked at once (PolicyError); the walk happens as the result is iterated.
    """
    found = _walk(root, include_hidden, normalize_prefix(prefix), on_error, on_temp=on_temp)
    return (FileStat.of(rel, st) for rel, st in found)


def stamps(
    root: Root, *, include_hidden: bool = True, on_temp: TempHandler | None = None
) -> dict[str, Stamp]:
    """Every regular file's stamp (size, mtime_ns, inode, ctime_ns), without FileStat objects.

    The same files as :func:`walk`; this is the hot path of revision checks.
    """
    return {
        rel: (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)
        for rel, st in _walk(root, include_hidden, "", None, ordered=False, on_temp=on_temp)
    }


def _walk(
    root: Root,
    include_hidden: bool,
    wanted: str,
    on_error: ErrorHandler | None,
    *,
    ordered: bool = True,
    on_temp: TempHandler | None = None,
) -> Iterator[tuple[str, os.stat_result]]:
    base = root.base()
    stack: list[tuple[str, int, Iterator[os.DirEntry[str]]]] = []

    def enter(rel_dir: str, parent: int | None, name: str) -> None:
        opened = _open_folder(root, rel_dir, parent, name, on_error, ordered=ordered)
        if opened is not None:
            stack.append((rel_dir, *opened))

    try:
        enter("", None, "")
        while stack:
            rel_dir, folder, entries = stack[-1]
            entry = next(entries, None)
            if entry is None:
                os.close(stack.pop()[1])
                continue
            name = entry.name
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if not rel_dir and is_state_name(name):
                continue
            if TEMP_MARKER in name:
                if on_temp is not None:
                    on_temp(folder, name)
                continue
            if not include_hidden and name.startswith("."):
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    if rel.startswith(wanted) or wanted.startswith(rel + "/"):
                        enter(rel, folder, name)
                    continue
                if not rel.startswith(wanted):
                    continue
                st = _file_stat(entry, base, rel, include_hidden)
            except OSError as exc:
                if on_error is not None:
                    on_error(rel, exc)
                continue
            if st is not None:
                yield rel, st
    finally:
        for _, fd, _ in stack:
            os.close(fd)


def _open_folder(
    root: Root,
    rel_dir: str,
    parent: int | None,
    name: str,
    on_error: ErrorHandler | None,
    *,
    ordered: bool,
) -> tuple[int, Iterator[os.DirEntry[str]]] | None:
    """The folder ``name`` of ``parent`` (None: the root) opened without following a link,
    with its entries (sorted by name when ``ordered``); None if it cannot be read."""
    try:
        fd = root.open() if parent is None else os.open(name, DIR_FLAGS, dir_fd=parent)
    except OSError as exc:
        if exc.errno not in _SWAPPED and on_error is not None:
            on_error(rel_dir, exc)  # a folder swapped for a link since it was listed: skip
        return None
    try:
        with os.scandir(fd) as listing:
            entries = sorted(listing, key=lambda e: e.name) if ordered else list(listing)
    except OSError as exc:
        os.close(fd)
        if on_error is not None:
            on_error(rel_dir, exc)
        return None
    return fd, iter(entries)


def _file_stat(
    entry: os.DirEntry[str], base: Base, rel: str, include_hidden: bool
) -> os.stat_result | None:
    """The stat of the regular file ``entry`` is or (a symlink) allowedly names; None for
    anything else (a FIFO, socket or device, or a file swapped since it was listed)."""
    if entry.is_symlink():
        return linked_file(base, rel, include_hidden=include_hidden)
    if entry.is_file(follow_symlinks=False):
        st = entry.stat(follow_symlinks=False)  # fstatat on this folder's fd
        return st if stat.S_ISREG(st.st_mode) else None
    return None


def linked_file(base: Base, rel: str, *, include_hidden: bool) -> os.stat_result | None:
    """The stat of the regular file the symlink ``rel`` names, if it is allowed."""
    try:
        with base.locate(rel) as at:
            st = at.stat()
            real = at.real
    except (PolicyError, FileNotFoundError, NotADirectoryError):
        return None
    if st is None or not stat.S_ISREG(st.st_mode):
        return None
    if not include_hidden and is_hidden_path(real):
        return None
    return st
