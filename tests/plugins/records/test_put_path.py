"""The one-record put path (issue 17): its statements, stored forms and guarantees."""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
import subprocess
import sys
import textwrap
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from taskctx_records import RecordStore, RecordStoreError
from taskctx_records.schema import WAL_AUTOCHECKPOINT_PAGES, WAL_SIZE_LIMIT_BYTES

from taskctx.errors import NotFoundError


def _canonical(value: Any) -> str:
    """The reference canonical JSON: the formula the store documents."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _statements(store: RecordStore) -> list[str]:
    """Start recording every SQL statement the store's connection runs."""
    seen: list[str] = []
    store._conn.set_trace_callback(seen.append)
    return seen


def _counts(store: RecordStore) -> tuple[int, int, int]:
    """(revision, record rows, scope rows): what a refused write must leave unchanged."""
    with store.backend.read() as conn:
        rows = conn.execute("SELECT COUNT(*) AS n FROM records").fetchone()["n"]
        scopes = conn.execute("SELECT COUNT(*) AS n FROM record_scope").fetchone()["n"]
    return store.revision, int(rows), int(scopes)


@pytest.mark.parametrize(
    ("scope", "expected"),
    [
        ({"task_id": "t"}, ["BEGIN", "SELECT", "INSERT", "INSERT", "COMMIT"]),
        (None, ["BEGIN", "SELECT", "INSERT", "COMMIT"]),
    ],
)
def test_one_put_is_one_transaction_of_a_few_writes(
    tmp_path: Path, scope: dict[str, str] | None, expected: list[str]
) -> None:
    """A new record's put runs BEGIN, one SELECT of the current revision (the largest of
    the rows: no counter row is rewritten), its INSERTs and COMMIT, and no PRAGMA."""
    store = RecordStore(tmp_path)
    seen = _statements(store)
    store.put({"a": 1}, collection="c", scope=scope)
    store._conn.set_trace_callback(None)
    assert [statement.split()[0] for statement in seen] == expected
    assert "max(" in seen[1]


CANONICAL_CASES: list[tuple[Any, Mapping[str, Any] | None, Mapping[str, Any] | None]] = [
    ({"b": 1, "a": [True, None, 1.5]}, {"task_id": "t"}, None),
    ("héllo ✓ 日本", {"z": 1, "a": "é", "m": [1, {"y": 2, "x": 1}]}, {"k": "v", "a": 2}),
    (b"\x00\xffbin", {}, {}),
    ([1, "二", {"é": {"b": 2, "a": 1}}], {"n": None, "f": 0.1, "b": False}, {"deep": {"a": []}}),
    ({"nested": {"z": {"y": {"x": "w"}}}}, {"emoji": "😀"}, {"t": "tab\tnew\nline"}),
]


@pytest.mark.parametrize(("content", "scope", "meta"), CANONICAL_CASES)
def test_stored_forms_are_the_canonical_json(
    store_root: Path | str,
    content: Any,
    scope: Mapping[str, Any] | None,
    meta: Mapping[str, Any] | None,
) -> None:
    """Content, scope, meta, digest and the scope rows are byte for byte the canonical JSON
    formula, whatever the key order, nesting or characters."""
    store = RecordStore(store_root)
    ref = store.put(content, collection="c", scope=scope, meta=meta)
    with store.backend.read() as conn:
        row = conn.execute("SELECT * FROM records WHERE id = ?", (ref.id,)).fetchone()
        pairs = conn.execute(
            "SELECT key, value FROM record_scope WHERE id = ? ORDER BY key", (ref.id,)
        ).fetchall()
    if isinstance(content, bytes):
        canonical = content
    elif isinstance(content, str):
        canonical = content.encode()
    else:
        canonical = _canonical(content).encode()
    stored = row["content"] if isinstance(row["content"], str) else bytes(row["content"])
    stored = stored.encode() if isinstance(stored, str) else stored
    assert stored == canonical
    assert (row["sha256"], row["size"]) == (hashlib.sha256(canonical).hexdigest(), len(canonical))
    assert (ref.sha256, ref.size) == (row["sha256"], row["size"])
    assert row["scope"] == _canonical(dict(scope or {}))
    assert row["meta"] == _canonical(dict(meta or {}))
    assert [(pair["key"], pair["value"]) for pair in pairs] == sorted(
        (key, _canonical(value)) for key, value in (scope or {}).items()
    )
    assert store.query(scope=scope).coverage.considered == 1
    assert store.get(ref.id).content == content


