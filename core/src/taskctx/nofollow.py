"""Flags and words for opening files without following links: one table for every package.

Every part of taskctx that opens a folder or a file it did not make itself (workspace
reads, skill discovery, state folders, the workspace outline) opens it relative to a
folder descriptor with these flags, so a symlink planted or swapped in at the name is
met by the open itself (``ELOOP``/``ENOTDIR``) instead of being followed.
"""

from __future__ import annotations

import os
import stat

__all__ = ["DIR_FLAGS", "FILE_FLAGS", "describe_mode"]

DIR_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_DIRECTORY", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
"""Open a folder for listing or as a ``dir_fd``, refusing a symlink at its name."""

FILE_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
"""Open a file for reading, refusing a symlink and never blocking on a FIFO or device
(nor taking a terminal as the controlling one)."""

# --- Table: file type test -> the words a message uses for it. --------------------------
_KINDS = (
    (stat.S_ISLNK, "a symlink"),
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISREG, "a regular file"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def describe_mode(mode: int) -> str:
    """What a file of ``mode`` is, for a message: ``a symlink``, ``a FIFO``, ..."""
    return next((name for test, name in _KINDS if test(mode)), "a special file")
