"""State folders and SQLite files that taskctx keeps, opened only as what they claim to be.

taskctx keeps indexes, record databases and keys in state folders, often inside the very
folder it reads (``<root>/.taskctx/``), where whoever can write files can also plant a
symlink: a ``.taskctx`` that points elsewhere would make every index write land outside
the root, and a damaged-index rebuild would delete files there. SQLite opens its files by
path, so this module checks around it:

- :func:`ensure_state_dir` makes or opens the folders *below* a trusted base one
  component at a time (``mkdirat``/``openat`` with ``O_NOFOLLOW``): a symlink or a
  non-folder at any of them is refused. The base itself is the caller's choice and may
  be a link.
- :func:`check_state_file` refuses a file (and its SQLite side files) that is a symlink,
  not a regular file, or a hard link (SQLite would write the other names in place).
- :func:`connect_sqlite` makes the database file with ``O_NOFOLLOW``, opens it with
  ``mode=rw`` (or ``ro``) so SQLite never creates a file itself, and refuses the
  connection unless SQLite reports having opened exactly the checked real path, before
  a single statement runs. A folder swapped for a link between the check and the open is
  caught there, so nothing is written through it.

Every refusal is a :class:`~taskctx.errors.StatePathError` naming the path and what
stands there (a caller may pass its own error type).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import sqlite3
import stat
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import attrs

from taskctx.errors import StatePathError
from taskctx.nofollow import DIR_FLAGS, describe_mode

__all__ = [
    "SQLITE_SIDE_SUFFIXES",
    "STATE_DIR_ENV",
    "Refuse",
    "StateDir",
    "check_opened",
    "check_state_file",
    "check_state_folder",
    "connect_derived",
    "connect_sqlite",
    "create_state_file",
    "default_state_dir",
    "ensure_state_dir",
    "folder_state_dir",
    "open_state_dir",
    "remove_sqlite_files",
    "remove_unusable",
]

STATE_DIR_ENV = "TASKCTX_STATE_DIR"
"""The environment variable naming the per-user state folder (see :func:`default_state_dir`)."""
FOLDERS_PART = "folders"
"""The folder under the state folder that holds one folder per source folder read."""

SQLITE_SIDE_SUFFIXES = ("-wal", "-shm", "-journal")
"""SQLite's side files of a database (write-ahead log, shared memory, rollback journal)."""

Refuse = Callable[[Path, str], Exception]
"""Builds the error for ``path`` and the problem found there."""


def _state_path_error(path: Path, problem: str) -> StatePathError:
    return StatePathError(
        f"state path {str(path)!r} refused: {problem}; taskctx opens its state only as real "
        "folders and regular files, never through a link",
        path=path,
    )


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


def check_state_folder(path: Path, refuse: Refuse = _state_path_error) -> bool:
    """Whether folder ``path`` exists; refused if a symlink or anything else stands there."""
    st = _lstat(path)
    if st is None:
        return False
    if stat.S_ISLNK(st.st_mode):
        raise refuse(path, f"it is a symlink{_link_text(path)}, not a folder")
    if not stat.S_ISDIR(st.st_mode):
        kind = describe_mode(st.st_mode)
        raise refuse(path, f"it is {kind}, not a folder")
    return True


def check_state_file(
    path: Path, refuse: Refuse = _state_path_error, *, sqlite_side_files: bool = False
) -> None:
    """Refuse ``path`` (absent is fine) unless it is a regular file with one name.

    With ``sqlite_side_files``, its ``-wal``, ``-shm`` and ``-journal`` files too.
    """
    names = [path]
    if sqlite_side_files:
        names += [Path(f"{path}{suffix}") for suffix in SQLITE_SIDE_SUFFIXES]
    for name in names:
        st = _lstat(name)
        if st is None:
            continue
        if stat.S_ISLNK(st.st_mode):
            raise refuse(name, f"it is a symlink{_link_text(name)}")
        if not stat.S_ISREG(st.st_mode):
            raise refuse(name, f"it is {describe_mode(st.st_mode)}, not a regular file")
        if st.st_nlink > 1:
            raise refuse(
                name,
                f"it is a hard link ({st.st_nlink} names share the file, and it would be "
                "written in place)",
            )


