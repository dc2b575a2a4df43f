"""Every result of ``python -m bench`` reports the peak RSS of the process while it ran."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from bench.common import peak_rss_bytes, reset_peak_rss
from bench.registry import Benchmark
from bench.runner import _run_measuring_peak

MIB = 2**20
pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="VmHWM and clear_refs are Linux's"
)


def _allocating(mib: int) -> Benchmark:
    def run(quick: bool) -> dict[str, Any]:
        block = bytearray(mib * MIB)  # zero-filled: every page is touched
        del block
        return {"benchmark": "allocating", "quick": quick}

    return Benchmark("allocating", "allocates and frees", run, lambda result: [])


def test_the_peak_of_a_benchmark_is_its_own() -> None:
    """A big benchmark's peak shows in its result, and is not charged to the next one."""
    big = _allocating(256)
    small = _allocating(1)
    big_result = _run_measuring_peak(big, quick=True)
    small_result = _run_measuring_peak(small, quick=True)
    assert big_result["process_peak_rss_bytes"] >= 256 * MIB
    assert small_result["process_peak_rss_bytes"] < big_result["process_peak_rss_bytes"] - 128 * MIB
    assert small_result["process_peak_rss_scope"] == "this benchmark alone (VmHWM reset before it)"


def test_reset_starts_the_high_water_mark_afresh() -> None:
    """After a reset, VmHWM is what the process holds now, not an earlier peak."""
    block = bytearray(128 * MIB)
    del block
    before = peak_rss_bytes()
    assert reset_peak_rss()
    assert peak_rss_bytes() < before - 64 * MIB
