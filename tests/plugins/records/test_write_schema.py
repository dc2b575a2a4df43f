"""Schema version 3 (issue 17, put path): fewer B-trees per write, the same rows and reads.

Proves the migration converts a version-2 database in place (every row kept, every read
the same), that a new file gets the new page size and an old one keeps its own, that no
store query scans where it searched an index before, and the put path's caches.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from taskctx_records import RecordStore
from taskctx_records.bulkread import records_at
from taskctx_records.events import append as append_event
from taskctx_records.query import QuerySpec, count_matching, fetch_page, scope_revision
from taskctx_records.schema import (
    MIGRATIONS,
    NEW_PAGE_SIZE,
    SCHEMA_VERSION,
    StoreConnection,
    open_database,
)
from taskctx_records.writes import PutItem, allocate, utc_now, write_versions

from taskctx.errors import NotFoundError

SCOPE_A = {"task_id": "a"}
SCOPE_AB = {"task_id": "a", "team": "x"}
SPECS = [
    QuerySpec(),
    QuerySpec(collection="obs"),
    QuerySpec(collection="obs", kind="k1"),
    QuerySpec(scope=(("task_id", '"a"'),)),
    QuerySpec(scope=(("task_id", '"a"'), ("team", '"x"')), collection="obs"),
    QuerySpec(collections=("obs", "notes")),
    QuerySpec(collection="obs", order="desc"),
]


def _db_path(root: Path) -> Path:
    return root / ".taskctx" / "records" / "records.db"


def _items() -> list[PutItem]:
    """New records, a second version that leaves its scope, a rename-free update and a
    delete: every kind of row a write makes (departure rows included)."""
    items = [
        PutItem(
            {"n": i},
            "obs" if i % 3 else "notes",
            kind=f"k{i % 2}",
            scope=SCOPE_AB if i % 4 == 0 else SCOPE_A,
            meta={"m": i},
        )
        for i in range(12)
    ]
    items.append(PutItem("named", "obs", scope=SCOPE_A, record_id="named-1"))
    items.append(PutItem("named v2", "obs", scope={"task_id": "b"}, record_id="named-1"))
    items.append(PutItem(b"\x00bytes", "obs", scope=SCOPE_A, record_id="named-2"))
    items.append(PutItem(None, "", record_id="rec_0000000000000002", delete=True))
    return items


def _v2_store(root: Path) -> StoreConnection:
    """A database made by schema version 2 (before issue 17's put work), filled through
    the write functions the store uses, one transaction per item, in 4096-byte pages
    (SQLite's default, which that version kept)."""
    path = _db_path(root)
    path.parent.mkdir(parents=True)
    made = sqlite3.connect(path)
    made.execute("PRAGMA page_size = 4096")
    made.execute("PRAGMA journal_mode = WAL")  # writes the header: the size is fixed now
    made.close()
    conn = open_database(path, read_only=False, upto=2).conn
    assert isinstance(conn, StoreConnection)
    for item in _items():
        conn.execute("BEGIN IMMEDIATE")
        write_versions(conn, [item], utc_now())
        conn.execute("COMMIT")
    conn.execute("BEGIN IMMEDIATE")
    append_event(conn, revision_of=lambda: allocate(conn, 1), now=utc_now(), stream="s",
                 type="t", payload={"p": 1}, actor=None, task_id="a", idempotency_key=None,
                 expected_sequence=None)  # fmt: skip
    conn.execute("COMMIT")
    return conn


COLUMNS = {
    "records": "id, version, revision, valid_to, collection, kind, scope, source, meta, "
    "content_type, content, sha256, size, deleted, created_at",
    "record_scope": "id, version, revision, key, value, current",
    "events": "*",
}


def _rows(conn: sqlite3.Connection, table: str, order: str) -> list[tuple[Any, ...]]:
    sql = f"SELECT {COLUMNS[table]} FROM {table} ORDER BY {order}"
    return [tuple(row) for row in conn.execute(sql)]


def _reads(conn: StoreConnection) -> dict[str, Any]:
    """Every read of the query module, at every revision: the answers a migration keeps."""
    (top,) = conn.execute("SELECT max(revision) FROM records").fetchone()
    ids = [row[0] for row in conn.execute("SELECT DISTINCT id FROM records ORDER BY id")]
    answers: dict[str, Any] = {}
    for revision in range(int(top) + 1):
        for number, spec in enumerate(SPECS):
            rows = fetch_page(conn, spec, revision, None, 100)
            answers[f"page {number} @{revision}"] = [tuple(row) for row in rows]
            answers[f"count {number} @{revision}"] = count_matching(conn, spec, revision)
        found = records_at(conn, [(rid, revision) for rid in ids])
        answers[f"get @{revision}"] = [
            str(item) if isinstance(item, NotFoundError) else item.model_dump() for item in found
        ]
    for pairs in ((), (("task_id", '"a"'),), (("task_id", '"b"'),)):
        for collections in (None, ["obs"], ["notes", "obs"]):
            answers[f"scope_revision {pairs} {collections}"] = scope_revision(
                conn, pairs, collections
            )
    return answers


def test_migration_converts_a_version_2_database_in_place(tmp_path: Path) -> None:
    """A version-2 database migrates to the current schema on open: every record, version
    and scope row (departures included) is kept, and every read answers as before."""
    conn = _v2_store(tmp_path)
    before_records = _rows(conn, "records", "revision")
    before_scope = _rows(conn, "record_scope", "id, version, key, current")
    before_events = _rows(conn, "events", "revision")
    before_reads = _reads(conn)
    conn.close()
    assert len(before_scope) > len(before_records) > 10  # the data is really there

    store = RecordStore(tmp_path)
    migrated = store._conn
    assert migrated.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 4
    assert _rows(migrated, "records", "revision") == before_records
    assert _rows(migrated, "record_scope", "id, version, key, current") == before_scope
    assert _rows(migrated, "events", "revision") == before_events
    assert _reads(migrated) == before_reads
    assert migrated.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    # and the migrated store goes on writing: the next revision, a new version of a record
    ref = store.put("v3", collection="obs", scope=SCOPE_A, record_id="named-1")
    assert (ref.version, ref.revision) == (3, len(before_records) + 2)
    assert store.get("named-1").content == "v3"
    store.close()


def test_migration_is_atomic(tmp_path: Path) -> None:
    """A failing step of the migration leaves the version-2 database as it was."""
    conn = _v2_store(tmp_path)
    before = _rows(conn, "records", "revision")
    conn.execute("CREATE TABLE records_v3 (x)")  # the migration's first CREATE now fails
    conn.close()
    with pytest.raises(Exception, match="records_v3"):
        RecordStore(tmp_path)
    plain = sqlite3.connect(_db_path(tmp_path))
    assert plain.execute("PRAGMA user_version").fetchone()[0] == 2
    assert _rows(plain, "records", "revision") == before
    plain.close()


def _btrees(conn: sqlite3.Connection, table: str) -> list[str]:
    """The B-trees a row of ``table`` is stored in: the table (if it has a rowid) and each index."""
    sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
    indexes = [row[1] for row in conn.execute(f"PRAGMA index_list({table})")]
    return ([] if "WITHOUT ROWID" in sql else [table]) + indexes


def test_a_record_is_stored_in_fewer_btrees(tmp_path: Path) -> None:
    """records is keyed by revision (no UNIQUE(revision) index) and record_scope is
    WITHOUT ROWID: a put with scope writes 7 B-trees, not 11 (and no store_state row:
    the revision is read from the rows, schema version 4)."""
    store = RecordStore(tmp_path)
    conn = store._conn
    columns = {row[1]: row[5] for row in conn.execute("PRAGMA table_info(records)")}
    assert columns["revision"] == 1  # the INTEGER PRIMARY KEY, the one key column
    assert sum(columns.values()) == 1
    assert len(_btrees(conn, "records")) == 5
    assert _btrees(conn, "record_scope") == [
        "record_scope_by_revision",
        "sqlite_autoindex_record_scope_1",
    ]
    store.close()


def test_a_new_database_gets_the_new_page_size_an_old_one_keeps_its_own(tmp_path: Path) -> None:
    """A new store file is made with NEW_PAGE_SIZE pages; a migrated one keeps its size."""
    new = RecordStore(tmp_path / "new")
    assert new._conn.execute("PRAGMA page_size").fetchone()[0] == NEW_PAGE_SIZE
    new.close()
    old_root = tmp_path / "old"
    _v2_store(old_root).close()
    conn = sqlite3.connect(_db_path(old_root))
    conn.execute("PRAGMA page_size = 8192")  # a no-op on a file that has its header
    (old_size,) = conn.execute("PRAGMA page_size").fetchone()
    conn.close()
    assert old_size == 4096 != NEW_PAGE_SIZE
    old = RecordStore(old_root)
    assert old._conn.execute("PRAGMA page_size").fetchone()[0] == old_size
    old.close()


def _workload(store: RecordStore) -> None:
    """Every kind of store call, so every query the store runs is issued once at least."""
    refs = [
        store.put(
            {"n": i}, collection="obs", kind=f"k{i % 2}", scope=SCOPE_AB if i % 2 else SCOPE_A
        )
        for i in range(6)
    ]
    store.put_many([{"content": "t", "collection": "notes", "scope": SCOPE_A}] * 3)
    store.put("v2", collection="obs", scope={"task_id": "b"}, record_id=refs[0].id)
    store.delete(refs[1])
    store.get(refs[2])
    store.get(refs[2], at_revision=3)
    store.get_many([(refs[0], 2), (refs[3], None), ("missing", None)])
    store.read_bounded(refs[3], 0, 4)
    for scope in (None, SCOPE_A, SCOPE_AB):
        for collections in (None, ["obs"]):
            store.scope_revision(scope, collections)
            store.iter_visible(scope, collections, store.revision, None, 2)
            store.iter_visible(scope, collections, store.revision, refs[0].id, 2)
    store.touched_ids(2, store.revision)
    for kwargs in (
        {}, {"collection": "obs"}, {"collection": "obs", "kind": "k1"}, {"scope": SCOPE_A},
        {"scope": SCOPE_AB, "collection": "obs"}, {"filters": {"content.n": 2}},
        {"collection": "obs", "order": "desc"},
    ):  # fmt: skip
        page = store.query(page_size=1, **kwargs)
        if page.cursor is not None:
            store.query_continue(page.cursor)
    store.link(refs[2], refs[3], "cites")
    store.links(refs[2])
    store.links(refs[3], "cites", direction="in")
    store.checkpoint("run", {"s": 1})
    store.latest_checkpoint("run")
    store.snapshot("first")
    store.snapshots()
    store.append_event("s", "t", {"p": 1}, task_id="a", actor="me", idempotency_key="k")
    store.append_event("s", "t", {"p": 1}, task_id="a", actor="me", idempotency_key="k")
    for kwargs in ({}, {"stream": "s"}, {"task_id": "a"}, {"type": "t"}, {"actor": "me"}):
        events = store.events(page_size=1, **kwargs)  # type: ignore[arg-type]
        if events.cursor is not None:
            store.events_continue(events.cursor)


def _statements(tmp_path: Path) -> list[str]:
    store = RecordStore(tmp_path / "traced")
    seen: list[str] = []
    store._conn.set_trace_callback(seen.append)
    _workload(store)
    store._conn.set_trace_callback(None)
    store.close()
    skip = ("BEGIN", "COMMIT", "ROLLBACK", "PRAGMA")
    return sorted({sql for sql in seen if not sql.lstrip().upper().startswith(skip)})


def _plan(conn: sqlite3.Connection, sql: str) -> tuple[set[str], set[str], dict[str, int]]:
    """Of ``sql``'s plan: the tables scanned rather than searched, the temporary sort
    B-trees, and per searched table the index terms its searches constrain."""
    details = [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}")]
    scanned = {m.group(1) for d in details if (m := re.match(r"SCAN (\S+)", d))}
    sorts = {d for d in details if d.startswith("USE TEMP B-TREE")}
    terms: dict[str, int] = {}
    for detail in details:
        if m := re.match(r"SEARCH (\S+) .*\((.*)\)$", detail):
            terms[m.group(1)] = terms.get(m.group(1), 0) + len(m.group(2).split(" AND "))
    return scanned, sorts, terms


@pytest.fixture
def v2_connection(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    conn = open_database(_db_path(tmp_path / "v2"), read_only=False, upto=2).conn
    yield conn
    conn.close()


def test_no_store_query_scans_where_it_searched_an_index_before(
    tmp_path: Path, v2_connection: sqlite3.Connection
) -> None:
    """EXPLAIN QUERY PLAN of every statement the store runs, on the current schema and on
    version 2: no table is scanned, no sort is added and no search constrains fewer index
    terms than version 2's did."""
    statements = _statements(tmp_path)
    assert len(statements) > 30  # the workload really reached the store's queries
    assert any("record_scope" in sql for sql in statements)
    current = open_database(_db_path(tmp_path / "now"), read_only=False).conn
    worse = []
    for sql in statements:
        new_scans, new_sorts, new_terms = _plan(current, sql)
        old_scans, old_sorts, old_terms = _plan(v2_connection, sql)
        narrower = [t for t, n in old_terms.items() if t in new_terms and new_terms[t] < n]
        if not new_scans <= old_scans or not new_sorts <= old_sorts or narrower:
            worse.append(
                f"{sql}\n  now {new_scans} {new_sorts} {new_terms}, "
                f"was {old_scans} {old_sorts} {old_terms}"
            )
    current.close()
    assert worse == [], "\n".join(worse)


def test_migrations_are_listed_in_order() -> None:
    """MIGRATIONS holds one step per version (the third re-keys records and scope, the
    fourth drops the revision counter)."""
    assert SCHEMA_VERSION == len(MIGRATIONS) == 4
    assert any("WITHOUT ROWID" in statement for statement in MIGRATIONS[2])
    assert any("DROP COLUMN revision" in statement for statement in MIGRATIONS[3])


WRITE_KINDS = ("record", "link", "event", "checkpoint")
"""The writes that take a store revision."""


def _write(store: RecordStore, kind: str, record_id: str) -> int:
    """One write of ``kind`` (a link relates ``record_id`` to itself); its revision."""
    if kind == "record":
        return store.put("r", collection="c").revision
    if kind == "link":
        return store.link(record_id, record_id, "self").revision
    if kind == "event":
        return store.append_event("s", "t", {}).revision
    return store.checkpoint("run", {"n": 1}).revision


@pytest.mark.parametrize("last", WRITE_KINDS)
def test_the_revision_is_the_largest_of_the_rows_across_a_migration(
    tmp_path: Path, last: str
) -> None:
    """A version-3 store (its counter row at the revision) opens at version 4 with the same
    revision, whichever kind of write was last; the counter is gone, snapshots name that
    revision and every next write, of any kind, takes the next one."""
    path = _db_path(tmp_path)
    store = RecordStore(tmp_path)
    first = store.put("first", collection="c").id
    assert _write(store, last, first) == 2
    store.close()
    conn = sqlite3.connect(path)  # back to version 3, its counter row at the revision
    conn.execute("PRAGMA user_version = 3")
    conn.execute("DROP INDEX checkpoints_by_revision")
    conn.execute("ALTER TABLE store_state ADD COLUMN revision INTEGER NOT NULL DEFAULT 2")
    conn.close()
    store = RecordStore(tmp_path)
    assert store._conn.execute("PRAGMA user_version").fetchone()[0] == 4
    columns = {row[1] for row in store._conn.execute("PRAGMA table_info(store_state)")}
    assert columns == {"id", "store_id"}
    assert store.revision == 2
    assert store.snapshot("after").revision == 2
    assert [_write(store, kind, first) for kind in WRITE_KINDS] == [3, 4, 5, 6]
    assert store.revision == 6
    store.close()


@pytest.mark.parametrize(
    ("scope", "stored"),
    [
        ({"a": True}, '{"a":true}'),
        ({"a": 1}, '{"a":1}'),
        ({"a": 1.0}, '{"a":1.0}'),
        ({"a": None}, '{"a":null}'),
        ({"a": "1"}, '{"a":"1"}'),
        ({"a": [1]}, '{"a":[1]}'),
    ],
)
def test_equal_python_scopes_of_other_json_stay_apart(
    tmp_path: Path, scope: dict[str, Any], stored: str
) -> None:
    """Scopes that are equal in Python but not as JSON (True, 1, 1.0) are stored and found
    each as itself, whichever was written first (the scope cache keys on value types)."""
    store = RecordStore(tmp_path)
    others: list[dict[str, Any]] = [{"a": True}, {"a": 1}, {"a": 1.0}, {"a": None}, {"a": "1"}]
    for other in others:
        store.put("other", collection="c", scope=other)
    ref = store.put("me", collection="c", scope=scope)
    row = store._conn.execute("SELECT scope FROM records WHERE revision = ?", (ref.revision,))
    assert row.fetchone()[0] == stored
    found = store.query(scope=scope).records
    assert [record.scope for record in found if record.content == "me"] == [json.loads(stored)]
    assert all(json.dumps(record.scope) == json.dumps(scope) for record in found)
    store.close()


def test_utc_now_is_the_isoformat_of_now() -> None:
    """utc_now gives datetime.now(timezone.utc).isoformat()'s form, within a second."""
    for _ in range(3):
        stamp = utc_now()
        parsed = datetime.fromisoformat(stamp)
        assert parsed.isoformat() == stamp
        assert parsed.tzinfo == timezone.utc
        assert abs(datetime.now(timezone.utc) - parsed) < timedelta(seconds=1)
