"""Digests cached by stamp: a file is hashed once per version, not once per scan.

A persistent SQLite table (``.taskctx/workspace/digests.db``, WAL) maps a relative path
to the stamp it was hashed at (size, mtime_ns, ino, ctime_ns) and its sha256. A lookup
whose stamp matches returns the stored digest without reading the file.

Two guards keep a cached digest honest:

- Racy stamps. File systems keep times at a coarse tick, so a file rewritten in the
  same tick as it was hashed (same size) keeps its stamp. A file modified less than one
  tick before hashing is hashed only after that tick has passed (at most
  :data:`RACY_WINDOW_NS`, or :data:`COARSE_RACY_WINDOW_NS` for whole-second times).
- A file that changes while it is read is not cached under any stamp.

A damaged database (not SQLite, truncated, failing ``quick_check``) is deleted and
rebuilt empty: a cache loses nothing it cannot recompute. Writes made inside
:meth:`DigestCache.batch` go to the database in one transaction.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import sqlite3
import stat
import threading
import time
import weakref
from collections.abc import Callable, Collection, Iterator
from pathlib import Path

from taskctx.errors import PolicyError
from taskctx_workspace.results import Stamp

__all__ = [
    "COARSE_RACY_WINDOW_NS",
    "RACY_WINDOW_NS",
    "DigestCache",
    "Opener",
    "racy_wait_ns",
]

Opener = Callable[[], int]
"""Returns a fresh read-only descriptor of the file to hash (the caller confines it)."""

RACY_WINDOW_NS = 50_000_000
"""Time-stamp tick assumed for nanosecond file systems (kernel ticks are at most 10 ms)."""
COARSE_RACY_WINDOW_NS = 2_000_000_000
"""Tick assumed when a modification time is a whole second (FAT keeps 2 s)."""
SCHEMA_VERSION = 1
_CREATE_FLAGS = (
    os.O_RDWR
    | os.O_CREAT
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
_CHUNK = 1 << 20
_ATTEMPTS = 3
_SCHEMA = """
CREATE TABLE IF NOT EXISTS digests (
    path BLOB PRIMARY KEY,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    ino INTEGER NOT NULL,
    ctime_ns INTEGER NOT NULL,
    sha256 TEXT NOT NULL
) WITHOUT ROWID
"""


def racy_wait_ns(mtime_ns: int, now_ns: int) -> int:
    """How long to wait before hashing a file modified at ``mtime_ns`` (0: no wait).

    A time more than two ticks in the future is not waited for: any write now gets an
    earlier time, so its stamp changes anyway.
    """
    window = COARSE_RACY_WINDOW_NS if mtime_ns % 1_000_000_000 == 0 else RACY_WINDOW_NS
    wait = mtime_ns + window - now_ns
    return wait if 0 < wait <= 2 * window else 0


def _key(path: str) -> bytes:
    return path.encode("utf-8", "surrogateescape")


def _signed(value: int) -> int:
    """SQLite integers are signed 64-bit; inode numbers may use all 64 bits."""
    return value - (1 << 64) if value >= 1 << 63 else value


def _row(stamp: Stamp) -> tuple[int, int, int, int]:
    size, mtime_ns, ino, ctime_ns = stamp
    return (size, mtime_ns, _signed(ino), ctime_ns)


def _hash(open_file: Opener) -> tuple[str, Stamp, Stamp]:
    """Digest of the file's bytes with its stamp before and after the read."""
    fd = open_file()
    try:
        before = os.fstat(fd)
        digest = hashlib.sha256()
        offset = 0
        while chunk := os.pread(fd, _CHUNK, offset):
            digest.update(chunk)
            offset += len(chunk)
        after = os.fstat(fd)
    finally:
        os.close(fd)
    return digest.hexdigest(), _stamp(before), _stamp(after)


def _stamp(st: os.stat_result) -> Stamp:
    return (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)


def _close(connection: sqlite3.Connection) -> None:
    connection.close()


def _check_location(connection: sqlite3.Connection, target: str) -> None:
    """PolicyError if SQLite opened another file than ``target`` (a symlink followed).

    The folder was checked link-free just before; SQLite reports the real path it opened,
    so a link swapped in at the database's name or a folder on its way is caught here,
    before anything is written through it.
    """
    if target == ":memory:":
        return
    rows = connection.execute("PRAGMA database_list").fetchall()
    opened = next((str(row[2]) for row in rows if row[1] == "main"), "")
    if opened != os.path.abspath(target):
        raise PolicyError(
            f"workspace state {target!r} refused: SQLite opened {opened!r} instead "
            "(a symlink stands where the workspace keeps its digest cache)"
        )


