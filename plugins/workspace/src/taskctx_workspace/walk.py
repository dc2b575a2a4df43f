"""The stat walk of a workspace: which files exist, with their stamps, and nothing read.

Each folder is listed once with ``os.scandir`` on its descriptor: the entry types the
listing reports (``d_type``) tell folders, symlinks and files apart without a stat, so
a walk costs one ``fstatat`` per regular file (on that folder's descriptor) and one
``open`` per folder. Each folder is opened relative to its parent's descriptor without
following links (:mod:`taskctx_workspace.beneath`), so a folder swapped for a symlink
mid-walk is never entered; at most one descriptor per level is open at a time. Skipped:
the root's ``.taskctx/``, temporary siblings of atomic writes (handed to ``on_temp`` when
given), FIFOs, sockets and devices, symlinks to folders (never followed, so no cycles),
and symlinks to files that escape the root, loop, enter ``.taskctx/`` or (unless hidden
files are wanted) name a hidden file.

:func:`walk` yields depth first, names sorted by code point within each folder, so two
walks of the same tree give the same order; :func:`stamps`, the hot path of revision
checks, takes the folders as they come and makes no per-file object but the stamp.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator

import attrs

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
_S_ISREG = stat.S_ISREG


@attrs.define(slots=True)
class _Walker:
    """The rules one walk applies to every folder it lists."""

    root: Root
    include_hidden: bool
    wanted: str
    """Only paths starting with this are stamped ("" for all)."""
    on_error: ErrorHandler | None
    on_temp: TempHandler | None

    def open(self, rel_dir: str, parent: int | None, name: str) -> int | None:
        """The folder ``name`` of ``parent`` (None: the root) opened without following a
        link; None if it cannot be opened (a folder swapped for a link is skipped quietly)."""
        try:
            return self.root.open() if parent is None else os.open(name, DIR_FLAGS, dir_fd=parent)
        except OSError as exc:
            if exc.errno not in _SWAPPED:
                self.error(rel_dir, exc)
            return None

    def list(
        self, fd: int, prefix: str, files: dict[str, Stamp]
    ) -> tuple[list[str], list[str]] | None:
        """List the open folder ``fd`` (paths ``prefix + name``): the stamp of each regular
        file goes into ``files`` by path; returned are the names of its symlinks and of its
        subfolders, or None if it cannot be listed. Everything skipped is left out."""
        links: list[str] = []
        folders: list[str] = []
        include_hidden, wanted, on_temp = self.include_hidden, self.wanted, self.on_temp
        try:
            with os.scandir(fd) as entries:
                for entry in entries:
                    name = entry.name
                    if not prefix and is_state_name(name):
                        continue
                    if TEMP_MARKER in name:
                        if on_temp is not None:
                            on_temp(fd, name)
                        continue
                    if not include_hidden and name.startswith("."):
                        continue
                    rel = prefix + name
                    try:
                        # d_type answers these without a stat; only a regular file is stat'ed
                        if entry.is_file(follow_symlinks=False):
                            if wanted and not rel.startswith(wanted):
                                continue
                            st = entry.stat(follow_symlinks=False)  # fstatat on this folder
                            if _S_ISREG(st.st_mode):  # not swapped for a FIFO since listed
                                files[rel] = (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)
                        elif entry.is_dir(follow_symlinks=False):
                            folders.append(name)
                        elif entry.is_symlink():
                            links.append(name)
                    except OSError as exc:  # gone since listed, or an unknown d_type's lstat
                        self.error(rel, exc)
        except OSError as exc:
            self.error(prefix[:-1], exc)
            return None
        return links, folders

    def link(self, base: Base, rel: str, files: dict[str, Stamp]) -> None:
        """The stamp of the file the symlink ``rel`` names goes into ``files``, if allowed."""
        if self.wanted and not rel.startswith(self.wanted):
            return
        try:
            st = linked_file(base, rel, include_hidden=self.include_hidden)
        except OSError as exc:
            self.error(rel, exc)
            return
        if st is not None:
            files[rel] = (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)

    def error(self, rel: str, exc: OSError) -> None:
        """Report what could not be read, if asked to."""
        if self.on_error is not None:
            self.on_error(rel, exc)


def walk(
    root: Root,
    *,
    include_hidden: bool = True,
    prefix: str = "",
    on_error: ErrorHandler | None = None,
    on_temp: TempHandler | None = None,
) -> Iterator[FileStat]:
    """Regular files under ``root`` whose path starts with ``prefix``, in walk order.

    The prefix is checked at once (PolicyError); the walk happens as the result is iterated.
    """
    wanted = normalize_prefix(prefix)
    return _ordered(_Walker(root, include_hidden, wanted, on_error, on_temp))


def _ordered(walker: _Walker) -> Iterator[FileStat]:
    base = walker.root.base()
    wanted = walker.wanted
    # one frame per open folder: its descriptor and its remaining entries, sorted: a file
    # is (path, stamp), a symlink (path, None), a subfolder (path + "/", None)
    stack: list[tuple[int, Iterator[tuple[str, Stamp | None]]]] = []

    def enter(prefix: str, parent: int | None, name: str) -> None:
        fd = walker.open(prefix[:-1], parent, name)
        if fd is None:
            return
        files: dict[str, Stamp] = {}
        listed = walker.list(fd, prefix, files)
        if listed is None:
            os.close(fd)
            return
        links, folders = listed
        entries: list[tuple[str, Stamp | None]] = list(files.items())
        entries.extend((prefix + link, None) for link in links)
        entries.extend((f"{prefix}{folder}/", None) for folder in folders)
        # names are unique within a folder, so this sorts by name; a folder sorts by its
        # name alone, not by the "/" that marks it
        entries.sort(key=_sort_key)
        stack.append((fd, iter(entries)))

    try:
        enter("", None, "")
        while stack:
            fd, entries = stack[-1]
            item = next(entries, None)
            if item is None:
                os.close(stack.pop()[0])
                continue
            rel, stamp = item
            if rel.endswith("/"):
                if rel.startswith(wanted) or wanted.startswith(rel):
                    enter(rel, fd, rel[:-1].rpartition("/")[2])
                continue
            if stamp is None:
                linked: dict[str, Stamp] = {}
                walker.link(base, rel, linked)
                stamp = linked.get(rel)
                if stamp is None:
                    continue
            yield FileStat(rel, *stamp)
    finally:
        for fd, _ in stack:
            os.close(fd)


def _sort_key(item: tuple[str, Stamp | None]) -> str:
    rel = item[0]
    return rel[:-1] if rel.endswith("/") else rel


def stamps(
    root: Root, *, include_hidden: bool = True, on_temp: TempHandler | None = None
) -> dict[str, Stamp]:
    """Every regular file's stamp (size, mtime_ns, inode, ctime_ns), in no set order.

    The same files as :func:`walk`; this is the hot path of revision checks: per file one
    ``fstatat`` and one tuple, nothing sorted.
    """
    walker = _Walker(root, include_hidden, "", None, on_temp)
    base = root.base()
    found: dict[str, Stamp] = {}
    # one frame per open folder: its path prefix, descriptor and remaining subfolders
    stack: list[tuple[str, int, Iterator[str]]] = []

    def enter(prefix: str, parent: int | None, name: str) -> None:
        fd = walker.open(prefix[:-1], parent, name)
        if fd is None:
            return
        listed = walker.list(fd, prefix, found)
        if listed is None:
            os.close(fd)
            return
        links, folders = listed
        for link in links:
            walker.link(base, prefix + link, found)
        stack.append((prefix, fd, iter(folders)))

    try:
        enter("", None, "")
        while stack:
            prefix, fd, folders = stack[-1]
            name = next(folders, None)
            if name is None:
                os.close(stack.pop()[1])
            else:
                enter(f"{prefix}{name}/", fd, name)
    finally:
        for _, fd, _ in stack:
            os.close(fd)
    return found


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
