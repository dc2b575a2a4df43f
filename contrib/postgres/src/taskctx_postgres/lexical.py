"""``PostgresLexicalProvider``: a lexical IndexProvider whose partitions live in PostgreSQL.

What it is
    The ``fts`` provider's index, kept in a shared database instead of a local SQLite
    file. Documents and queries go through ``taskctx_fts.tokenize`` (the same NFKC and
    case folding, English stop words, Snowball stems, CJK bigrams plus single CJK
    characters in documents), so both providers see the same tokens. The tokens are
    stored as an inverted index in plain tables (:mod:`taskctx_postgres.lexical_schema`):
    not ``tsvector``/GIN, whose ranking functions (``ts_rank``, ``ts_rank_cd``) are not
    BM25 and whose parser would tokenize CJK and stems differently from ``fts``.

Ranking
    BM25 from the stored term statistics: document frequency, document length and the
    average length, with k1 = 1.2, b = 0.75, term frequency weighted 2.0 in the title
    field (title plus path) and 1.0 in the body, IDF clamped at 1e-6; exactly the formula
    of FTS5's ``bm25()`` that ``fts`` ranks by (:mod:`taskctx_postgres.lexical_store` has
    it written out). It is computed in one SQL statement over the postings of the
    query's distinct terms. Equal scores are ordered by doc id; ``considered`` is the
    exact number of documents holding any query term (within ``doc_ids``). A query
    without a searchable token is reported so (``searchable=False``), never as zero
    matches; user text is never SQL or query syntax (tokens are bound parameters).

Configuration
    The database URL is ``PostgresLexicalProvider(url=...)``, else the environment
    variable ``TASKCTX_PG_INDEX_URL`` read when a partition is first opened. Registering
    the provider connects to nothing; opening a partition without a URL raises
    :class:`PostgresIndexNotConfiguredError` naming the variable, and a server that cannot
    be reached :class:`PostgresIndexUnavailableError` naming host:port (never the
    password).

Sharing
    A partition is keyed by ``PartitionKey.slug()``, a digest of the whole key (binding,
    source identity, profile, provider version), and ``directory`` is not used: every
    TaskContext, on any machine, that opens the same key in the same database holds the
    same documents, so a second one re-indexes nothing. ``generation()`` is
    ``<partition>:<applies>`` and moves whenever anyone applies, so the kernel re-diffs
    before trusting what it saw. Each ``apply`` is one transaction that first locks the
    partition row: concurrent appliers take turns and each call is whole on its own.
    ``open_partition(key, None)`` (the kernel's "in memory": a source without a stable
    identity) makes a private partition under a fresh random slug, removed by ``close()``;
    one whose process died without closing it is removed by the next provider that opens
    the database (the process held an advisory lock while it lived: ``sweep_orphans``).
"""

from __future__ import annotations

import os
import secrets
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import psycopg
from psycopg_pool import PoolTimeout
from taskctx_fts.gate import query_tokens
from taskctx_fts.tokenize import TOKENIZER_VERSION, document_text

from taskctx.errors import TaskCtxError
from taskctx.protocols import IndexDocument, PartitionKey, SearchHit, SearchResult
from taskctx_postgres import lexical_store as store
from taskctx_postgres.lexical_schema import FORMAT_VERSION, SCHEMA, ensure_schema
from taskctx_postgres.pool import open_pool
from taskctx_postgres.url import Target, parse_target

__all__ = [
    "PROVIDER_VERSION",
    "URL_ENV",
    "PostgresIndexError",
    "PostgresIndexNotConfiguredError",
    "PostgresIndexUnavailableError",
    "PostgresLexicalPartition",
    "PostgresLexicalProvider",
]

URL_ENV = "TASKCTX_PG_INDEX_URL"
"""The variable naming the index database when the provider is given no URL."""
PROVIDER_VERSION = f"pg-lexical-{FORMAT_VERSION}/tokenizer-{TOKENIZER_VERSION}"
"""Part of the partition key: changes with the tables or the tokenizer."""
POOL_SIZE = 4
"""Connections one provider keeps open to one database at most."""
VACUUM_AFTER = 1000
"""An apply of at least this many documents vacuums the tables: the planner's statistics
are refreshed and the new pages marked all-visible, so searches read only the index."""

_NOTHING = SearchResult.no_matches()


class PostgresIndexError(TaskCtxError):
    """The PostgreSQL index failed; the message names the database, never the password."""


class PostgresIndexNotConfiguredError(PostgresIndexError):
    """The ``postgres`` provider was chosen but no database URL is configured."""


class PostgresIndexUnavailableError(PostgresIndexError):
    """The index database cannot be reached (or the connection was lost)."""


def _first_line(message: str) -> str:
    lines = [line for line in message.strip().splitlines() if line.strip()]
    return lines[0] if lines else "no message"


