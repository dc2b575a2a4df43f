"""Where a record store's files live, checked before SQLite opens them and after.

``<root>/.taskctx/records/`` holds ``records.db``, SQLite's side files (``-wal``,
``-shm``, ``-journal``) and ``cursor.key``. SQLite opens and writes them by path, in
place, so a symlink or hard link at any of them would make the store read or write a
file somewhere else. :func:`check_location` refuses, before anything is opened or made:
``.taskctx`` or ``records`` that is a symlink or not a folder, and any of those files
that is a symlink, not a regular file, or a regular file with other names (hard links).
The root itself may be a symlink: it is the caller's choice of folder.

:func:`check_opened` then asks SQLite which file it really opened
(``PRAGMA database_list`` reports the path with every link resolved) and refuses a
connection that reached anything but ``<real root>/.taskctx/records/records.db``, before
a single statement writes through it. The database file is made beforehand with
``O_NOFOLLOW`` and opened with ``mode=rw``, so SQLite itself never creates a file.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import stat
from pathlib import Path

from taskctx_records.errors import RecordStorePathError

__all__ = [
    "DB_NAME",
    "KEY_NAME",
    "SIDE_SUFFIXES",
    "check_key_file",
    "check_location",
    "check_opened",
    "create_database_file",
]

DB_NAME = "records.db"
KEY_NAME = "cursor.key"
SIDE_SUFFIXES = ("-wal", "-shm", "-journal")
"""SQLite's side files of ``records.db`` (write-ahead log, shared memory, rollback journal)."""

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "a special file")


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def _link_text(path: Path) -> str:
    try:
        return f" to {os.readlink(path)!r}"
    except OSError:
        return ""


def _refuse(path: Path, problem: str) -> RecordStorePathError:
    return RecordStorePathError(
        f"record store path {str(path)!r} refused: {problem}; the store opens its files "
        "only as real folders and regular files, never through a link",
        path=path,
    )


def _check_folder(path: Path) -> bool:
    """Whether the folder exists; refused if a symlink or something else stands there."""
    st = _lstat(path)
    if st is None:
        return False
    if stat.S_ISLNK(st.st_mode):
        raise _refuse(path, f"it is a symlink{_link_text(path)}, not a folder")
    if not stat.S_ISDIR(st.st_mode):
        kind = "a regular file" if stat.S_ISREG(st.st_mode) else _kind(st.st_mode)
        raise _refuse(path, f"it is {kind}, not a folder")
    return True


def _check_file(path: Path) -> None:
    st = _lstat(path)
    if st is None:
        return
    if stat.S_ISLNK(st.st_mode):
        raise _refuse(path, f"it is a symlink{_link_text(path)}")
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(path, f"it is {_kind(st.st_mode)}, not a regular file")
    if st.st_nlink > 1:
        raise _refuse(
            path,
            f"it is a hard link ({st.st_nlink} names share the file, and SQLite would write "
            "the others in place)",
        )


def check_location(state_dir: Path) -> None:
    """Refuse ``state_dir`` (``<root>/.taskctx/records``) unless it is safe to open.

    Raises :class:`RecordStorePathError` naming the path and what stands there.
    """
    if not _check_folder(state_dir.parent) or not _check_folder(state_dir):
        return
    for name in (DB_NAME, *(DB_NAME + suffix for suffix in SIDE_SUFFIXES), KEY_NAME):
        _check_file(state_dir / name)


def check_key_file(state_dir: Path) -> None:
    """Refuse a ``cursor.key`` (or its folders) that is a link or not a regular file."""
    if _check_folder(state_dir.parent) and _check_folder(state_dir):
        _check_file(state_dir / KEY_NAME)


def create_database_file(path: Path) -> None:
    """Make the (empty) database file if missing, never through a symlink at its name."""
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_NONBLOCK", 0), 0o666)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EISDIR, errno.ENXIO):
            raise _refuse(path, "it became a symlink or something else than a file") from None
        raise
    try:
        st = os.fstat(fd)
    finally:
        os.close(fd)
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(path, f"it is {_kind(st.st_mode)}, not a regular file")


def check_opened(conn: sqlite3.Connection, path: Path) -> None:
    """Refuse a connection whose main database is not ``path`` below the real root.

    ``path`` is ``<root>/.taskctx/records/records.db``: only the root's own links resolve.
    """
    root = path.absolute().parents[2]
    expected = os.path.join(os.path.realpath(root), *path.parts[-3:])
    rows = conn.execute("PRAGMA database_list").fetchall()
    opened = next((str(row[2]) for row in rows if row[1] == "main"), "")
    if opened != expected:
        raise _refuse(path, f"SQLite opened {opened!r} instead (a link was followed)")
