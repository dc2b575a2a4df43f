"""Workspace outline: names, sizes and kinds of a folder's entries, never their contents.

Contributed on ``user_input`` requests only (None on tool results). The folder is read
with ``os.scandir`` breadth first through folder descriptors walked ``O_NOFOLLOW`` from
the root's, names sorted by code point, symlinks never followed (reported as symlinks).
File kinds come from the path alone (no byte is read).

Each entry is one element with its whole relative path in an escaped attribute, so no
name can fake another entry, a depth or a note::

    Workspace outline (names, sizes and kinds only; no file contents):
    <file path="README.md" bytes="47" media_type="text/markdown"/>
    <dir path="src" note="1 entries not shown"/>
      <file path="src/upload.py" bytes="15" media_type="text/x-python"/>
      <symlink path="src/link" note="not followed"/>
    … 1 more entries not shown (max_entries=3)

Bounds: ``max_depth`` (top-level entries are depth 1; a folder at the limit is shown
with "contents not listed"), ``max_entries`` and ``max_chars``. Entries are chosen
breadth first, so the top of the tree wins, and shown as an indented tree. How many
entries were left out is stated in the block (``… 37 more entries not shown``) and in
``omitted["entries"]``; a shown folder with entries left out says how many, so it never
looks emptier than it is. A scan stops after ``max_scan`` entries; the count of what was
left out is then a lower bound and says so. Hidden names (``.git``, ``.env``) are left
out unless ``include_hidden``; the root's ``.taskctx/`` and temporary files of atomic
writes are always left out.
"""

from __future__ import annotations

import os
from collections import Counter, deque
from pathlib import Path
from typing import Literal, NamedTuple

from pydantic import Field
from taskctx_workspace import TaskWorkspace
from taskctx_workspace.paths import TEMP_MARKER, is_state_name

from taskctx.errors import NotFoundError
from taskctx.markup import element
from taskctx.media import classify
from taskctx.nofollow import DIR_FLAGS
from taskctx_memory.request import (
    CapabilityLimitError,
    CapabilityLimits,
    ContextSection,
    Placement,
    RequestTurn,
)

__all__ = ["OutlineLimits", "WorkspaceOutline"]

HEADER = "Workspace outline (names, sizes and kinds only; no file contents):"
EntryKind = Literal["dir", "file", "symlink", "other"]


class OutlineLimits(CapabilityLimits):
    """Limits of the outline: characters, entries shown, depth, entries scanned."""

    max_chars: int = Field(default=4000, ge=1)
    max_entries: int = Field(default=200, ge=0)
    max_depth: int = Field(default=3, ge=1)
    max_scan: int = Field(default=10_000, ge=1)


class _Entry(NamedTuple):
    rel: str
    name: str
    depth: int
    kind: EntryKind
    size: int | None


class _Scan:
    """What one breadth-first scan recorded."""

    __slots__ = (
        "children",
        "complete",
        "entries",
        "scanned",
        "stopped_in",
        "unexpanded",
        "unreadable",
    )

    def __init__(self) -> None:
        self.entries: list[_Entry] = []
        self.children: Counter[str] = Counter()  # recorded entries per folder, "" the root
        self.unexpanded: set[str] = set()  # folders at the depth limit
        self.scanned: set[str] = set()  # folders whose every entry was recorded
        self.unreadable: set[str] = set()  # folders os.scandir could not read
        self.stopped_in = ""  # the folder max_scan stopped in, when not complete
        self.complete = True


def _kind(item: os.DirEntry[str]) -> EntryKind:
    if item.is_symlink():
        return "symlink"
    if item.is_dir(follow_symlinks=False):
        return "dir"
    if item.is_file(follow_symlinks=False):
        return "file"
    return "other"


def _size(item: os.DirEntry[str]) -> int | None:
    try:
        return item.stat(follow_symlinks=False).st_size
    except OSError:
        return None  # gone since the listing


def _listed(item: os.DirEntry[str]) -> tuple[str, EntryKind, int | None]:
    kind = _kind(item)
    return item.name, kind, _size(item) if kind == "file" else None


