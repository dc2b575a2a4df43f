"""The on-disk format of a partition: tables, pragmas and the format stamp.

``docs`` holds one row per document (its rowid is the FTS5 rowid), ``fts`` the
space-joined tokens of the title field (title plus path) and of the body (the whole
text), ``meta`` the format stamp and the running totals BM25 needs. The FTS5 table
stores our tokens verbatim: every token is one ``unicode61`` token, so FTS5 counts
exactly what the Python side counts.
"""

from __future__ import annotations

import sqlite3
import uuid

from taskctx_fts.tokenize import TOKENIZER_VERSION

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "HASHSIZE",
    "PRAGMAS",
    "SCHEMA",
    "TEMP_SCHEMA",
    "create",
    "format_matches",
]

FORMAT_VERSION = "1"
"""Bump when the tables change; a partition of another format is rebuilt empty."""

FORMAT = f"fts-{FORMAT_VERSION}/tokenizer-{TOKENIZER_VERSION}"

HASHSIZE = 16 * 1024 * 1024
"""FTS5's ``hashsize``: pending index data held in memory before a segment is written
(FTS5's default is 1 MiB). A large build then writes a few large segments instead of
many small ones, so inserting and the ``optimize`` that merges them cost less. Set once
per file (FTS5 keeps it in ``fts_config``); the tokens and results do not change."""

PRAGMAS = (
    "PRAGMA busy_timeout = 10000",
    "PRAGMA journal_mode = WAL",
    "PRAGMA synchronous = NORMAL",
    "PRAGMA temp_store = MEMORY",
    "PRAGMA cache_size = -32000",
)

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS docs (
    rowid INTEGER PRIMARY KEY,
    doc_id TEXT NOT NULL UNIQUE,
    path TEXT NOT NULL,
    scope TEXT,
    version TEXT NOT NULL,
    len_title INTEGER NOT NULL,
    len_body INTEGER NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(
    title, body, tokenize = 'unicode61 remove_diacritics 0'
);
"""

TEMP_SCHEMA = """
CREATE VIRTUAL TABLE IF NOT EXISTS temp.fts_terms USING fts5vocab(main, 'fts', 'row');
CREATE VIRTUAL TABLE IF NOT EXISTS temp.fts_instances USING fts5vocab(main, 'fts', 'instance');
CREATE TABLE IF NOT EXISTS temp.allowed (rowid INTEGER PRIMARY KEY);
"""


def create(conn: sqlite3.Connection) -> None:
    """Create the tables of an empty partition and stamp its format."""
    conn.executescript(SCHEMA)
    with conn:
        conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('format', ?)", (FORMAT,))
        conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('documents', '0')")
        # which file this is, and how many applies it has seen: the partition generation
        conn.execute(
            "INSERT OR IGNORE INTO meta (key, value) VALUES ('instance', ?)",
            (uuid.uuid4().hex,),
        )
        conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('generation', '0')")
        conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('tokens', '0')")
        hashsize = conn.execute("SELECT v FROM fts_config WHERE k = 'hashsize'").fetchone()
        if hashsize is None or hashsize[0] != HASHSIZE:
            conn.execute("INSERT INTO fts (fts, rank) VALUES ('hashsize', ?)", (HASHSIZE,))


def format_matches(conn: sqlite3.Connection) -> bool | None:
    """True if the stamp is ours, False if another format, None if the file has no tables."""
    has_meta = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
    ).fetchone()
    if has_meta is None:
        return None
    row = conn.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
    return row is not None and row[0] == FORMAT
