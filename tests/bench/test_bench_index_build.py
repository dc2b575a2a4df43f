"""The cold-build benchmark runs in quick mode: floor and build timed, the ratio reported."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.index_build import QUICK, peak_rss_bytes
from bench.registry import by_name
from tests.bench.helpers import quick_result


@pytest.fixture(scope="module")
def build_result(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The JSON the index_build benchmark writes in quick mode."""
    return quick_result("index_build", tmp_path_factory.mktemp("bench-results"))


def test_registry_lists_the_index_build_benchmark() -> None:
    """``python -m bench --only index_build`` is a registered benchmark."""
    assert "index_build" in by_name()


def test_index_build_reports_floor_build_ratio_and_rss(build_result: dict[str, Any]) -> None:
    """Floor and build MB/s over every round, their ratio and the peak RSS of each pass."""
    assert build_result["quick"] is True
    assert build_result["corpus"]["files"] == QUICK.files
    assert all(build_result["checks"].values())
    floor, build = build_result["floor"], build_result["build"]
    assert len(floor["samples_s"]) == len(build["samples_s"]) == QUICK.rounds
    assert floor["mb_per_s"] > 0
    assert build["mb_per_s"] > 0
    assert build["apply"]["median_s"] <= build["median_s"]
    ratio = build_result["ratio_build_over_floor"]
    assert ratio == pytest.approx(build["mb_per_s"] / floor["mb_per_s"])
    rss = build_result["peak_rss_bytes"]
    assert 0 < rss["floor"] <= rss["process"]
    assert 0 < rss["build"] <= rss["process"]
    assert build_result["targets"] == {"met": None, "applies": False}


def test_index_build_summary_names_the_ratio(build_result: dict[str, Any]) -> None:
    """The summary prints the floor, the build and their ratio."""
    text = "\n".join(by_name()["index_build"].summary(build_result))
    assert "floor (read + sha256)" in text
    assert "ratio build/floor" in text


def test_peak_rss_is_at_least_the_current_rss(tmp_path: Path) -> None:
    """The peak RSS helper reports bytes, not kilobytes: at least what a 64 MB buffer holds."""
    buffer = bytearray(64 * 2**20)
    buffer[::4096] = b"x" * len(buffer[::4096])
    assert peak_rss_bytes() >= len(buffer)