def _skipped(name: str, at_root: bool, include_hidden: bool) -> bool:
    if TEMP_MARKER in name or (at_root and is_state_name(name)):
        return True
    return name.startswith(".") and not include_hidden


def _parent(rel: str) -> str:
    return rel.rpartition("/")[0]


def _open_beneath(root_fd: int, rel_dir: str) -> int:
    """A descriptor of folder ``rel_dir``, walked one component at a time from the root
    with ``O_NOFOLLOW``: a folder swapped for a symlink since the listing is refused by the
    open itself (OSError), never followed."""
    fd = os.dup(root_fd)
    try:
        for name in rel_dir.split("/") if rel_dir else ():
            child = os.open(name, DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _scan(root: Path, limits: OutlineLimits, include_hidden: bool) -> _Scan:
    """Every entry down to ``max_depth``, breadth first, at most ``max_scan`` of them.

    Folders are listed through descriptors walked ``O_NOFOLLOW`` from the root's, so a
    folder swapped for a symlink to outside while the outline is made is reported
    unreadable, never listed.
    """
    scan = _Scan()
    root_fd = os.open(root, DIR_FLAGS)
    queue: deque[tuple[str, int]] = deque([("", 0)])
    try:
        while queue:
            rel_dir, depth = queue.popleft()
            try:
                fd = _open_beneath(root_fd, rel_dir)
                try:
                    with os.scandir(fd) as found:  # kinds and sizes while fd is open
                        items = sorted((_listed(item) for item in found), key=lambda i: i[0])
                finally:
                    os.close(fd)
            except OSError:
                if not rel_dir:
                    raise
                scan.unreadable.add(rel_dir)
                continue
            for name, kind, size in items:
                if _skipped(name, not rel_dir, include_hidden):
                    continue
                if len(scan.entries) >= limits.max_scan:
                    scan.complete, scan.stopped_in = False, rel_dir
                    return scan
                rel = f"{rel_dir}/{name}" if rel_dir else name
                scan.entries.append(_Entry(rel, name, depth + 1, kind, size))
                scan.children[rel_dir] += 1
                if kind == "dir":
                    if depth + 1 < limits.max_depth:
                        queue.append((rel, depth + 1))
                    else:
                        scan.unexpanded.add(rel)
            scan.scanned.add(rel_dir)
    finally:
        os.close(root_fd)
    return scan


def _folder_note(entry: _Entry, scan: _Scan, shown_children: Counter[str]) -> str:
    """What a shown folder's line says about the entries under it that are not shown."""
    rel = entry.rel
    if rel in scan.unexpanded:
        return "contents not listed: depth limit"
    if rel in scan.unreadable:
        return "unreadable"
    hidden = scan.children[rel] - shown_children[rel]
    if rel in scan.scanned:
        return f"{hidden} entries not shown" if hidden else ""
    if not scan.complete and rel == scan.stopped_in:
        return f"at least {hidden + 1} entries not shown: max_scan"
    return "contents not scanned: max_scan"


def _line(entry: _Entry, scan: _Scan, shown_children: Counter[str]) -> str:
    indent = "  " * (entry.depth - 1)
    if entry.kind == "dir":
        note = _folder_note(entry, scan, shown_children)
        return indent + element("dir", None, path=entry.rel, note=note or None)
    if entry.kind == "file":
        media = classify(entry.rel).media_type
        return indent + element("file", None, path=entry.rel, bytes=entry.size, media_type=media)
    if entry.kind == "symlink":
        return indent + element("symlink", None, path=entry.rel, note="not followed")
    return indent + element("special", None, path=entry.rel, note="special file, not read")


class WorkspaceOutline:
    """The outline of a folder or a :class:`~taskctx_workspace.TaskWorkspace`'s root."""

    __slots__ = ("include_hidden", "limits", "name", "root")
    placement: Placement = "in_order"

    def __init__(
        self,
        root: str | os.PathLike[str] | TaskWorkspace,
        limits: OutlineLimits | None = None,
        *,
        include_hidden: bool = False,
        name: str = "workspace_outline",
    ) -> None:
        folder = root.root if isinstance(root, TaskWorkspace) else Path(root)
        try:
            resolved = folder.resolve(strict=True)
        except FileNotFoundError:
            raise NotFoundError(f"outline root {str(folder)!r} does not exist") from None
        if not resolved.is_dir():
            raise NotFoundError(f"outline root {str(folder)!r} is not a folder")
        self.root: Path = resolved
        self.limits: OutlineLimits = limits if limits is not None else OutlineLimits()
        self.include_hidden = include_hidden
        self.name = name

    def _footer(self, omitted: int, by_chars: int, unexpanded: int, complete: bool) -> list[str]:
        """The lines saying what was left out, and under which limits."""
        lines: list[str] = []
        if omitted:
            by_entries = omitted - by_chars - (0 if complete else 1)
            reasons = [f"max_entries={self.limits.max_entries}"] if by_entries else []
            if by_chars:
                reasons.append(f"max_chars={self.limits.max_chars}")
            if not complete:
                reasons.append(f"scan stopped at max_scan={self.limits.max_scan}")
            least = "" if complete else "at least "
            lines.append(f"… {least}{omitted} more entries not shown ({', '.join(reasons)})")
        if unexpanded:
            lines.append(
                f"… contents of {unexpanded} folders not listed (max_depth={self.limits.max_depth})"
            )
        return lines

    def contribute(self, turn: RequestTurn) -> ContextSection | None:
        """The outline on a ``user_input`` request; None on a ``tool_result``."""
        if turn.boundary != "user_input":
            return None
        scan = _scan(self.root, self.limits, self.include_hidden)
        shown = scan.entries[: self.limits.max_entries]  # breadth first: parents come first
        by_rel = {entry.rel: entry for entry in shown}
        shown_children = Counter(_parent(entry.rel) for entry in shown)
        lines = {entry.rel: _line(entry, scan, shown_children) for entry in shown}
        empty = [] if scan.entries else ["(no entries)"]
        size = len(HEADER) + sum(len(line) + 1 for line in [*empty, *lines.values()])
        unexpanded = sum(entry.rel in scan.unexpanded for entry in shown)
        by_entries = len(scan.entries) - len(shown)
        by_chars = 0
        beyond = 0 if scan.complete else 1  # a stopped scan saw one entry more than it kept
        footer = self._footer(by_entries + beyond, 0, unexpanded, scan.complete)
        while size + sum(len(line) + 1 for line in footer) > self.limits.max_chars:
            if not shown:
                needed = size + sum(len(line) + 1 for line in footer)
                raise CapabilityLimitError(
                    self.name,
                    "max_chars",
                    self.limits.max_chars,
                    needed,
                    "too small for the header",
                )
            dropped = shown.pop()
            size -= len(lines.pop(dropped.rel)) + 1
            unexpanded -= dropped.rel in scan.unexpanded
            by_chars += 1
            parent = _parent(dropped.rel)
            shown_children[parent] -= 1
            if parent:  # its folder is shown and now says one more entry is not
                renewed = _line(by_rel[parent], scan, shown_children)
                size += len(renewed) - len(lines[parent])
                lines[parent] = renewed
            footer = self._footer(
                by_entries + by_chars + beyond, by_chars, unexpanded, scan.complete
            )
        ordered = sorted(lines, key=lambda rel: rel.split("/"))
        text = "\n".join([HEADER, *empty, *(lines[rel] for rel in ordered), *footer])
        notes: list[str] = []
        if not scan.complete:
            notes.append("scan stopped at max_scan; the omitted count is a lower bound")
        if scan.unreadable:
            notes.append(f"{len(scan.unreadable)} folders could not be read")
        return ContextSection.of(
            self.name,
            text,
            self.limits,
            used={"entries": len(shown), "depth": max((e.depth for e in shown), default=0)},
            omitted={"entries": by_entries + by_chars + beyond, "unexpanded_dirs": unexpanded},
            notes=tuple(notes),
        )