class _Database:
    """One index database: its target, its schema checked once, a connection pool, and
    the advisory lock that keeps this process's private partitions from being swept."""

    def __init__(self, url: str, pool_size: int) -> None:
        self._url = url
        self._owner: tuple[psycopg.Connection[Any], int] | None = None
        self._owner_lock = threading.Lock()
        try:
            self.target: Target = parse_target(url)
        except ValueError as exc:
            raise PostgresIndexError(
                f"postgres index: its database URL (url= or {URL_ENV}) is not usable: {exc}"
            ) from None
        self.location = self.target.redacted
        try:  # one direct connection first: a refused port fails at once, with its reason
            with psycopg.connect(
                url, autocommit=True, connect_timeout=self.target.connect_timeout
            ) as conn:
                ensure_schema(conn)
                store.sweep_orphans(conn)
        except psycopg.OperationalError as exc:
            raise self.unavailable(exc, "cannot connect") from None
        except (psycopg.Error, ValueError) as exc:
            raise self.failed(exc) from None
        try:
            self.pool = open_pool(self.target, pool_size, f"taskctx-index {self.location}")
        except PoolTimeout as exc:
            raise self.unavailable(exc, "could not open its connection pool") from None

    @contextmanager
    def connection(self, what: str) -> Iterator[psycopg.Connection[Any]]:
        """A pooled autocommit connection; psycopg errors become PostgresIndexError."""
        try:
            with self.pool.connection() as conn:
                yield conn
        except psycopg.OperationalError as exc:
            raise self.unavailable(exc, f"lost its connection ({what})") from exc
        except PoolTimeout as exc:
            raise self.unavailable(exc, f"has no free connection ({what})") from exc
        except psycopg.Error as exc:
            raise self.failed(exc) from exc

    def unavailable(self, exc: BaseException, what: str) -> PostgresIndexUnavailableError:
        """The error of a server that cannot be reached: host:port, database, reason."""
        reason = self.target.scrub(_first_line(str(exc)))
        return PostgresIndexUnavailableError(
            f"postgres index {self.location}: PostgreSQL at {self.target.host}:"
            f"{self.target.port} (database {self.target.dbname!r}) {what}: {reason}"
        )

    def failed(self, exc: BaseException) -> PostgresIndexError:
        """The error of a statement the server refused."""
        reason = self.target.scrub(_first_line(str(exc)))
        return PostgresIndexError(f"postgres index {self.location}: {reason}")

    def owner(self) -> int:
        """The advisory lock this process holds while its private partitions live: taken
        on a connection of its own the first time one is made (see ``sweep_orphans``)."""
        with self._owner_lock:
            if self._owner is None or self._owner[0].closed:
                key = secrets.randbits(63)
                try:
                    conn = psycopg.connect(
                        self._url, autocommit=True, connect_timeout=self.target.connect_timeout
                    )
                    conn.execute("SELECT pg_advisory_lock(%s)", (key,))
                except psycopg.OperationalError as exc:
                    raise self.unavailable(exc, "cannot connect (private partition)") from None
                self._owner = (conn, key)
            return self._owner[1]

    def close(self) -> None:
        """Close the pool's connections and release the owner lock."""
        self.pool.close()
        with self._owner_lock:
            owner, self._owner = self._owner, None
        if owner is not None:
            owner[0].close()


def _tokenized(doc: IndexDocument) -> store.Tokenized:
    """The rows of one document: title field (title and path) and body tokens."""
    return store.Tokenized(
        doc.doc_id,
        doc.path,
        doc.scope,
        doc.content_version,
        document_text(f"{doc.title or ''} {doc.path}").split(),
        document_text(doc.text or "").split(),
    )


