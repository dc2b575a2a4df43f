"""The quality-under-budget benchmark: a quick run, its scoring and its verdicts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench import budget
from taskctx import ContextBudget, PluginHost, TaskContext
from tests.bench.helpers import quick_result


@pytest.fixture(scope="module")
def budget_result(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The JSON the budget benchmark writes in quick mode."""
    return quick_result("budget", tmp_path_factory.mktemp("bench-results"))


def test_quick_run_reports_every_budget(budget_result: dict[str, Any]) -> None:
    """Each budget has its quality figures; quick runs judge nothing."""
    assert set(budget_result["budgets"]) == {str(b) for b in budget.BUDGETS}
    for figures in budget_result["budgets"].values():
        assert 0.0 <= figures["ndcg_at_10"] <= 1.0
        assert 0.0 <= figures["relevant_share"] <= 1.0
        assert figures["empty_share"] < 1.0
    assert budget_result["targets"] == {"applies": False, "met": None}


def test_small_budgets_are_served_by_parts(budget_result: dict[str, Any]) -> None:
    """The synthetic documents are longer than 500 chars: that page is made of parts."""
    smallest = budget_result["budgets"]["500"]
    assert smallest["part_blocks"] > 0
    assert smallest["mean_chars"] <= 500


def test_package_quality_counts_documents_once(tmp_path: Path) -> None:
    """Blocks of one document rank it once; relevant characters are pooled per block."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "d1.txt").write_text("alpha beta gamma\n", encoding="utf-8")
    (folder / "d2.txt").write_text("alpha delta\n", encoding="utf-8")
    host = PluginHost(allow=["taskctx-workspace", "taskctx-fts"])
    context = TaskContext("t", host=host, state_dir=tmp_path / "state")
    context.attach(host.source("task_workspace", root=str(folder)), binding_id="docs")
    package = context.reader("t", budget=ContextBudget(max_chars=2000)).read("alpha")
    score, useful, chars = budget.package_quality(package, {"d2": 1})
    delivered = {block.ref.path for block in package.blocks}
    assert delivered == {"d1.txt", "d2.txt"}
    assert chars == sum(block.chars for block in package.blocks)
    assert useful == next(b.chars for b in package.blocks if b.ref.path == "d2.txt")
    assert 0.0 < score <= 1.0


def test_verdicts_beat_the_baseline_below_the_largest_budget() -> None:
    """Below 6,000 a budget must beat whole sections; at 6,000 it may not fall behind."""
    at_base = {str(b): dict(v) for b, v in budget.BASELINE.items()}
    assert budget.verdicts(at_base) == {
        "ndcg_500": False,
        "ndcg_1000": False,
        "ndcg_2000": False,
        "ndcg_6000": True,
    }
    worse = {**at_base, "6000": {"ndcg_at_10": budget.BASELINE[6_000]["ndcg_at_10"] - 0.01}}
    assert budget.verdicts(worse)["ndcg_6000"] is False
