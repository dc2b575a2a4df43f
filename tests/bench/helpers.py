"""What the benchmark smoke tests share: one quick run through the runner, and the keys
every timed result carries."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.runner import main

__all__ = ["TIMED_RESULT_KEYS", "assert_providers_measured", "quick_result"]

TIMED_RESULT_KEYS = frozenset(
    {
        "benchmark",
        "schema_version",
        "created_utc",
        "quick",
        "params",
        "machine",
        "git",
        "notes",
        "timings",
        "ratios",
        "targets",
        "checks",
        "packages_last_round",
        "process_peak_rss_bytes",
    }
)
"""Keys of every result that times phases side by side (reader, workspace, repo)."""


def quick_result(name: str, out: Path) -> dict[str, Any]:
    """Run ``python -m bench --quick --only NAME --out OUT`` in process; its JSON result."""
    assert main(["--quick", "--only", name, "--out", str(out)]) == 0
    data: dict[str, Any] = json.loads((out / f"{name}.json").read_text(encoding="utf-8"))
    assert data["benchmark"] == name
    return data


def assert_providers_measured(
    result: dict[str, Any], providers: tuple[str, ...], documents: int, updates: int
) -> None:
    """An index bench's result measured each of ``providers`` on ``documents`` documents:
    a quality in [0, 1], positive speeds, every update sample, and its checks hold."""
    assert set(result["providers"]) == set(providers)
    assert result["corpus"]["documents"] == documents
    for name in providers:
        measured = result["providers"][name]
        assert 0.0 <= measured["ndcg_at_10"] <= 1.0
        assert measured["warm_qps"] > 0
        assert measured["build_s"] > 0
        assert len(measured["update"]["samples_s"]) == updates
    assert all(result["checks"].values()), result["checks"]
    assert result["targets"]["applies"] is False
