"""The SQLite side of a vector partition: one connection, its tables, the generation.

The file is ``<directory>/vectors.db`` (WAL, ``synchronous=NORMAL``, a busy timeout), or
an in-memory database without a directory. Tables:

``meta(key, value)``
    ``format``, ``model_id`` (the canonical id of the model whose vectors the file holds),
    ``dimensions`` (set by the first stored vector), ``instance`` (a random id of this
    file) and ``generation`` (a counter every apply, by any process, moves).
``docs(doc_id, version, digest, vector)``
    One row per document: its content version, the SHA-256 of the exact text embedded
    and the unit-length float32 vector as a little-endian BLOB.

A file that is not a database, carries another format stamp or holds another model's
vectors is deleted and recreated empty (the vectors are derived data; the kernel then
sees no indexed versions and indexes again) and :attr:`VectorStore.recovered` says why.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import uuid
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from taskctx.errors import TaskCtxError
from taskctx.statefiles import connect_derived, remove_unusable

__all__ = [
    "DB_NAME",
    "FORMAT_VERSION",
    "DimensionMismatchError",
    "StoredVector",
    "VectorRow",
    "VectorStore",
    "VectorStoreError",
    "from_blob",
    "to_blob",
]

DB_NAME = "vectors.db"
FORMAT_VERSION = "1"
"""Bump when the tables or the vector encoding change: it is part of the provider version."""
_FORMAT = f"llm-vectors-{FORMAT_VERSION}"
_DTYPE = np.dtype("<f4")
_PRAGMAS = (
    "PRAGMA busy_timeout = 10000",
    "PRAGMA journal_mode = WAL",
    "PRAGMA synchronous = NORMAL",
)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS docs (
    doc_id TEXT PRIMARY KEY,
    version TEXT NOT NULL,
    digest TEXT NOT NULL,
    vector BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS docs_digest ON docs (digest);
"""
_BUMP = "UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'"

Matrix = npt.NDArray[np.float32]


class VectorStoreError(TaskCtxError):
    """A vector partition's file cannot be used; the message names it."""


class DimensionMismatchError(VectorStoreError):
    """A vector's length differs from the dimensions the partition holds."""


class VectorRow(NamedTuple):
    """One document as stored: id, content version, digest of the embedded text, vector."""

    doc_id: str
    version: str
    digest: str
    vector: bytes


class StoredVector(NamedTuple):
    """A stored vector found by its text digest."""

    digest: str
    vector: bytes


def to_blob(vector: npt.NDArray[np.floating]) -> bytes:
    """The little-endian float32 bytes of ``vector``."""
    return np.ascontiguousarray(vector, dtype=_DTYPE).tobytes()


def from_blob(blob: bytes) -> Matrix:
    """The float32 vector a BLOB holds (read-only view)."""
    return np.frombuffer(blob, dtype=_DTYPE).astype(np.float32, copy=False)


