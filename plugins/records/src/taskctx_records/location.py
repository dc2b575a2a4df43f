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

import os
import sqlite3
from pathlib import Path

from taskctx.statefiles import (
    SQLITE_SIDE_SUFFIXES,
    check_state_file,
    check_state_folder,
    create_state_file,
)
from taskctx.statefiles import check_opened as check_opened_path
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
SIDE_SUFFIXES = SQLITE_SIDE_SUFFIXES
"""SQLite's side files of ``records.db`` (write-ahead log, shared memory, rollback journal)."""


def _refuse(path: Path, problem: str) -> RecordStorePathError:
    return RecordStorePathError(
        f"record store path {str(path)!r} refused: {problem}; the store opens its files "
        "only as real folders and regular files, never through a link",
        path=path,
    )


def _folders_exist(state_dir: Path) -> bool:
    return check_state_folder(state_dir.parent, _refuse) and check_state_folder(state_dir, _refuse)


def check_location(state_dir: Path) -> None:
    """Refuse ``state_dir`` (``<root>/.taskctx/records``) unless it is safe to open.

    Raises :class:`RecordStorePathError` naming the path and what stands there.
    """
    if _folders_exist(state_dir):
        check_state_file(state_dir / DB_NAME, _refuse, sqlite_side_files=True)
        check_state_file(state_dir / KEY_NAME, _refuse)


def check_key_file(state_dir: Path) -> None:
    """Refuse a ``cursor.key`` (or its folders) that is a link or not a regular file."""
    if _folders_exist(state_dir):
        check_state_file(state_dir / KEY_NAME, _refuse)


def create_database_file(path: Path) -> None:
    """Make the (empty) database file if missing, never through a symlink at its name."""
    create_state_file(path, _refuse)


def check_opened(conn: sqlite3.Connection, path: Path) -> None:
    """Refuse a connection whose main database is not ``path`` below the real root.

    ``path`` is ``<root>/.taskctx/records/records.db``: only the root's own links resolve.
    """
    root = path.absolute().parents[2]
    check_opened_path(conn, Path(os.path.realpath(root), *path.parts[-3:]), _refuse)