def _damaged(exc: sqlite3.DatabaseError) -> bool:
    """Corrupt or not a database at all (not busy, locked or unopenable: those propagate)."""
    return type(exc) is sqlite3.DatabaseError


class DigestCache:
    """sha256 digests of files keyed by path and stamp; ``None`` keeps them in memory.

    ``folder`` opens the database's folder (a workspace passes one that walks it without
    following links): the database and its side files are then made, checked and deleted
    relative to that descriptor, and SQLite only opens a file that already exists there.
    """

    def __init__(self, db_path: Path | None, *, folder: Opener | None = None) -> None:
        self.db_path = db_path
        self._folder = folder
        self.hashed_count = 0
        """How many times a file was actually read and hashed (cache misses)."""
        self.recovered = False
        """Whether a damaged database file was found and rebuilt."""
        self._lock = threading.RLock()
        self._pending: dict[bytes, tuple[tuple[int, int, int, int], str]] = {}
        self._depth = 0
        self._connection = self._open()
        self._finalizer = weakref.finalize(self, _close, self._connection)

    # -- the database ----------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        if self.db_path is None:
            return self._prepare(":memory:")
        try:
            return self._prepare(os.fspath(self.db_path))
        except sqlite3.DatabaseError as exc:
            if not _damaged(exc):
                raise
            self.recovered = True
            self._delete_files()
            return self._prepare(os.fspath(self.db_path))

    def _in_folder(self, action: Callable[[int | None, str], None]) -> None:
        """Run ``action(dir_fd, name)`` for the database file (dir_fd None: by path)."""
        assert self.db_path is not None
        if self._folder is None:
            action(None, os.fspath(self.db_path))
            return
        fd = self._folder()
        try:
            action(fd, self.db_path.name)
        finally:
            os.close(fd)

    def _create_file(self, dir_fd: int | None, name: str) -> None:
        """Make the database file if missing, never through a symlink; refuse linked sides."""
        for suffix in ("-wal", "-shm", "-journal"):
            try:
                st = os.stat(name + suffix, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            if not stat.S_ISREG(st.st_mode):
                raise PolicyError(
                    f"workspace state {str(self.db_path) + suffix!r} refused: "
                    "not a regular file (SQLite would write through it)"
                )
        try:
            fd = os.open(name, _CREATE_FLAGS, 0o666, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.EISDIR, errno.ENXIO):
                raise
            raise PolicyError(
                f"workspace state {str(self.db_path)!r} refused: not a regular file "
                "(a symlink or folder stands where the digest cache lives)"
            ) from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise PolicyError(
                    f"workspace state {str(self.db_path)!r} refused: not a regular file"
                )
        finally:
            os.close(fd)

    def _prepare(self, target: str) -> sqlite3.Connection:
        if target == ":memory:":
            connection = sqlite3.connect(
                target, timeout=30.0, isolation_level=None, check_same_thread=False
            )
        else:
            self._in_folder(self._create_file)
            connection = sqlite3.connect(  # mode=rw: SQLite never creates a file itself
                Path(target).as_uri() + "?mode=rw",
                uri=True,
                timeout=30.0,
                isolation_level=None,
                check_same_thread=False,
            )
        try:
            _check_location(connection, target)
            connection.execute("PRAGMA journal_mode=WAL").fetchone()
            connection.execute("PRAGMA synchronous=NORMAL")
            (verdict,) = connection.execute("PRAGMA quick_check").fetchone()
            if verdict != "ok":
                raise sqlite3.DatabaseError(f"digest cache failed quick_check: {verdict}")
            (version,) = connection.execute("PRAGMA user_version").fetchone()
            if version not in (0, SCHEMA_VERSION):
                connection.execute("DROP TABLE IF EXISTS digests")
            connection.execute(_SCHEMA)
            connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except BaseException:
            connection.close()
            raise
        return connection

    def _delete_files(self) -> None:
        def delete(dir_fd: int | None, name: str) -> None:
            for suffix in ("", "-wal", "-shm", "-journal"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(name + suffix, dir_fd=dir_fd)

        self._in_folder(delete)

    def _rebuild(self) -> None:
        """Replace a database found damaged while in use by a fresh, empty one."""
        self._connection.close()
        self._finalizer.detach()
        self.recovered = True
        if self.db_path is not None:
            self._delete_files()
        self._connection = self._open()
        self._finalizer = weakref.finalize(self, _close, self._connection)

    def close(self) -> None:
        """Write pending rows and close the database."""
        with self._lock:
            self._flush()
            self._finalizer()

    # -- lookups and hashing -----------------------------------------------------------

    def lookup(self, path: str, stamp: Stamp) -> str | None:
        """The cached digest of ``path`` if it was hashed at exactly ``stamp``."""
        key, row = _key(path), _row(stamp)
        with self._lock:
            pending = self._pending.get(key)
            if pending is not None:
                return pending[1] if pending[0] == row else None
            try:
                found = self._connection.execute(
                    "SELECT size, mtime_ns, ino, ctime_ns, sha256 FROM digests WHERE path = ?",
                    (key,),
                ).fetchone()
            except sqlite3.DatabaseError as exc:
                if not _damaged(exc):
                    raise
                self._rebuild()
                return None
        if found is None or tuple(found[:4]) != row:
            return None
        return str(found[4])

    def digest(self, path: str, open_file: Opener, stamp: Stamp) -> str:
        """The digest of the workspace file ``path``, from the cache when ``stamp`` matches,
        else by hashing what ``open_file`` opens, cached under the stamp actually read."""
        cached = self.lookup(path, stamp)
        if cached is not None:
            return cached
        mtime_ns = stamp[1]
        for _ in range(_ATTEMPTS):
            wait = racy_wait_ns(mtime_ns, time.time_ns())
            if wait:
                time.sleep(wait / 1e9)
            started = time.time_ns()
            digest, before, after = _hash(open_file)
            with self._lock:
                self.hashed_count += 1
            if before == after and not racy_wait_ns(before[1], started):
                self.store(path, before, digest)
                return digest
            mtime_ns = after[1]
        return digest  # the file keeps changing: the digest of the last read, not cached

    def store(self, path: str, stamp: Stamp, digest: str) -> None:
        """Remember ``digest`` for ``path`` at ``stamp`` (at the end of a batch if in one)."""
        with self._lock:
            self._pending[_key(path)] = (_row(stamp), digest)
            if self._depth == 0:
                self._flush()

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Collect writes and commit them in one transaction at the end (re-entrant)."""
        with self._lock:
            self._depth += 1
        try:
            yield
        finally:
            with self._lock:
                self._depth -= 1
                if self._depth == 0:
                    self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        rows = [(key, *row, digest) for key, (row, digest) in self._pending.items()]
        self._pending.clear()
        try:
            with self._transaction():
                self._connection.executemany(
                    "INSERT OR REPLACE INTO digests VALUES (?, ?, ?, ?, ?, ?)", rows
                )
        except sqlite3.DatabaseError as exc:
            if not _damaged(exc):
                raise
            self._rebuild()

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        self._connection.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._connection.execute("ROLLBACK")
            raise
        self._connection.execute("COMMIT")

    def retain(self, paths: Collection[str], scope: Callable[[str], bool] | None = None) -> int:
        """Forget every path not in ``paths`` (after a walk); return how many.

        ``scope`` limits forgetting to the paths the walk could have seen.
        """
        keep = {_key(p) for p in paths}
        with self._lock:
            self._flush()
            try:
                known = [row[0] for row in self._connection.execute("SELECT path FROM digests")]
                gone = [
                    (key,)
                    for key in map(bytes, known)
                    if key not in keep
                    and (scope is None or scope(key.decode("utf-8", "surrogateescape")))
                ]
                if gone:
                    with self._transaction():
                        self._connection.executemany("DELETE FROM digests WHERE path = ?", gone)
            except sqlite3.DatabaseError as exc:
                if not _damaged(exc):
                    raise
                self._rebuild()
                return 0
        return len(gone)

    def __len__(self) -> int:
        with self._lock:
            self._flush()
            (count,) = self._connection.execute("SELECT COUNT(*) FROM digests").fetchone()
        return int(count)
