"""The SQL of the ``postgres`` lexical index: apply one batch, rank one query.

Every function takes a psycopg connection in autocommit mode and does its work in one
statement (a read: one consistent snapshot) or one transaction (an apply). Documents are
tokenized by the caller (:class:`Tokenized`); this module only moves rows.

Ranking (:data:`_SEARCH`) is BM25 over the stored statistics, the formula of SQLite FTS5's
``bm25()`` that the ``fts`` provider uses, so both rank alike:

    score(d, q) = sum over distinct query terms t held by d of
        idf(t) * f(t, d) * (k1 + 1) / (f(t, d) + k1 * (1 - b + b * |d| / avgdl))

    idf(t)  = ln((N - df(t) + 0.5) / (df(t) + 0.5)), or 1e-6 when that is not positive
    f(t, d) = w_title * tf_title(t, d) + w_body * tf_body(t, d)
    |d|     = tokens in the title field plus tokens in the body
    avgdl   = total tokens / N,   N = documents in the partition,   k1 = 1.2, b = 0.75

``df``, ``N`` and the token total are read in the same statement as the postings, so a
query never mixes two states of the partition. A restricted search keeps the statistics
of the whole partition (as FTS5 does).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import psycopg

from taskctx_postgres.lexical_schema import SCHEMA

__all__ = [
    "K1",
    "B",
    "Partition",
    "Tokenized",
    "apply_batch",
    "delete_partition",
    "generation",
    "open_row",
    "search_rows",
    "stats_row",
    "sweep_orphans",
    "versions",
]

K1 = 1.2
B = 0.75

_PARTS = f"{SCHEMA}.lexical_partitions"
_DOCS = f"{SCHEMA}.lexical_docs"
_POSTINGS = f"{SCHEMA}.lexical_postings"


@dataclass(frozen=True)
class Tokenized:
    """One document ready to store: its row and the tokens of its two fields."""

    doc_id: str
    path: str
    scope: str | None
    version: str
    title: Sequence[str]
    body: Sequence[str]


@dataclass(frozen=True)
class Partition:
    """The row of one partition: its number and slug."""

    part: int
    slug: str


def open_row(
    conn: psycopg.Connection[Any], slug: str, key_json: str, owner: int | None
) -> Partition:
    """The partition row of ``slug``, made if missing (safe when several open it at once);
    ``owner``: a private partition's, the advisory lock its process holds."""
    conn.execute(
        f"INSERT INTO {_PARTS} (slug, key, private, owner) VALUES (%s, %s::jsonb, %s, %s)"
        " ON CONFLICT (slug) DO NOTHING",
        (slug, key_json, owner is not None, owner),
    )
    row = conn.execute(f"SELECT part FROM {_PARTS} WHERE slug = %s", (slug,)).fetchone()
    assert row is not None  # made above, and only close() of a private one deletes it
    return Partition(int(row[0]), slug)


def delete_partition(conn: psycopg.Connection[Any], part: int) -> None:
    """Remove a partition with its documents and postings (one transaction)."""
    with conn.transaction():
        conn.execute(f"DELETE FROM {_POSTINGS} WHERE part = %s", (part,))
        conn.execute(f"DELETE FROM {_PARTS} WHERE part = %s", (part,))


def sweep_orphans(conn: psycopg.Connection[Any]) -> int:
    """Remove the private partitions whose process is gone; how many were removed.

    A process holds its ``owner`` advisory lock (session level, on a connection of its
    own) for as long as its private partitions live, and takes it before it makes them;
    a process that crashed released it with its connection. So a private partition whose
    lock can be taken has no owner left, and one whose lock is held is never touched.
    """
    removed = 0
    owners = conn.execute(
        f"SELECT DISTINCT owner FROM {_PARTS} WHERE private AND owner IS NOT NULL"
    ).fetchall()
    for (owner,) in owners:
        taken = conn.execute("SELECT pg_try_advisory_lock(%s)", (owner,)).fetchone()
        if not (taken and taken[0]):
            continue
        try:
            parts = conn.execute(
                f"SELECT part FROM {_PARTS} WHERE private AND owner = %s", (owner,)
            ).fetchall()
            for (part,) in parts:
                delete_partition(conn, int(part))
                removed += 1
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (owner,))
    return removed