def _deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


REFUSED: list[tuple[str, dict[str, Any], type[Exception], str]] = [
    ("content not JSON", {"content": {1, 2}}, TypeError, "str, bytes or JSON"),
    ("content NaN", {"content": {"x": math.nan}}, TypeError, "JSON-compatible"),
    ("content too deep", {"content": _deep(101)}, TypeError, "record content nests"),
    ("scope value not JSON", {"scope": {"k": object()}}, TypeError, "not JSON serializable"),
    ("scope too deep", {"scope": {"k": _deep(100)}}, TypeError, "record scope nests"),
    ("scope not a mapping", {"scope": ["k"]}, TypeError, "scope must be a JSON object"),
    ("meta not JSON", {"meta": {"k": b"x"}}, TypeError, "not JSON serializable"),
    ("meta too deep", {"meta": {"k": _deep(100)}}, TypeError, "record meta nests"),
    ("meta not a mapping", {"meta": "m"}, TypeError, "meta must be a JSON object"),
    ("no collection", {"collection": ""}, ValueError, "needs collection="),
    ("automatic id", {"record_id": "rec_0000000000000099"}, ValueError, "automatic ids"),
    ("other collection", {"record_id": "named", "collection": "d"}, ValueError, "keeps its"),
    ("record_id type", {"record_id": 5}, TypeError, "record_id must be"),
]


@pytest.mark.parametrize(
    ("case", "change", "error", "message"), REFUSED, ids=[r[0] for r in REFUSED]
)
def test_a_refused_put_writes_nothing(
    store_root: Path | str, case: str, change: dict[str, Any], error: type[Exception], message: str
) -> None:
    """Every class of bad put input raises a clear error naming what was wrong, and the
    revision, records and scope rows stay as they were (also when refused after the
    revision was taken); the store writes normally afterwards."""
    store = RecordStore(store_root)
    store.put("first", collection="c", scope={"k": "v"}, record_id="named")
    before = _counts(store)
    arguments: dict[str, Any] = {"content": "x", "collection": "c", "scope": {"k": "v"}}
    arguments.update(change)
    content = arguments.pop("content")
    with pytest.raises(error, match=message):
        store.put(content, **arguments)
    assert _counts(store) == before
    if isinstance(store_root, Path):
        assert not store._conn.in_transaction
    assert store.put("after", collection="c").revision == before[0] + 1


NEW_RECORD_REFUSALS = [case for case in REFUSED if "record_id" not in case[1]]


@pytest.mark.parametrize(
    ("case", "change", "error", "message"),
    NEW_RECORD_REFUSALS,
    ids=[r[0] for r in NEW_RECORD_REFUSALS],
)
def test_a_new_record_is_encoded_before_the_write_lock(
    tmp_path: Path, case: str, change: dict[str, Any], error: type[Exception], message: str
) -> None:
    """A put of a new record validates and encodes everything before BEGIN IMMEDIATE: bad
    input is refused without taking the write lock other writers wait on."""
    store = RecordStore(tmp_path)
    arguments: dict[str, Any] = {"content": "x", "collection": "c", "scope": {"k": "v"}}
    arguments.update(change)
    content = arguments.pop("content")
    seen = _statements(store)
    with pytest.raises(error, match=message):
        store.put(content, **arguments)
    store._conn.set_trace_callback(None)
    assert seen == []


def test_a_failed_delete_writes_nothing(store_root: Path | str) -> None:
    """A delete of an absent record raises NotFoundError and takes no revision."""
    store = RecordStore(store_root)
    store.put("x", collection="c")
    before = _counts(store)
    with pytest.raises(NotFoundError):
        store.delete("absent")
    assert _counts(store) == before