class PostgresLexicalPartition:
    """One partition in the index database (see the module docstring)."""

    __slots__ = ("_database", "_lock", "_row", "key", "last_apply_seconds", "private", "weights")

    def __init__(
        self,
        database: _Database,
        key: PartitionKey,
        *,
        private: bool,
        weights: tuple[float, float],
    ) -> None:
        self._database = database
        self.key = key
        self.private = private
        self.weights = weights
        self.last_apply_seconds: float | None = None
        self._lock = threading.Lock()
        slug = key.slug() + (f"-private-{uuid.uuid4().hex}" if private else "")
        owner = database.owner() if private else None
        with database.connection("opening a partition") as conn:
            self._row: store.Partition | None = store.open_row(
                conn, slug, key.model_dump_json(), owner
            )

    @property
    def slug(self) -> str:
        """The partition's name in ``lexical_partitions`` (the key's digest)."""
        return self._open().slug

    def _open(self) -> store.Partition:
        if self._row is None:
            raise PostgresIndexError(
                f"postgres index partition of {self.key.binding_id!r} is closed"
            )
        return self._row

    # -- the IndexPartition protocol -------------------------------------------------------

    def generation(self) -> str:
        """Moves whenever any process applies to this partition."""
        row = self._open()
        with self._database.connection("reading the generation") as conn:
            return store.generation(conn, row.part)

    def indexed_versions(self) -> Mapping[str, str]:
        """doc_id -> content version of every document the partition holds."""
        row = self._open()
        with self._database.connection("reading versions") as conn:
            return store.versions(conn, row.part)

    def apply(self, upserts: Sequence[IndexDocument], deletes: Sequence[str]) -> None:
        """Insert or replace ``upserts`` and remove ``deletes``, in one transaction."""
        started = time.perf_counter()
        row = self._open()
        latest = {doc.doc_id: doc for doc in upserts}  # a doc id given twice: the last wins
        documents = [_tokenized(doc) for doc in latest.values()]
        with self._lock, self._database.connection("applying") as conn:
            try:
                store.apply_batch(conn, row.part, documents, deletes)
            except LookupError as exc:
                raise PostgresIndexError(
                    f"postgres index {self._database.location}: {exc} by another process"
                ) from None
            if len(documents) + len(deletes) >= VACUUM_AFTER:
                conn.execute(f"VACUUM (ANALYZE) {SCHEMA}.lexical_postings, {SCHEMA}.lexical_docs")
        self.last_apply_seconds = time.perf_counter() - started

    def search(self, query: str, doc_ids: Sequence[str] | None, limit: int | None) -> SearchResult:
        """Rank documents for ``query`` (within ``doc_ids``); the best ``limit``, or all."""
        tokens = query_tokens(query, doc_ids)
        if isinstance(tokens, SearchResult):
            return tokens
        row = self._open()
        terms = list(dict.fromkeys(tokens))
        with self._database.connection("searching") as conn:
            ranked, considered = store.search_rows(
                conn,
                row.part,
                terms,
                self.weights,
                None if doc_ids is None else list(dict.fromkeys(doc_ids)),
                None if limit is None else max(0, limit),
            )
        hits = tuple(SearchHit(doc_id=doc_id, score=score) for doc_id, score in ranked)
        return SearchResult(hits=hits, considered=considered)

    def stats(self) -> Mapping[str, Any]:
        """Documents, tokens, distinct terms, generation, the database, the last apply, and
        ``schema_bytes``: the size of the index tables, which every partition shares."""
        row = self._open()
        with self._database.connection("reading stats") as conn:
            facts = store.stats_row(conn, row.part)
        return {
            **facts,
            "last_apply_seconds": self.last_apply_seconds,
            "database": self._database.location,
            "partition": row.slug,
            "shared": not self.private,
        }

    def close(self) -> None:
        """Forget the partition (a private one is removed from the database)."""
        row, self._row = self._row, None
        if row is not None and self.private:
            with self._database.connection("removing a private partition") as conn:
                store.delete_partition(conn, row.part)


class PostgresLexicalProvider:
    """The ``postgres`` lexical provider: BM25 over an inverted index in PostgreSQL."""

    name = "postgres"
    kind: Literal["lexical"] = "lexical"
    needs_text = True
    version = PROVIDER_VERSION

    def __init__(
        self,
        url: str | None = None,
        *,
        title_weight: float = 2.0,
        body_weight: float = 1.0,
        pool_size: int = POOL_SIZE,
    ) -> None:
        """Use the database ``url``, else ``$TASKCTX_PG_INDEX_URL`` at first open."""
        self.url = url
        self.weights = (float(title_weight), float(body_weight))
        self.pool_size = pool_size
        self._databases: dict[str, _Database] = {}
        self._lock = threading.Lock()

    def _database(self) -> _Database:
        url = self.url or os.environ.get(URL_ENV, "").strip()
        if not url:
            raise PostgresIndexNotConfiguredError(
                f"the 'postgres' index provider has no database: set {URL_ENV} to a "
                "postgresql://user@host:port/dbname URL (the password in PGPASSWORD or "
                "~/.pgpass), or pass PostgresLexicalProvider(url=...)"
            )
        with self._lock:
            database = self._databases.get(url)
            if database is None:
                database = self._databases[url] = _Database(url, self.pool_size)
            return database

    def open_partition(self, key: PartitionKey, directory: Path | None) -> PostgresLexicalPartition:
        """Open (or create) the shared partition of ``key``; ``directory`` None: a private
        one, removed on close."""
        return PostgresLexicalPartition(
            self._database(), key, private=directory is None, weights=self.weights
        )

    def close(self) -> None:
        """Close the connection pools (partitions opened before must not be used again)."""
        with self._lock:
            databases, self._databases = list(self._databases.values()), {}
        for database in databases:
            database.close()