def generation(conn: psycopg.Connection[Any], part: int) -> str:
    """``<part>:<applies>``: moves on every apply by anyone; another row, another value."""
    row = conn.execute(f"SELECT generation FROM {_PARTS} WHERE part = %s", (part,)).fetchone()
    return f"{part}:{'gone' if row is None else row[0]}"


def versions(conn: psycopg.Connection[Any], part: int) -> dict[str, str]:
    """doc_id -> content version of every document the partition holds."""
    rows = conn.execute(f"SELECT doc_id, version FROM {_DOCS} WHERE part = %s", (part,))
    return {str(doc_id): str(version) for doc_id, version in rows}


def stats_row(conn: psycopg.Connection[Any], part: int) -> dict[str, Any]:
    """Documents, tokens, distinct terms and applies of the partition (one snapshot)."""
    row = conn.execute(
        f"SELECT p.documents, p.tokens, p.generation, p.applied_at,"
        f" (SELECT count(DISTINCT term) FROM {_POSTINGS} t WHERE t.part = p.part),"
        f" {_SCHEMA_BYTES} FROM {_PARTS} p WHERE p.part = %s",
        (part,),
    ).fetchone()
    if row is None:
        return {"documents": 0, "tokens": 0, "terms": 0, "generation": None, "applied_at": None}
    documents, tokens, applies, applied_at, terms, schema_bytes = row
    return {
        "documents": int(documents),
        "tokens": int(tokens),
        "terms": int(terms),
        "generation": f"{part}:{applies}",
        "applied_at": None if applied_at is None else applied_at.isoformat(),
        "schema_bytes": int(schema_bytes),
    }


_SCHEMA_BYTES = " + ".join(
    f"pg_total_relation_size('{table}')" for table in (_PARTS, _DOCS, _POSTINGS)
)
"""Bytes of the index tables with their indexes: every partition of the database."""


def apply_batch(
    conn: psycopg.Connection[Any], part: int, upserts: Sequence[Tokenized], deletes: Sequence[str]
) -> None:
    """Replace ``upserts`` and remove ``deletes`` in one transaction.

    The transaction first locks the partition row, so appliers of one partition take turns
    (on every machine) and the totals it keeps stay the sums of what the tables hold.
    """
    gone = sorted(set(deletes) | {doc.doc_id for doc in upserts})
    with conn.transaction():
        locked = conn.execute(f"SELECT 1 FROM {_PARTS} WHERE part = %s FOR UPDATE", (part,))
        if locked.fetchone() is None:
            raise LookupError(f"partition {part} was removed")
        removed = conn.execute(
            f"DELETE FROM {_DOCS} WHERE part = %s AND doc_id = ANY(%s)"
            " RETURNING doc, len_title + len_body",
            (part, gone),
        ).fetchall()
        if removed:
            conn.execute(
                f"DELETE FROM {_POSTINGS} WHERE doc = ANY(%s)", ([int(r[0]) for r in removed],)
            )
        added = _insert(conn, part, upserts)
        conn.execute(
            f"UPDATE {_PARTS} SET documents = documents + %s, tokens = tokens + %s,"
            " generation = generation + 1, applied_at = now() WHERE part = %s",
            (len(upserts) - len(removed), added - sum(int(r[1]) for r in removed), part),
        )


def _insert(conn: psycopg.Connection[Any], part: int, upserts: Sequence[Tokenized]) -> int:
    """COPY the documents and their postings; the number of tokens they hold."""
    if not upserts:
        return 0
    numbers = conn.execute(
        f"SELECT nextval(pg_get_serial_sequence('{_DOCS}', 'doc')) FROM generate_series(1, %s)",
        (len(upserts),),
    ).fetchall()
    total = 0
    lines: list[str] = []
    columns = "(doc, part, doc_id, path, scope, version, len_title, len_body)"
    with conn.cursor().copy(f"COPY {_DOCS} {columns} FROM STDIN") as copy:
        for (number,), doc in zip(numbers, upserts, strict=True):
            length = len(doc.title) + len(doc.body)
            total += length
            row = (number, part, doc.doc_id, doc.path, doc.scope, doc.version)
            copy.write_row((*row, len(doc.title), len(doc.body)))
            lines.extend(_postings(part, int(number), doc, length))
    if lines:
        # tokens are letters and digits only (taskctx_fts.tokenize): no tab, newline or
        # backslash, so the rows are valid COPY text as they are
        with conn.cursor().copy(f"COPY {_POSTINGS} FROM STDIN") as copy:
            copy.write("".join(lines))
    return total


