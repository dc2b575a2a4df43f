"""The reader benchmark runs in quick mode and writes a well-formed JSON result."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bench.reader import PHASES, QUICK
from bench.registry import by_name
from bench.runner import main


@pytest.fixture(scope="module")
def reader_result(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The JSON the reader benchmark writes in quick mode."""
    out = tmp_path_factory.mktemp("bench-results")
    assert main(["--quick", "--only", "reader", "--out", str(out)]) == 0
    data: dict[str, Any] = json.loads((out / "reader.json").read_text(encoding="utf-8"))
    return data


def test_registry_lists_the_reader_benchmark() -> None:
    """The reader benchmark is registered under its name."""
    assert "reader" in by_name()


def test_result_has_the_expected_keys(reader_result: dict[str, Any]) -> None:
    """The result names its benchmark, parameters, machine, commit, notes and timings."""
    expected = {
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
        "source_calls_last_round",
        "packages_last_round",
    }
    assert expected <= reader_result.keys()
    assert reader_result["benchmark"] == "reader"
    assert reader_result["quick"] is True
    assert {"python", "platform", "cpu_count"} <= reader_result["machine"].keys()
    assert "commit" in reader_result["git"]
    assert reader_result["notes"]


def test_quick_mode_uses_quick_sizes(reader_result: dict[str, Any]) -> None:
    """Quick mode runs the small source for few rounds."""
    params = reader_result["params"]
    assert params["descriptors"] == QUICK.descriptors
    assert params["rounds"] == QUICK.rounds
    assert params["max_chars"] > 0
    assert params["max_blocks"] > 0


def test_every_phase_has_positive_timings(reader_result: dict[str, Any]) -> None:
    """Cold, warm and one-change timings are positive, one sample per round."""
    rounds = reader_result["params"]["rounds"]
    for phase in PHASES:
        timing = reader_result["timings"][phase]
        assert len(timing["samples_s"]) == rounds
        assert all(sample > 0 for sample in timing["samples_s"])
        assert 0 < timing["min_s"] <= timing["median_s"] <= timing["max_s"]


def test_ratios_and_targets_are_reported(reader_result: dict[str, Any]) -> None:
    """Both ratios are reported; quick runs do not judge the targets."""
    ratios = reader_result["ratios"]
    assert set(ratios) == {"warm_over_cold", "one_change_over_cold"}
    assert all(ratio > 0 for ratio in ratios.values())
    assert reader_result["targets"]["max_ratio"] == pytest.approx(0.05)
    assert reader_result["targets"]["met"] is None


def test_every_phase_delivered_a_page(reader_result: dict[str, Any]) -> None:
    """The consistency checks hold and each phase's package holds blocks."""
    assert all(reader_result["checks"].values()), reader_result["checks"]
    for phase in PHASES:
        assert reader_result["packages_last_round"][phase]["blocks"] > 0


def test_unknown_benchmark_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """``--only`` with an unknown name exits with a usage error."""
    with pytest.raises(SystemExit) as exited:
        main(["--only", "no-such-benchmark"])
    assert exited.value.code == 2
    assert "no-such-benchmark" in capsys.readouterr().err