def open_state_dir(
    base: str | os.PathLike[str],
    *parts: str,
    create: bool = True,
    refuse: Refuse = _state_path_error,
) -> tuple[int, Path]:
    """An open descriptor of ``base/parts...`` and its real path, every part a real
    folder (made if ``create``); the caller closes the descriptor.

    ``base`` is trusted as given (it may be a link); each of ``parts`` is opened or made
    relative to its parent's descriptor without following links, so a symlink planted at
    any of them is refused, never followed. Raises FileNotFoundError when a part is
    missing and ``create`` is false.
    """
    real = Path(os.path.realpath(base))
    if create:
        real.mkdir(parents=True, exist_ok=True)
    fd = os.open(real, DIR_FLAGS)
    where = real
    try:
        for part in parts:
            if not part or part in (".", "..") or "/" in part or "\0" in part:
                raise ValueError(f"state folder part {part!r} is not one plain name")
            where = where / part
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=fd)
            try:
                child = os.open(part, DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    check_state_folder(where, refuse)  # names what stands there
                    raise refuse(where, "it is not a folder") from None
                raise
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd, where


def ensure_state_dir(
    base: str | os.PathLike[str],
    *parts: str,
    create: bool = True,
    refuse: Refuse = _state_path_error,
) -> Path:
    """The real path of ``base/parts...``, every part a real folder (made if ``create``):
    :func:`open_state_dir` without the descriptor."""
    fd, where = open_state_dir(base, *parts, create=create, refuse=refuse)
    os.close(fd)
    return where


def create_state_file(path: Path, refuse: Refuse = _state_path_error) -> None:
    """Make the (empty) file ``path`` if missing, never through a symlink at its name."""
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_NONBLOCK", 0), 0o666)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EISDIR, errno.ENXIO):
            raise refuse(path, "it became a symlink or something else than a file") from None
        raise
    try:
        st = os.fstat(fd)
    finally:
        os.close(fd)
    if not stat.S_ISREG(st.st_mode):
        raise refuse(path, f"it is {describe_mode(st.st_mode)}, not a regular file")


def check_opened(
    conn: sqlite3.Connection, expected: Path, refuse: Refuse = _state_path_error
) -> None:
    """Refuse a connection whose main database is not exactly ``expected`` (a real path).

    SQLite reports the file it opened with every link resolved, so a folder swapped for a
    link since ``expected`` was resolved shows here.
    """
    rows = conn.execute("PRAGMA database_list").fetchall()
    opened = next((str(row[2]) for row in rows if row[1] == "main"), "")
    if opened != str(expected):
        raise refuse(expected, f"SQLite opened {opened!r} instead (a link was followed)")


def connect_sqlite(
    path: Path,
    *,
    read_only: bool = False,
    refuse: Refuse = _state_path_error,
    **connect: Any,
) -> sqlite3.Connection:
    """A connection to the database file ``path``, checked before and after it is opened.

    ``path`` must be the real path (folders from :func:`ensure_state_dir`): it is not
    resolved again here, so a folder swapped for a link since it was resolved makes SQLite
    report another file and the connection is refused. The file and its side files must
    not be links; read-write makes the file with ``O_NOFOLLOW`` if missing. Other keyword
    arguments go to :func:`sqlite3.connect`.
    """
    path = Path(os.path.abspath(path))
    check_state_file(path, refuse, sqlite_side_files=True)
    if not read_only:
        create_state_file(path, refuse)
    conn: sqlite3.Connection = sqlite3.connect(
        path.as_uri() + ("?mode=ro" if read_only else "?mode=rw"), uri=True, **connect
    )
    try:
        check_opened(conn, path, refuse)
    except BaseException:
        conn.close()
        raise
    return conn


def connect_derived(path: Path | None, pragmas: Sequence[str]) -> sqlite3.Connection:
    """A connection to a database of derived data (an index: rebuilt, never repaired),
    in memory for None, else through :func:`connect_sqlite`; ``pragmas`` run first."""
    if path is None:
        conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    else:  # never through a link planted at the file or its side files
        conn = connect_sqlite(path, isolation_level=None, check_same_thread=False)
    try:
        for pragma in pragmas:
            conn.execute(pragma)
    except BaseException:
        conn.close()
        raise
    return conn


def remove_unusable(
    path: Path, pragmas: Sequence[str], problem: Callable[[sqlite3.Connection], str | None]
) -> str | None:
    """Why the derived database at ``path`` cannot be used, after deleting it and its side
    files; None when it is usable or new. ``problem`` inspects an open connection and
    names what is wrong; a file SQLite cannot read is wrong too."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = connect_derived(path, pragmas)
    except sqlite3.DatabaseError as error:
        found: str | None = f"{type(error).__name__}: {error}"
    else:
        try:
            found = problem(conn)
        except sqlite3.DatabaseError as error:
            found = f"{type(error).__name__}: {error}"
        finally:
            conn.close()
    if found is not None:
        remove_sqlite_files(path)
    return found


def remove_sqlite_files(path: Path) -> None:
    """Delete the database ``path`` and its side files, those that exist."""
    for suffix in ("", *SQLITE_SIDE_SUFFIXES):
        with contextlib.suppress(FileNotFoundError):
            Path(f"{path}{suffix}").unlink()


def _parts(parts: Iterable[str]) -> tuple[str, ...]:
    return tuple(parts)


@attrs.define(slots=True, frozen=True)
class StateDir:
    """A state folder named as a trusted ``base`` and the ``parts`` below it.

    A source sets its ``index_directory`` to one (``StateDir(root, (".taskctx",
    "index"))``) so the kernel makes the index folders beneath ``base`` without following
    a link planted at any part; a plain path is trusted whole.
    """

    base: Path = attrs.field(converter=Path)
    parts: tuple[str, ...] = attrs.field(default=(), converter=_parts)

    @property
    def path(self) -> Path:
        """``base/parts...`` as given (not resolved, nothing checked)."""
        return self.base.joinpath(*self.parts)

    def child(self, *parts: str) -> StateDir:
        """The state folder ``parts`` below this one."""
        return StateDir(self.base, (*self.parts, *parts))

    def ensure(self, *, create: bool = True, refuse: Refuse = _state_path_error) -> Path:
        """The real path, every part checked (made if ``create``): :func:`ensure_state_dir`."""
        return ensure_state_dir(self.base, *self.parts, create=create, refuse=refuse)

    def open(self, *, create: bool = True, refuse: Refuse = _state_path_error) -> int:
        """A descriptor of the folder, every part checked (made if ``create``); the caller
        closes it: :func:`open_state_dir`."""
        return open_state_dir(self.base, *self.parts, create=create, refuse=refuse)[0]


def default_state_dir() -> Path:
    """The per-user state folder: ``$TASKCTX_STATE_DIR``, else ``$XDG_CACHE_HOME/taskctx``,
    else ``~/.cache/taskctx`` (the platform cache folder, as pip and pytest use)."""
    explicit = os.environ.get(STATE_DIR_ENV)
    if explicit:
        return Path(explicit)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "taskctx"


_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def folder_state_dir(root: Path, state_dir: str | os.PathLike[str] | None = None) -> StateDir:
    """Where the derived state of the folder ``root`` lives (indexes, caches), outside it.

    ``<state_dir>/folders/<name>-<digest>``: ``state_dir`` defaults to
    :func:`default_state_dir`; ``<digest>`` is the first 16 hex digits of the sha256 of
    the folder's real path (its identity: two spellings of one folder share it, two
    folders of one name do not) and ``<name>`` its last component made safe, so a person
    listing the folders sees which is which.
    """
    real = os.path.realpath(root)
    digest = hashlib.sha256(os.fsencode(real)).hexdigest()[:16]
    name = _UNSAFE.sub("-", os.path.basename(real)).strip("-.")[:40] or "root"
    base = Path(state_dir) if state_dir is not None else default_state_dir()
    return StateDir(base, (FOLDERS_PART, f"{name}-{digest}"))
