"""The request filters bench prepares every image kind and times the pipeline, quick."""

from __future__ import annotations

from pathlib import Path

from tests.bench.helpers import quick_result


def test_quick_run_prepares_each_kind_and_times_the_pipeline(tmp_path: Path) -> None:
    """Every image kind is prepared (screenshots split, the over-side photo resized), the
    pipeline's builds are timed beside the integrity-only floor, and each check holds."""
    result = quick_result("request_filters", tmp_path)
    assert set(result["images"]) == {
        "photo_12mp",
        "photo_24mp_over_side",
        "screenshot_1280x19000",
    }
    for facts in result["images"].values():
        assert facts["images_per_s"] > 0
        assert facts["peak_rss_bytes"] > 0
    assert result["pipeline"]["warm"]["median_s"] > 0
    assert "image_input" in result["pipeline"]["filters"]
    assert all(result["checks"].values()), result["checks"]
