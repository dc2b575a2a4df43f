"""The read floor benchmark runs in quick mode: taskctx's first read beside raw SQLite."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from taskctx_records import RecordStore

from bench.read_floor import QUICK, floor_read
from bench.records import SOURCE_SCOPE, _source_items
from bench.registry import by_name
from tests.bench.helpers import quick_result


def test_read_floor_reports_both_sides_and_their_ratio(tmp_path: Path) -> None:
    """``--only read_floor`` is registered and reports both medians, every sample, the
    ratio, and that both sides found a full page over every record."""
    assert "read_floor" in by_name()
    result = quick_result("read_floor", tmp_path)
    assert result["checks"]
    assert all(result["checks"].values()), result["checks"]
    assert list(result["sizes"]) == [str(size) for size in QUICK.sizes]
    for size in result["sizes"].values():
        assert set(size["median_s"]) == {"taskctx", "floor"}
        assert all(len(samples) == QUICK.rounds for samples in size["seconds"].values())
        expected = size["median_s"]["taskctx"] / size["median_s"]["floor"]
        assert size["taskctx_over_floor"] == expected
    assert result["process_peak_rss_bytes"] > 0


def test_the_floor_indexes_exactly_the_scope(tmp_path: Path) -> None:
    """The floor reads the scope's current records only: another scope and a deleted
    record stay out of its index."""
    store = RecordStore(tmp_path / "store")
    for item in _source_items(0, 20):
        store.put(item["content"], collection=item["collection"], kind=item["kind"],
                  scope=SOURCE_SCOPE)  # fmt: skip
    gone = store.put({"text": "upload"}, collection="obs", scope=SOURCE_SCOPE)
    store.delete(gone.id)
    store.put({"text": "upload elsewhere"}, collection="obs", scope={"task_id": "other"})
    store.close()
    assert floor_read(store.path, tmp_path / "floor.db") == 12
    with sqlite3.connect(tmp_path / "floor.db") as index:
        assert index.execute("SELECT count(*) FROM fts").fetchone() == (20,)
