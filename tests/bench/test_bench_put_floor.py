"""The put floor benchmark runs in quick mode: taskctx and both floors timed side by side."""

from __future__ import annotations

from pathlib import Path

from bench.put_floor import QUICK
from bench.registry import by_name
from tests.bench.helpers import quick_result


def test_put_floor_reports_each_writer_and_rss(tmp_path: Path) -> None:
    """``--only put_floor`` is registered and reports records/s for taskctx, the floor now
    and before, the share of the floor, peak RSS, and that every writer wrote every record."""
    assert "put_floor" in by_name()
    result = quick_result("put_floor", tmp_path)
    assert result["checks"] == {"every_writer_wrote_every_record": True}
    assert list(result["sizes"]) == [str(size) for size in QUICK.sizes]
    for size in result["sizes"].values():
        assert set(size["rps"]) == {"taskctx", "floor_now", "floor_before"}
        assert all(rps > 0 for rps in size["rps"].values())
        assert all(len(samples) == QUICK.rounds for samples in size["seconds"].values())
        assert size["taskctx_share_of_floor_now"] > 0
        assert size["peak_rss_bytes"] > 0
