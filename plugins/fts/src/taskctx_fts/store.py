"""The SQLite side of a partition: one connection, every statement, corruption recovery.

The file is ``<directory>/fts.db`` (WAL, ``synchronous=NORMAL``, a busy timeout), or an
in-memory database when there is no directory. A file that is not a database, fails
``PRAGMA quick_check`` or carries another format stamp is deleted and recreated empty;
the kernel then sees no indexed versions and re-indexes. Statements are constant
strings, so the ``sqlite3`` statement cache prepares each once per connection.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

from taskctx.statefiles import connect_derived, remove_sqlite_files, remove_unusable
from taskctx_fts import schema

__all__ = [
    "DB_NAME",
    "QUICK_CHECK_MAX_BYTES",
    "Change",
    "FtsStore",
    "NewDocument",
    "StoredDoc",
    "is_corruption",
    "token_count",
]

DB_NAME = "fts.db"
QUICK_CHECK_MAX_BYTES = 256 * 1024 * 1024
"""Larger files skip ``PRAGMA quick_check`` on open (it reads every page: ~0.6 ms/MB);
damage found later is handled where it surfaces."""

_CORRUPTION_CODES = frozenset({11, 26})  # SQLITE_CORRUPT, SQLITE_NOTADB
_RESTRICT = " AND (+fts.rowid) IN (SELECT rowid FROM temp.allowed)"
_TOP = (
    "SELECT fts.rowid, -bm25(fts, ?2, ?3) AS s, d.doc_id, d.len_title + d.len_body"
    " FROM fts JOIN docs AS d ON d.rowid = fts.rowid WHERE fts MATCH ?1{restrict}"
    " ORDER BY s DESC, d.doc_id LIMIT ?4"
)
_TOP_ALL = _TOP.format(restrict="")
_TOP_ALLOWED = _TOP.format(restrict=_RESTRICT)
_MATCHING = "SELECT group_concat(fts.rowid) FROM fts WHERE fts MATCH ?{restrict}"
_MATCHING_ALL = _MATCHING.format(restrict="")
_MATCHING_ALLOWED = _MATCHING.format(restrict=_RESTRICT)
_POSTINGS = (
    "SELECT doc, ?2 * sum(col = 'title') + ?3 * sum(col = 'body')"
    " FROM temp.fts_instances WHERE term = ?1 GROUP BY doc"
)
_DESCRIBE = (
    "SELECT d.rowid, d.doc_id, d.len_title + d.len_body"
    " FROM json_each(?) AS j JOIN docs AS d ON d.rowid = j.value"
)


class NewDocument(NamedTuple):
    """A document ready to store: identity, version and its two token fields (each the
    tokens joined by single spaces, as ``tokenize.document_text`` makes them)."""

    doc_id: str
    path: str
    scope: str | None
    version: str
    title: str
    body: str


class Change(NamedTuple):
    """What one document held before and after an apply (None: absent), as the two
    space-joined token fields."""

    rowid: int
    old: tuple[str, str] | None
    new: tuple[str, str] | None


def token_count(field: str) -> int:
    """Tokens in a space-joined field (tokens never hold a space and are never empty)."""
    return field.count(" ") + 1 if field else 0


class StoredDoc(NamedTuple):
    """A stored document as ranking needs it."""

    rowid: int
    doc_id: str
    length: int


def is_corruption(error: BaseException) -> bool:
    """Whether ``error`` says the database file is damaged (not merely busy or misused)."""
    code = getattr(error, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF in _CORRUPTION_CODES:
        return True
    text = str(error).lower()
    return "malformed" in text or "not a database" in text


def _probe(conn: sqlite3.Connection) -> bool:
    """Whether the index finds the first, middle and last stored document by a token.

    ``quick_check`` sees b-tree damage, not FTS5 blocks that decode as empty doclists;
    this catches an index that lost its postings at the cost of three lookups.
    """
    bounds = conn.execute("SELECT min(rowid), max(rowid) FROM docs").fetchone()
    if bounds[0] is None:
        return True
    low, high = bounds
    for target in dict.fromkeys((low, (low + high) // 2, high)):
        row = conn.execute(
            "SELECT rowid, title || ' ' || body FROM fts WHERE rowid >= ? ORDER BY rowid LIMIT 1",
            (target,),
        ).fetchone()
        if row is None:
            return False
        tokens = str(row[1]).split()
        if not tokens:
            continue
        found = conn.execute(
            "SELECT count(*) FROM fts WHERE fts MATCH ? AND rowid = ?",
            ('"' + tokens[len(tokens) // 2].replace('"', '""') + '"', row[0]),
        ).fetchone()
        if found[0] != 1:
            return False
    return True


class FtsStore:
    """One partition's database connection and the statements run on it."""

    __slots__ = ("_conn", "_lock", "path", "recovered")

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.recovered: str | None = None
        self._lock = threading.RLock()
        self._conn = self._open()

    # -- opening and recovery -------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        return connect_derived(self.path, schema.PRAGMAS)

    def _open(self) -> sqlite3.Connection:
        """Connect, check an existing file (rebuild it empty if damaged), create tables."""
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            problem = remove_unusable(self.path, schema.PRAGMAS, self._problem)
            if problem is not None:
                self.recovered = problem
        conn = self._connect()
        schema.create(conn)
        conn.executescript(schema.TEMP_SCHEMA)
        return conn

    def _problem(self, conn: sqlite3.Connection) -> str | None:
        """Why the existing file cannot be used as it is, or None (also for a new file);
        ``remove_unusable`` closes ``conn`` and counts a ``DatabaseError`` as a reason."""
        matches = schema.format_matches(conn)
        if matches is None:
            return None
        if matches is False:
            return "another format"
        assert self.path is not None  # only a file on disk is checked
        if self.path.stat().st_size <= QUICK_CHECK_MAX_BYTES:
            check = conn.execute("PRAGMA quick_check").fetchall()
            if check != [("ok",)]:
                return f"quick_check: {check[0][0]}"
        if not _probe(conn):
            return "the FTS5 index does not find stored documents"
        return None

    def rebuild(self, reason: str) -> None:
        """Drop everything (a damaged file) and start an empty partition."""
        with self._lock:
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()
            if self.path is not None:
                remove_sqlite_files(self.path)
            self.recovered = reason
            self._conn = self._open()

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            self._conn.close()

    def __del__(self) -> None:
        # A partition nobody closed must not leak its connection (a ResourceWarning on 3.13+).
        with contextlib.suppress(Exception):
            self._conn.close()

    @contextlib.contextmanager
    def locked(self) -> Iterator[sqlite3.Connection]:
        """The connection, held by this thread for the duration."""
        with self._lock:
            yield self._conn

    # -- reading ---------------------------------------------------------------------------

    def data_version(self) -> int:
        """Changes when another connection commits (never for our own commits)."""
        row = self._conn.execute("PRAGMA data_version").fetchone()
        return int(row[0])

    def totals(self) -> tuple[int, int]:
        """(documents, tokens over both fields) as stored with the last commit."""
        rows = dict(
            self._conn.execute("SELECT key, value FROM meta WHERE key IN ('documents', 'tokens')")
        )
        return int(rows.get("documents", 0)), int(rows.get("tokens", 0))

    def generation(self) -> str:
        """``<file instance>:<applies>``: moves with every apply, by any process."""
        rows = dict(
            self._conn.execute(
                "SELECT key, value FROM meta WHERE key IN ('instance', 'generation')"
            )
        )
        return f"{rows.get('instance', 'unknown')}:{rows.get('generation', '0')}"

    def versions(self) -> dict[str, str]:
        """doc_id -> content version of every stored document."""
        return dict(self._conn.execute("SELECT doc_id, version FROM docs"))

    def document_frequency(self, term: str) -> int:
        """How many documents hold ``term`` (FTS5's own count, from fts5vocab)."""
        row = self._conn.execute(
            "SELECT doc FROM temp.fts_terms WHERE term = ?", (term,)
        ).fetchone()
        return 0 if row is None else int(row[0])

    def term_count(self) -> int:
        """Distinct terms in the index."""
        row = self._conn.execute("SELECT count(*) FROM temp.fts_terms").fetchone()
        return int(row[0])

    def postings(self, term: str, weights: tuple[float, float]) -> dict[int, float]:
        """rowid -> column-weighted frequency of ``term`` (title and body occurrences)."""
        return dict(self._conn.execute(_POSTINGS, (term, *weights)))

    def top(
        self, match: str, weights: tuple[float, float], limit: int | None, restricted: bool
    ) -> list[tuple[int, float, str, int]]:
        """(rowid, bm25 score, doc_id, length) of the best ``limit`` matches, best first.

        Equal scores are ordered by doc_id here already, so the cut at ``limit`` keeps the
        same documents a full ranking would put first.
        """
        sql = _TOP_ALLOWED if restricted else _TOP_ALL
        rows = self._conn.execute(sql, (match, *weights, -1 if limit is None else limit))
        return rows.fetchall()

    def matching(self, match: str, restricted: bool) -> list[int]:
        """Rowids of every document matching ``match``."""
        sql = _MATCHING_ALLOWED if restricted else _MATCHING_ALL
        joined = self._conn.execute(sql, (match,)).fetchone()[0]
        return list(map(int, joined.split(","))) if joined else []

    def describe(self, rowids: Iterable[int]) -> list[StoredDoc]:
        """doc_id and length of each of ``rowids`` that exists."""
        payload = json.dumps(list(rowids))
        return [StoredDoc(*row) for row in self._conn.execute(_DESCRIBE, (payload,))]

    def restrict(self, doc_ids: Sequence[str]) -> list[int]:
        """Fill ``temp.allowed`` with the rowids of ``doc_ids``; return them."""
        conn = self._conn
        conn.execute("DELETE FROM temp.allowed")
        conn.execute(
            "INSERT OR IGNORE INTO temp.allowed (rowid) SELECT d.rowid FROM json_each(?) AS j"
            " JOIN docs AS d ON d.doc_id = j.value",
            (json.dumps(list(doc_ids)),),
        )
        return [row[0] for row in conn.execute("SELECT rowid FROM temp.allowed")]

    def bytes_on_disk(self) -> int:
        """Size of the database file and its WAL (0 in memory)."""
        if self.path is None:
            return 0
        size = 0
        for suffix in ("", "-wal"):
            with contextlib.suppress(FileNotFoundError):
                size += Path(f"{self.path}{suffix}").stat().st_size
        return size

    # -- writing ---------------------------------------------------------------------------

    def apply(self, upserts: Sequence[NewDocument], deletes: Sequence[str]) -> list[Change]:
        """Delete, then insert or replace, in one transaction; return what changed.

        New documents are inserted with ``executemany`` (rowids assigned here, as SQLite
        would: after the largest one); a replaced document is updated in place.
        """
        conn = self._conn
        changes: list[Change] = []
        conn.execute("BEGIN IMMEDIATE")
        try:
            documents, tokens = self.totals()
            for doc_id in deletes:
                removed = self._delete(doc_id)
                if removed is not None:
                    change, length = removed
                    documents, tokens = documents - 1, tokens - length
                    changes.append(change)
            stored = self._stored(doc.doc_id for doc in upserts)
            inserts = _Inserts(conn)
            for doc in upserts:
                lengths = (token_count(doc.title), token_count(doc.body))
                found = stored.get(doc.doc_id)
                if found is None:
                    rowid = inserts.add(doc, lengths)
                    stored[doc.doc_id] = (rowid, sum(lengths))
                    changes.append(Change(rowid, None, (doc.title, doc.body)))
                    documents += 1
                    length = 0
                else:
                    inserts.flush()  # the same doc_id twice in one batch
                    rowid, length = found
                    changes.append(self._update(rowid, doc, lengths))
                    stored[doc.doc_id] = (rowid, sum(lengths))
                tokens += sum(lengths) - length
            inserts.flush()
            conn.execute("UPDATE meta SET value = ? WHERE key = 'documents'", (str(documents),))
            conn.execute("UPDATE meta SET value = ? WHERE key = 'tokens'", (str(tokens),))
            conn.execute(
                "UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'"
            )
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return changes

    def _stored(self, doc_ids: Iterable[str]) -> dict[str, tuple[int, int]]:
        """doc_id -> (rowid, tokens) of each of ``doc_ids`` already stored (one query)."""
        rows = self._conn.execute(
            "SELECT d.doc_id, d.rowid, d.len_title + d.len_body FROM json_each(?) AS j"
            " JOIN docs AS d ON d.doc_id = j.value",
            (json.dumps(list(doc_ids)),),
        )
        return {doc_id: (rowid, int(length)) for doc_id, rowid, length in rows}

    def _delete(self, doc_id: str) -> tuple[Change, int] | None:
        """Remove ``doc_id`` (inside apply's transaction): its change and the tokens it
        held; None if it is not stored."""
        conn = self._conn
        row = conn.execute(
            "SELECT rowid, len_title + len_body FROM docs WHERE doc_id = ?", (doc_id,)
        ).fetchone()
        if row is None:
            return None
        rowid, length = row
        old = self._stored_tokens(rowid)
        conn.execute("DELETE FROM fts WHERE rowid = ?", (rowid,))
        conn.execute("DELETE FROM docs WHERE rowid = ?", (rowid,))
        return Change(rowid, old, None), int(length)

    def _update(self, rowid: int, doc: NewDocument, lengths: tuple[int, int]) -> Change:
        """Replace the stored ``rowid`` with ``doc`` (inside apply's transaction)."""
        conn = self._conn
        old = self._stored_tokens(rowid)
        conn.execute(
            "UPDATE docs SET path = ?, scope = ?, version = ?, len_title = ?,"
            " len_body = ? WHERE rowid = ?",
            (doc.path, doc.scope, doc.version, *lengths, rowid),
        )
        conn.execute(
            "UPDATE fts SET title = ?, body = ? WHERE rowid = ?", (doc.title, doc.body, rowid)
        )
        return Change(rowid, old, (doc.title, doc.body))

    def _stored_tokens(self, rowid: int) -> tuple[str, str]:
        row = self._conn.execute("SELECT title, body FROM fts WHERE rowid = ?", (rowid,)).fetchone()
        if row is None:
            return "", ""
        return str(row[0] or ""), str(row[1] or "")

    def optimize(self) -> None:
        """Merge FTS5 segments into one and fold the WAL back."""
        self._conn.execute("INSERT INTO fts (fts) VALUES ('optimize')")
        self.checkpoint()

    def checkpoint(self) -> None:
        """Fold the WAL back into the file and empty it (after a large apply)."""
        self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


class _Inserts:
    """New documents collected inside apply's transaction, written by ``executemany``."""

    __slots__ = ("_conn", "_docs", "_fts", "_next")

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._docs: list[tuple[int, str, str, str | None, str, int, int]] = []
        self._fts: list[tuple[int, str, str]] = []
        self._next = int(conn.execute("SELECT coalesce(max(rowid), 0) FROM docs").fetchone()[0])

    def add(self, doc: NewDocument, lengths: tuple[int, int]) -> int:
        """Queue ``doc``; its rowid (one past the largest stored or queued)."""
        self._next += 1
        self._docs.append((self._next, doc.doc_id, doc.path, doc.scope, doc.version, *lengths))
        self._fts.append((self._next, doc.title, doc.body))
        return self._next

    def flush(self) -> None:
        """Write the queued documents (a no-op when none are queued)."""
        if not self._docs:
            return
        self._conn.executemany(
            "INSERT INTO docs (rowid, doc_id, path, scope, version, len_title, len_body)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            self._docs,
        )
        self._conn.executemany("INSERT INTO fts (rowid, title, body) VALUES (?, ?, ?)", self._fts)
        self._docs.clear()
        self._fts.clear()
