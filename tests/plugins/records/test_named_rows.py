"""The record store reads SQLite rows by column name, never by position."""

from __future__ import annotations

import ast
from pathlib import Path

import taskctx_records
from taskctx_records import RecordStore

PACKAGE = Path(taskctx_records.__file__).resolve().parent


def _positional_reads(tree: ast.AST) -> list[int]:
    """Lines that index a row (a name holding ``row``, or ``fetchone()``) by an integer."""
    lines: list[int] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Subscript):
            continue
        index = node.slice
        if isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub):
            index = index.operand
        if not (isinstance(index, ast.Constant) and isinstance(index.value, int)):
            continue
        target = node.value
        is_row = isinstance(target, ast.Name) and "row" in target.id.lower()
        is_fetch = (
            isinstance(target, ast.Call)
            and isinstance(target.func, ast.Attribute)
            and target.func.attr in ("fetchone", "fetchall")
        )
        if is_row or is_fetch:
            lines.append(node.lineno)
    return lines


def test_no_positional_row_reads() -> None:
    """No module of taskctx_records reads ``row[N]`` or ``fetchone()[N]``."""
    found = {
        path.name: lines
        for path in sorted(PACKAGE.glob("*.py"))
        if (lines := _positional_reads(ast.parse(path.read_text(encoding="utf-8"))))
    }
    assert found == {}


def test_the_checker_sees_positional_reads() -> None:
    """The check above finds each form it forbids (so an empty result means something)."""
    source = "a = row[0]\nb = rows[-1]\nc = conn.execute(q).fetchone()[2]\nd = row['id']\n"
    assert _positional_reads(ast.parse(source)) == [1, 2, 3]


def test_reads_by_name_round_trip(store_root: Path | str) -> None:
    """Records, bounded reads, links, events, checkpoints and snapshots read back by name."""
    store = RecordStore(store_root)
    first = store.put({"a": 1}, collection="notes", kind="k", scope={"task": "t"}, meta={"m": 2})
    second = store.put(b"\x00bytes", collection="blobs")
    store.link(first.id, second.id, "mentions", meta={"why": "test"})
    store.append_event("s", "started", {"n": 1}, task_id="t")
    store.checkpoint("run", {"step": 1})
    store.snapshot("snap")
    record = store.get(first.id)
    assert (record.collection, record.kind, record.scope, record.meta, record.content) == (
        "notes",
        "k",
        {"task": "t"},
        {"m": 2},
        {"a": 1},
    )
    assert (record.sha256, record.size, record.version, record.revision) == (
        first.sha256,
        first.size,
        1,
        first.revision,
    )
    bounded = store.read_bounded(second.id, 1, 3)
    assert (bounded.data, bounded.sha256, bounded.size) == (b"byt", second.sha256, 6)
    assert [link.relation for link in store.links(first.id)] == ["mentions"]
    assert [event.payload for event in store.events(stream="s").events] == [{"n": 1}]
    checkpoint = store.latest_checkpoint("run")
    assert checkpoint is not None
    assert checkpoint.state == {"step": 1}
    assert [snapshot.name for snapshot in store.snapshots()] == ["snap"]
