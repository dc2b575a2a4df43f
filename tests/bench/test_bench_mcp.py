"""The MCP benchmark runs in quick mode: both paths timed, the same blocks delivered."""

from __future__ import annotations

from pathlib import Path

from bench.mcp_server import QUICK, TARGET_OVERHEAD_S
from bench.registry import by_name
from tests.bench.helpers import quick_result


def test_mcp_bench_times_stdio_beside_the_python_api(tmp_path: Path) -> None:
    """Quick mode times every call over stdio and through the API, reports the overhead
    against the 10 ms target without judging it, and both paths deliver the same blocks."""
    assert "mcp" in by_name()
    result = quick_result("mcp", tmp_path)
    assert result["quick"] is True
    assert result["params"]["files"] == QUICK.files
    for path in ("stdio", "api"):
        timing = result["timings"][path]
        assert len(timing["samples_s"]) == QUICK.calls
        assert all(sample > 0 for sample in timing["samples_s"])
    assert result["targets"]["max_overhead_s"] == TARGET_OVERHEAD_S
    assert result["targets"]["met"] is None
    assert all(result["checks"].values()), result["checks"]
