"""The scale benchmark runs at quick sizes: cached corpora, one process per side, peak RSS."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from bench import scale
from bench.registry import by_name
from bench.runner import main, selected

SMALL = replace(scale.QUICK, files=200, records=1_000, batch_size=500, warm_rounds=2)


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache folder of this module's own."""
    return tmp_path_factory.mktemp("scale-cache")


@pytest.fixture(scope="module")
def first_run(cache: Path) -> dict[str, Any]:
    """The result of the first run (generates both corpora)."""
    return scale.run_scale(replace(SMALL, cache=cache), quick=True)


def test_scale_is_registered_but_not_in_the_default_run() -> None:
    """``--only scale`` selects it; a run without ``--only`` leaves it out."""
    registry = by_name()
    assert registry["scale"].in_default_run is False
    default = [benchmark.name for benchmark in selected(registry, None)]
    assert "scale" not in default
    assert {"reader", "workspace", "records", "index_build"} <= set(default)
    assert [benchmark.name for benchmark in selected(registry, ["scale"])] == ["scale"]


def test_first_run_reports_reads_rss_and_targets(first_run: dict[str, Any]) -> None:
    """Both sides deliver, the FTS provider ranks, and every figure the issue asks is there."""
    assert all(first_run["checks"].values()), first_run["checks"]
    assert first_run["corpus"]["workspace"]["files"] == SMALL.files
    assert first_run["corpus"]["records"]["records"] == SMALL.records
    for kind in scale.KINDS:
        assert first_run["corpus"][kind]["generated"] is True
        timing = first_run["timings"][kind]
        assert timing["first_s"] > 0
        assert len(timing["warm"]["samples_s"]) == SMALL.warm_rounds
        side = first_run["sides"][kind]
        assert 0 < side["peak_rss_bytes_after_first"] <= side["peak_rss_bytes"]
        assert first_run["peak_rss_bytes"][kind] == side["peak_rss_bytes"]
    targets = first_run["targets"]
    assert targets["met"] is None
    assert targets["applies"] is False
    assert targets["max_rss_bytes"] == 2**30
    assert targets["max_warm_s"] == {"workspace": 1.0, "records": 0.1}
    assert first_run["benchmark"] == "scale"
    assert first_run["quick"] is True


def test_a_second_run_reuses_the_cached_corpora(cache: Path, first_run: dict[str, Any]) -> None:
    """A rerun with the same sizes generates nothing and reads the same revision."""
    again = scale.run_scale(replace(SMALL, cache=cache), quick=True)
    for kind in scale.KINDS:
        assert again["corpus"][kind]["generated"] is False
        assert again["sides"][kind]["first"]["blocks"] > 0
    assert (
        again["sides"]["records"]["first"]["revision"]
        == first_run["sides"]["records"]["first"]["revision"]
    )
    assert all(again["checks"].values()), again["checks"]


def test_an_unfinished_corpus_is_generated_again(cache: Path, first_run: dict[str, Any]) -> None:
    """A folder without its DONE marker (an interrupted run) is made afresh."""
    params = replace(SMALL, files=50, records=300, cache=cache)
    scale.run_scale(params, quick=True)
    for done in cache.glob("*-50-*/DONE"):
        done.unlink()
    again = scale.run_scale(params, quick=True)
    assert again["corpus"]["workspace"]["generated"] is True
    assert again["corpus"]["records"]["generated"] is False


def test_summary_names_each_corpus_and_its_peak_rss(first_run: dict[str, Any]) -> None:
    """The summary prints first read, warm median and peak RSS per corpus."""
    lines = scale.summary_lines(first_run)
    assert any(line.startswith("workspace 200:") and "peak RSS" in line for line in lines)
    assert any(line.startswith("records 1,000:") for line in lines)
    assert "not judged" in lines[-1]


def test_side_process_refuses_bad_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    """``python -m bench.scale`` wants exactly a spec and an output path."""
    assert scale.main(["only-one"]) == 2
    assert "usage" in capsys.readouterr().err


def test_only_scale_is_accepted_by_the_runner() -> None:
    """The runner's ``--only`` accepts ``scale`` (its parser lists it)."""
    with pytest.raises(SystemExit) as exited:
        main(["--only", "scale", "--help"])
    assert exited.value.code == 0