class VectorStore:
    """One partition's database connection and the statements run on it."""

    __slots__ = ("_conn", "_lock", "model_id", "path", "recovered")

    def __init__(self, path: Path | None, model_id: str) -> None:
        self.path = path
        self.model_id = model_id
        self.recovered: str | None = None
        self._lock = threading.RLock()
        self._conn = self._open()

    @property
    def where(self) -> str:
        """The file, for messages (``in memory`` without one)."""
        return "in memory" if self.path is None else str(self.path)

    # -- opening and recovery ---------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        return connect_derived(self.path, _PRAGMAS)

    def _open(self) -> sqlite3.Connection:
        """Connect, check an existing file (recreate it empty if unusable), create tables."""
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            problem = remove_unusable(self.path, _PRAGMAS, self._problem)
            if problem is not None:
                self.recovered = problem
        conn = self._connect()
        try:
            conn.executescript(_SCHEMA)
            with conn:
                for key, value in (
                    ("format", _FORMAT),
                    ("model_id", self.model_id),
                    ("instance", uuid.uuid4().hex),
                    ("generation", "0"),
                ):
                    conn.execute("INSERT OR IGNORE INTO meta VALUES (?, ?)", (key, value))
        except BaseException:
            conn.close()
            raise
        return conn

    def _problem(self, conn: sqlite3.Connection) -> str | None:
        """Why the existing file cannot be used as it is, or None (also for a new file);
        ``remove_unusable`` closes ``conn`` and counts a ``DatabaseError`` as a reason."""
        tables = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone()
        if tables is None:
            return None
        meta = dict(conn.execute("SELECT key, value FROM meta"))
        if meta.get("format") != _FORMAT:
            return f"another format ({meta.get('format')!r}, this provider writes {_FORMAT!r})"
        if meta.get("model_id") != self.model_id:
            return (
                f"it held vectors of model {meta.get('model_id')!r}, "
                f"not {self.model_id!r}: vectors of two models are never mixed"
            )
        return None

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            self._conn.close()

    def __del__(self) -> None:
        # a partition nobody closed must not leak its connection (a ResourceWarning)
        with contextlib.suppress(Exception):
            self._conn.close()

    # -- reading ------------------------------------------------------------------------------

    def _meta(self) -> dict[str, str]:
        return dict(self._conn.execute("SELECT key, value FROM meta"))

    def generation(self) -> str:
        """``<file instance>:<applies>``: moves with every apply, by any process."""
        with self._lock:
            meta = self._meta()
        return f"{meta.get('instance', 'unknown')}:{meta.get('generation', '0')}"

    def dimensions(self) -> int | None:
        """The length of every stored vector (None until the first one)."""
        with self._lock:
            value = self._meta().get("dimensions")
        return None if value is None else int(value)

    def versions(self) -> dict[str, str]:
        """doc_id -> content version of every stored document."""
        with self._lock:
            return dict(self._conn.execute("SELECT doc_id, version FROM docs"))

    def count(self) -> int:
        """How many documents the file holds."""
        with self._lock:
            return int(self._conn.execute("SELECT count(*) FROM docs").fetchone()[0])

    def digests(self, doc_ids: Sequence[str]) -> dict[str, str]:
        """doc_id -> digest of the embedded text, for those of ``doc_ids`` stored."""
        found: dict[str, str] = {}
        with self._lock:
            for chunk in _chunks(doc_ids):
                marks = ",".join("?" * len(chunk))
                found.update(
                    self._conn.execute(
                        f"SELECT doc_id, digest FROM docs WHERE doc_id IN ({marks})", chunk
                    )
                )
        return found

    def vectors_by_digest(self, digests: Iterable[str]) -> dict[str, bytes]:
        """digest -> a stored vector of that text (any document's), for those stored."""
        found: dict[str, bytes] = {}
        with self._lock:
            for chunk in _chunks(list(digests)):
                marks = ",".join("?" * len(chunk))
                found.update(
                    self._conn.execute(
                        f"SELECT digest, vector FROM docs WHERE digest IN ({marks})", chunk
                    )
                )
        return found

    def matrix(self) -> tuple[str, tuple[str, ...], Matrix]:
        """The generation read at, the doc ids in code-point order and their vectors as one
        ``(documents, dimensions)`` float32 matrix, read in one transaction."""
        with self._lock, self._transaction("BEGIN"):
            meta = self._meta()
            rows = self._conn.execute("SELECT doc_id, vector FROM docs").fetchall()
        generation = f"{meta.get('instance', 'unknown')}:{meta.get('generation', '0')}"
        rows.sort(key=lambda row: row[0])
        dimensions = int(meta.get("dimensions", "0"))
        matrix = np.frombuffer(b"".join(row[1] for row in rows), dtype=_DTYPE)
        if dimensions == 0 or matrix.size != dimensions * len(rows):
            if rows:
                raise VectorStoreError(f"vector index {self.where}: stored vectors are damaged")
            return generation, (), np.zeros((0, dimensions), dtype=np.float32)
        return generation, tuple(r[0] for r in rows), matrix.reshape(len(rows), dimensions)

    def bytes_on_disk(self) -> int:
        """The size of the file and its WAL (0 in memory)."""
        if self.path is None:
            return 0
        total = 0
        for suffix in ("", "-wal"):
            with contextlib.suppress(FileNotFoundError):
                total += Path(f"{self.path}{suffix}").stat().st_size
        return total

    # -- writing ------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _transaction(self, begin: str) -> Iterator[None]:
        self._conn.execute(begin)
        try:
            yield
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def apply(self, rows: Sequence[VectorRow], deletes: Sequence[str], dimensions: int) -> None:
        """Store ``rows`` and remove ``deletes`` in one transaction that moves the
        generation; vectors of another length than the file holds are refused."""
        with self._lock, self._transaction("BEGIN IMMEDIATE"):
            held = self._meta().get("dimensions")
            if rows and held is not None and int(held) != dimensions:
                raise DimensionMismatchError(
                    f"vector index {self.where}: model {self.model_id!r} returned "
                    f"{dimensions}-dimensional vectors, the index holds {held}-dimensional "
                    "ones (was the model changed? remove the file to index again)"
                )
            if rows and held is None:
                self._conn.execute("INSERT INTO meta VALUES ('dimensions', ?)", (str(dimensions),))
            self._conn.executemany("DELETE FROM docs WHERE doc_id = ?", [(d,) for d in deletes])
            self._conn.executemany("INSERT OR REPLACE INTO docs VALUES (?, ?, ?, ?)", rows)
            self._conn.execute(_BUMP)


def _chunks(values: Sequence[str], size: int = 500) -> Iterator[Sequence[str]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]