def _postings(part: int, number: int, doc: Tokenized, length: int) -> list[str]:
    """COPY text lines (part, term, doc, tf_title, tf_body, length) of one document."""
    title = Counter(doc.title)
    body = Counter(doc.body)
    tail = f"\t{length}\n"
    head = f"{part}\t"
    return [
        f"{head}{term}\t{number}\t{title.get(term, 0)}\t{body.get(term, 0)}{tail}"
        for term in title.keys() | body.keys()
    ]


_SEARCH = f"""
WITH stats AS (
    SELECT documents::float8 AS n,
           CASE WHEN documents > 0 AND tokens > 0
                THEN tokens::float8 / documents ELSE 1.0 END AS avgdl
    FROM {_PARTS} WHERE part = %(part)s
), hits AS MATERIALIZED (
    SELECT p.term, p.doc, p.length,
           (%(w_title)s * p.tf_title + %(w_body)s * p.tf_body)::float8 AS freq
    FROM {_POSTINGS} p
    WHERE p.part = %(part)s AND p.term = ANY(%(terms)s)
), weights AS (
    SELECT t.term,
           CASE WHEN ln((s.n - t.df + 0.5) / (t.df + 0.5)) > 0
                THEN ln((s.n - t.df + 0.5) / (t.df + 0.5)) ELSE 1e-6 END AS idf
    FROM (SELECT term, count(*)::float8 AS df FROM hits GROUP BY term) t CROSS JOIN stats s
), scored AS MATERIALIZED (
    SELECT h.doc,
           sum(w.idf * (h.freq * (%(k1)s + 1.0))
               / (h.freq + %(k1)s * (1.0 - %(b)s + %(b)s * h.length / s.avgdl))) AS score
    FROM hits h JOIN weights w ON w.term = h.term CROSS JOIN stats s
    {{restrict}}
    GROUP BY h.doc
), best AS (
    SELECT doc, score FROM scored ORDER BY score DESC {{top}}
)
SELECT d.doc_id, b.score, (SELECT count(*) FROM scored) AS considered
FROM best b JOIN {_DOCS} d ON d.doc = b.doc
ORDER BY b.score DESC, d.doc_id
LIMIT %(limit)s
"""
# The postings are read once (``hits``): the document frequencies come from the same rows
# that are scored. The sum takes no ORDER BY (a sort per document cost a third of the
# query): every document's terms reach it in the one order the plan reads them, so two
# documents with equal contributions get equal sums. Only the best ``limit`` scores (with
# every document tied with the last) are joined to their doc ids, which break the ties. A
# restricted search filters after the frequencies, so they stay those of the whole
# partition.
_TOP = "FETCH FIRST %(limit)s ROWS WITH TIES"
_ALLOWED = (
    f"WHERE h.doc IN (SELECT doc FROM {_DOCS} WHERE part = %(part)s AND doc_id = ANY(%(allowed)s))"
)
_QUERIES = {
    (restricted, limited): _SEARCH.format(
        restrict=_ALLOWED if restricted else "", top=_TOP if limited else ""
    )
    for restricted in (False, True)
    for limited in (False, True)
}


def search_rows(
    conn: psycopg.Connection[Any],
    part: int,
    terms: Sequence[str],
    weights: tuple[float, float],
    allowed: Sequence[str] | None,
    limit: int | None,
) -> tuple[list[tuple[str, float]], int]:
    """The best ``limit`` (doc_id, score) of documents holding any of ``terms`` (within
    ``allowed``), best first and equal scores by doc id; and how many matched."""
    parameters: dict[str, Any] = {
        "part": part,
        "terms": list(terms),
        "k1": K1,
        "b": B,
        "w_title": weights[0],
        "w_body": weights[1],
        "limit": 1 if limit == 0 else limit,  # LIMIT 0 would hide the count
        "allowed": None if allowed is None else list(allowed),
    }
    query = _QUERIES[(allowed is not None, parameters["limit"] is not None)]
    rows = conn.execute(query, parameters).fetchall()
    considered = int(rows[0][2]) if rows else 0
    ranked = [(str(doc_id), float(score)) for doc_id, score, _ in rows]
    return (ranked[:0] if limit == 0 else ranked), considered
