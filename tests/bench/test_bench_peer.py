"""The peer bench's arguments, ratios, targets and report, on made-up runs (no Agently)."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench import peer
from bench.common import REPO_ROOT
from bench.registry import by_name
from bench.runner import _parser


def _args(*argv: str) -> argparse.Namespace:
    return _parser(list(by_name())).parse_args(list(argv))


def _run(times: dict[str, float], *, blocks: int = 3, change_revision: str = "r2") -> Any:
    """One side's result for one corpus, as the drivers write it."""
    packages = {
        "first": {"blocks": blocks, "used_chars": 10, "revision": "r1"},
        "warm": {"blocks": blocks, "used_chars": 10, "revision": "r1"},
        "change": {"blocks": blocks, "used_chars": 10, "revision": change_revision},
    }
    return {"times": times, "packages": packages, "peak_rss_bytes": 2**20 * len(times)}


def _runs(size: int, speedup: float, **kwargs: Any) -> dict[str, Any]:
    """Runs at ``size`` where taskctx is ``speedup`` times faster on every step."""
    ws = {"first": 1.0, "warm": 0.01, "change": 0.02}
    rec = {"first": 0.5, "warm": 0.005, "change": 0.006, "puts": 1.0}
    slow_ws = {step: t * speedup for step, t in ws.items()}
    slow_rec = {step: t * speedup for step, t in rec.items()}
    return {
        str(size): {
            "taskctx": {"workspace": [_run(ws, **kwargs)], "records": [_run(rec, **kwargs)]},
            "agently": {"workspace": [_run(slow_ws)], "records": [_run(slow_rec)]},
        }
    }


def test_sizes_parse_from_a_comma_list() -> None:
    """``--sizes`` takes positive integers separated by commas (underscores allowed)."""
    assert peer.parse_sizes("1000,10000") == (1000, 10000)
    assert peer.parse_sizes(" 1_000 , 50 ") == (1000, 50)


@pytest.mark.parametrize("text", ["", "1000,", ",5", "ten", "1000,x", "0", "-3", "5,5", "1.5"])
def test_bad_sizes_are_refused_by_name(text: str) -> None:
    """Empty parts, non-integers, sizes under 1 and repeats each raise naming the input."""
    with pytest.raises(argparse.ArgumentTypeError, match="size"):
        peer.parse_sizes(text)


def test_peer_arguments_reach_the_params() -> None:
    """``--peer agently --sizes --rounds --index --work`` become the run's parameters."""
    args = _args(
        "--peer", "agently", "--sizes", "300,3000", "--rounds", "3", "--index", "structural",
        "--work", "/tmp/peer-work",
    )  # fmt: skip
    params = peer.params_from_args(args)
    assert args.peer == "agently"
    assert params.sizes == (300, 3000)
    assert params.rounds == 3
    assert params.index == "structural"
    assert params.work == Path("/tmp/peer-work")
    assert params.max_chars == 6000
    assert params.max_blocks == 12
    assert params.version == "4.1.4.10"