def test_threads_sharing_one_store_lose_nothing(store_root: Path | str) -> None:
    """4 threads x 150 puts on one RecordStore: 600 records, revisions 1..600 each once."""
    store = RecordStore(store_root)
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for i in range(150):
                store.put({"w": n, "i": i}, collection="t", scope={"w": n})
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []
    with store.backend.read() as conn:
        rows = conn.execute("SELECT revision FROM records ORDER BY revision").fetchall()
    assert [row["revision"] for row in rows] == list(range(1, 601))
    for n in range(4):
        assert store.query(scope={"w": n}).coverage.considered == 150


KILLED = textwrap.dedent(
    """
    import os, sys
    from taskctx_records import RecordStore
    store = RecordStore(sys.argv[1])
    for i in range(int(sys.argv[2])):
        store.put({"i": i}, collection="k", scope={"task_id": "t"})
    os._exit(0)  # no close: nothing checkpoints the WAL, nothing flushes on the way out
    """
)


def test_a_returned_put_survives_its_process_being_killed(store_root: Path | str) -> None:
    """Puts that returned are committed (on SQLite, in the WAL): a process ending without
    close (os._exit) loses none of them, and the next open reads every one."""
    RecordStore(store_root).close()
    subprocess.run([sys.executable, "-c", KILLED, str(store_root), "300"], check=True, timeout=120)
    if isinstance(store_root, Path):
        wal = store_root / ".taskctx" / "records" / "records.db-wal"
        assert wal.stat().st_size > 0  # the commits are still only in the WAL
    store = RecordStore(store_root)
    assert store.revision == 300
    assert store.query(scope={"task_id": "t"}).coverage.considered == 300
    assert store.get("rec_0000000000000300").content == {"i": 299}


def test_read_write_connections_checkpoint_at_the_larger_limit(tmp_path: Path) -> None:
    """A read-write store checkpoints every WAL_AUTOCHECKPOINT_PAGES pages (not SQLite's
    1,000) and caps a reset WAL at WAL_SIZE_LIMIT_BYTES; a read-only one opens as before."""
    store = RecordStore(tmp_path)
    pragma = store._conn.execute
    assert pragma("PRAGMA wal_autocheckpoint").fetchone()[0] == WAL_AUTOCHECKPOINT_PAGES
    assert pragma("PRAGMA journal_size_limit").fetchone()[0] == WAL_SIZE_LIMIT_BYTES
    assert pragma("PRAGMA journal_mode").fetchone()[0] == "wal"
    store.put("x", collection="c")
    reader = RecordStore(tmp_path, mode="read_only")
    assert reader.get("rec_0000000000000001").content == "x"
    with pytest.raises(sqlite3.OperationalError):
        reader._conn.execute("INSERT INTO store_state VALUES (2, 'x')")
    reader.close()
    store.close()


@pytest.mark.parametrize("named", [False, True], ids=["new record", "named record"])
def test_a_write_failing_inside_its_transaction_rolls_back_and_is_a_store_error(
    tmp_path: Path, named: bool
) -> None:
    """SQLite refusing a row mid-put (here a trigger) raises RecordStoreError naming the
    database, never a raw sqlite3 error; the transaction is rolled back (revision and rows
    as before) and the write lock released, so the next put writes normally."""
    store = RecordStore(tmp_path)
    store.put("first", collection="c", scope={"k": "v"}, record_id="named")
    before = _counts(store)
    store._conn.execute(
        "CREATE TEMP TRIGGER refuse BEFORE INSERT ON record_scope "
        "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
    )
    with pytest.raises(RecordStoreError, match="refused by the test") as error:
        store.put("x", collection="c", scope={"k": "v"}, record_id="named" if named else None)
    assert not isinstance(error.value, sqlite3.Error)
    assert str(store.path) in str(error.value)
    assert _counts(store) == before
    assert not store._conn.in_transaction
    store._conn.execute("DROP TRIGGER refuse")
    assert store.put("after", collection="c", scope={"k": "v"}).revision == before[0] + 1
