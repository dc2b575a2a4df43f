"""The repository benchmark runs in quick mode and writes a well-formed, consistent result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench import repo
from bench.registry import by_name
from tests.bench.helpers import TIMED_RESULT_KEYS, quick_result


@pytest.fixture(scope="module")
def repo_result(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The JSON the repo benchmark writes in quick mode."""
    return quick_result("repo", tmp_path_factory.mktemp("bench-results"))


def test_registry_lists_the_repo_benchmark() -> None:
    """The repo benchmark is registered under its name."""
    assert "repo" in by_name()


def test_repo_result_has_the_expected_keys(repo_result: dict[str, Any]) -> None:
    """The result names its parameters, machine, commit, notes, timings, counts and checks."""
    assert TIMED_RESULT_KEYS | {"counts_by_round"} <= repo_result.keys()
    assert repo_result["benchmark"] == "repo"
    assert repo_result["quick"] is True
    assert repo_result["notes"]


def test_repo_quick_mode_uses_quick_sizes(repo_result: dict[str, Any]) -> None:
    """Quick mode generates the small repository and runs few rounds with the FTS index."""
    params = repo_result["params"]
    assert params["files"] == repo.QUICK.files
    assert params["rounds"] == repo.QUICK.rounds
    assert len(params["changed_files"]) == repo.QUICK.changed
    assert sum(params["files_by_suffix"].values()) == params["files"]
    assert 1024 <= params["bytes_min"] <= params["bytes_max"] <= 4096
    assert params["index_provider"] == "fts"
    assert len(params["commits"]) == 2
    assert params["ls_tree_loose_s"] > 0
    assert params["ls_tree_packed_s"] > 0


def test_repo_every_phase_has_positive_timings(repo_result: dict[str, Any]) -> None:
    """Every phase has one positive sample per round and consistent statistics."""
    rounds = repo_result["params"]["rounds"]
    for phase in repo.PHASES:
        timing = repo_result["timings"][phase]
        assert len(timing["samples_s"]) == rounds
        assert all(sample > 0 for sample in timing["samples_s"])
        assert 0 < timing["min_s"] <= timing["median_s"] <= timing["max_s"]


def test_repo_ratio_and_target_are_reported(repo_result: dict[str, Any]) -> None:
    """The judged ratio is second commit over first read; quick runs judge nothing."""
    ratios = repo_result["ratios"]
    assert set(repo.JUDGED) <= ratios.keys()
    assert all(ratio > 0 for ratio in ratios.values())
    targets = repo_result["targets"]
    assert targets["max_ratio"] == pytest.approx(0.10)
    assert targets["judged"] == list(repo.JUDGED)
    assert targets["met"] is None


def test_repo_counts_show_the_work_of_each_phase(repo_result: dict[str, Any]) -> None:
    """Cold describes every blob, warm none; the second commit indexes the changed files only."""
    assert all(repo_result["checks"].values()), repo_result["checks"]
    files, changed = repo.QUICK.files, repo.QUICK.changed
    for counts in repo_result["counts_by_round"]:
        assert counts["cold_enumeration"]["facts_learnt"] == files
        assert counts["warm_enumeration"]["cat_file_started"] == 0
        assert counts["first_read"]["sync"]["added"] == files
        second = counts["second_commit_read"]
        assert (second["sync"]["updated"], second["facts_learnt"]) == (changed, changed)
    for phase in ("first_read", "second_commit_read"):
        assert repo_result["packages_last_round"][phase]["blocks"] > 0


def test_repo_summary_has_a_verdict_line(repo_result: dict[str, Any]) -> None:
    """The summary prints one line per phase and the judged ratio with its verdict."""
    lines = repo.summary_lines(repo_result)
    assert any(line.startswith("second_commit_read ") for line in lines)
    verdict = [line for line in lines if line.startswith("second_commit_read_over_first_read")]
    assert len(verdict) == 1
    assert "quick run: not judged" in verdict[0]


def test_changed_paths_are_spread_and_bounded() -> None:
    """changed_paths picks distinct paths in order, never more than asked or than exist."""
    files = {f"f{n:03d}.txt": "" for n in range(100)}
    picked = repo.changed_paths(files, 5)
    assert len(picked) == 5
    assert picked == sorted(set(picked))
    assert len(repo.changed_paths(files, 500)) == 100
    assert repo.changed_paths({}, 3) == []


def test_make_repository_commits_twice(tmp_path: Path) -> None:
    """The generated repository has two commits differing in exactly the changed files."""
    import subprocess

    files = {f"docs/n{n}.md": f"# Note {n}\n" for n in range(10)}
    (first, second), ls_tree = repo.make_repository(tmp_path / "r", files, 2)
    changed = subprocess.run(
        ["git", "diff", "--name-only", first, second],
        cwd=tmp_path / "r",
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert changed == repo.changed_paths(files, 2)
    assert set(ls_tree) == {"ls_tree_loose_s", "ls_tree_packed_s"}