def test_a_relative_work_folder_is_made_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each side runs in a working directory of its own, so ``--work`` is resolved first."""
    monkeypatch.chdir(tmp_path)
    params = peer.params_from_args(_args("--peer", "agently", "--work", "rel/peer"))
    assert params.work == tmp_path / "rel" / "peer"


def test_defaults_are_the_issue_sizes_and_quick_shrinks_them() -> None:
    """Without ``--sizes``: 1,000 and 10,000 in the gitignored .cache; ``--quick``: 200."""
    params = peer.params_from_args(_args("--peer", "agently"))
    assert params.sizes == (1_000, 10_000)
    assert params.work == REPO_ROOT / ".cache" / "bench" / "peer-agently"
    assert params.index == "lexical"
    assert peer.params_from_args(_args("--peer", "agently", "--quick")).sizes == (200,)
    explicit = _args("--peer", "agently", "--quick", "--sizes", "50")
    assert peer.params_from_args(explicit).sizes == (50,)


@pytest.mark.parametrize(
    "argv",
    [
        ("--peer", "langchain"),
        ("--peer", "agently", "--rounds", "0"),
        ("--peer", "agently", "--rounds", "two"),
        ("--peer", "agently", "--index", "vector"),
        ("--peer", "agently", "--sizes", "0"),
    ],
)
def test_bad_peer_arguments_exit(argv: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    """An unknown peer or index, a round count under 1 and a bad size stop argparse."""
    with pytest.raises(SystemExit) as stopped:
        _args(*argv)
    assert stopped.value.code == 2
    assert "error" in capsys.readouterr().err


def test_without_peer_the_runner_runs_no_peer() -> None:
    """``--peer`` is off by default: ``python -m bench`` runs only the registry."""
    assert _args().peer is None
    assert "peer-agently" not in by_name()


def test_the_peer_venv_is_never_the_projects() -> None:
    """A work folder in the project's .venv or the running interpreter's is refused before
    anything is made or installed."""
    for work in (REPO_ROOT / ".venv", Path(sys.prefix), Path(sys.prefix) / "lib"):
        with pytest.raises(ValueError, match="project's virtualenv"):
            peer.ensure_peer_venv(work, "4.1.4.10")
        assert not (work / "venv").exists()


def test_ratio_is_how_many_times_better_taskctx_is() -> None:
    """Times: Agently over taskctx; the puts row (records/s): taskctx over Agently."""
    assert peer.ratio("workspace first read", 2.0, 10.0) == pytest.approx(5.0)
    assert peer.ratio("one put per record", 4000.0, 100.0) == pytest.approx(40.0)
    for bad in ((0.0, 1.0), (1.0, 0.0), (-1.0, 2.0)):
        with pytest.raises(ValueError, match="records warm read"):
            peer.ratio("records warm read", *bad)


def test_targets_follow_the_issue_by_size() -> None:
    """10x/50x first reads, 100x warm, 50x puts; under 1,000 and change rows: no target."""
    assert peer.target_for("workspace first read", 1_000) == 10.0
    assert peer.target_for("workspace first read", 9_999) == 10.0
    assert peer.target_for("workspace first read", 10_000) == 50.0
    assert peer.target_for("records first read", 100_000) == 50.0
    assert peer.target_for("records warm read", 1_000) == 100.0
    assert peer.target_for("one put per record", 10_000) == 50.0
    assert peer.target_for("workspace first read", 999) is None
    assert peer.target_for("workspace one change", 10_000) is None


def test_report_rows_ratios_and_verdicts() -> None:
    """Every row per size with both figures, the ratio, its target and whether it is met."""
    report = peer.build_report(_runs(1_000, 60.0), [1_000], judged=True)
    rows = {row["step"]: row for row in report["rows"]}
    assert set(rows) == {label for label, _, _ in peer.ROWS}
    first = rows["workspace first read"]
    assert first["taskctx"] == pytest.approx(1.0)
    assert first["agently"] == pytest.approx(60.0)
    assert first["ratio"] == pytest.approx(60.0)
    assert first["met"] is True
    puts = rows["one put per record"]
    assert puts["unit"] == "records/s"
    assert puts["taskctx"] == pytest.approx(1_000.0)
    assert puts["ratio"] == pytest.approx(60.0)
    assert rows["workspace warm read"]["met"] is False  # 60x under the 100x target
    assert rows["workspace one change"]["met"] is None
    assert report["targets"]["met"] is False
    assert report["targets"]["missed"] == ["workspace warm read @ 1000", "records warm read @ 1000"]
    assert report["peak_rss_bytes"]["1000"] == {"taskctx": 4 * 2**20, "agently": 4 * 2**20}
    assert all(report["checks"].values())


def test_unjudged_runs_judge_nothing() -> None:
    """A quick run reports ratios and targets but no verdict."""
    report = peer.build_report(_runs(200, 200.0), [200], judged=False)
    assert all(row["met"] is None for row in report["rows"])
    assert report["targets"]["met"] is None


def test_checks_fail_on_empty_pages_and_unseen_changes() -> None:
    """No blocks, or a change read on the first read's revision, fails that side's check."""
    report = peer.build_report(_runs(1_000, 200.0, blocks=0), [1_000], judged=True)
    assert report["checks"]["taskctx_workspace_1000_blocks"] is False
    assert report["checks"]["agently_workspace_1000_blocks"] is True
    report = peer.build_report(_runs(1_000, 200.0, change_revision="r1"), [1_000], judged=True)
    assert report["checks"]["taskctx_records_1000_change_new_revision"] is False
    assert report["targets"]["met"] is True


def test_summary_prints_the_issue_table() -> None:
    """The summary is the issue's markdown table, verdicts, then peak RSS per size."""
    result = peer.build_report({**_runs(1_000, 60.0), **_runs(10_000, 200.0)}, [1_000, 10_000],
                               judged=True)  # fmt: skip
    lines = peer.summary_lines(result)
    assert lines[0] == "| step (taskctx vs Agently) | 1,000 | 10,000 |"
    first = next(line for line in lines if line.startswith("| workspace first read"))
    assert "1.00 s vs 60.00 s = 60.0x (target 10x: met)" in first
    assert "(target 50x: met)" in first
    warm = next(line for line in lines if line.startswith("| workspace warm read"))
    assert "10.0 ms vs 600.0 ms = 60.0x (target 100x: MISSED)" in warm
    assert "1,000/s vs 17/s" in next(line for line in lines if "one put per record" in line)
    assert "peak RSS at 10,000: taskctx 4 MiB, agently 4 MiB" in lines
    assert not any("CHECKS FAILED" in line for line in lines)


def test_progress_line_shows_one_sides_figures() -> None:
    """Each side's times (puts as records/s) and peak RSS print as its process ends."""
    run = _run({"puts": 2.0, "first": 1.5, "warm": 0.0125})
    line = peer.progress_line("agently", "records", 1_000, 1, run)
    assert line == (
        "agently records 1,000 (round 1): puts 500/s, first 1.50 s, warm 12.5 ms; peak RSS 3 MiB"
    )


def test_the_agently_driver_runs_without_taskctx_installed() -> None:
    """The peer's interpreter has only the standard library and agently: the driver and
    the bench.common it imports load with no site-packages at all."""
    driver = Path(peer.__file__).with_name("peer_agently_driver.py")
    code = (
        "import runpy, sys; sys.argv = ['driver']; "
        f"runpy.run_path({str(driver)!r}, run_name='not_main'); "
        "import bench.common; print('taskctx' in sys.modules, 'pydantic' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-S", "-I", "-c", code], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False"]
