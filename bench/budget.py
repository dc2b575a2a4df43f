"""Quality under a budget: BEIR SciFact through ``reader.read()`` at small page budgets.

Issue 18: a reader must deliver the best material that fits, not starve below the size
of a section. SciFact's 5,183 abstracts become a folder of text files (title, blank
line, abstract) read by a ``task_workspace`` source with the fts provider; each of the
300 test queries is one ``reader.read(query)`` of a fresh reader at max_chars 500, 1,000,
2,000 and 6,000 (12 blocks). Reported per budget: nDCG@10 of the documents the delivered
blocks come from (in delivery order, a document counted once), the share of delivered
characters that belong to relevant documents, and how often nothing was delivered.

The baseline is whole-section delivery (``BASELINE``, measured with this module at
commit de5d87d, before parts existed): the target is to beat its nDCG@10 at every budget
below 6,000 and to keep it at 6,000. The corpus is read from the eval data (CC BY-NC:
never copied into the repository); without it the result says ``skipped``. ``--quick``
runs 40 queries over a synthetic corpus of long documents.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.common import result_header, skipped_result
from bench.fts import SCIFACT_DIR, Corpus, load_scifact, ndcg_at, synthetic_corpus
from taskctx import ContextBudget, ContextPackage, PluginHost, TaskContext

__all__ = [
    "BASELINE",
    "DESCRIPTION",
    "FULL",
    "NAME",
    "QUICK",
    "BudgetParams",
    "package_quality",
    "run",
    "run_budget",
    "summary_lines",
    "verdicts",
]

NAME = "budget"
DESCRIPTION = "SciFact through reader.read() at 500-6,000 chars: nDCG@10, relevant share"
BUDGETS = (500, 1_000, 2_000, 6_000)
MAX_BLOCKS = 12
BASELINE: Mapping[int, Mapping[str, float]] = {
    500: {"ndcg_at_10": 0.0113, "relevant_share": 0.0122, "empty_share": 0.52},
    1_000: {"ndcg_at_10": 0.0682, "relevant_share": 0.0619, "empty_share": 0.0},
    2_000: {"ndcg_at_10": 0.4117, "relevant_share": 0.3766, "empty_share": 0.0},
    6_000: {"ndcg_at_10": 0.6486, "relevant_share": 0.2342, "empty_share": 0.0},
}
"""Whole-section delivery at commit de5d87d (``python -m bench --only budget`` with this
module on that commit's kernel): the figures to beat."""

NOTES = (
    "Each SciFact document is <root>/<doc id>.txt holding its title, a blank line and its "
    "abstract; one TaskContext attaches the folder as a task_workspace source (fts "
    "provider), synced once before timing.",
    "Every query is reader.read(query) on a fresh reader (nothing disclosed before) with "
    "ContextBudget(max_chars=B, max_blocks=12); page 1 only, as an agent reading once.",
    "nDCG@10: BEIR's graded nDCG over the distinct documents of the delivered blocks, in "
    "block order. relevant_share: characters of delivered blocks from a relevant document "
    "over all delivered characters, pooled over the queries. empty_share: queries that "
    "delivered no block.",
)


@dataclass(frozen=True)
class BudgetParams:
    """Budgets, the query sample (0: all) and the synthetic corpus size (0: SciFact)."""

    budgets: tuple[int, ...] = BUDGETS
    queries: int = 0
    synthetic_docs: int = 0
    seed: int = 20_241_202


FULL = BudgetParams()
QUICK = BudgetParams(queries=40, synthetic_docs=300)


def _write_corpus(corpus: Corpus, root: Path) -> None:
    for document in corpus.documents:
        text = f"{document.title or ''}\n\n{document.text or ''}\n"
        (root / f"{document.doc_id}.txt").write_text(text, encoding="utf-8")


def _doc_of(path: str) -> str:
    return path.rsplit("/", 1)[-1].removesuffix(".txt")


def package_quality(package: ContextPackage, relevant: Mapping[str, int]) -> tuple[float, int, int]:
    """nDCG@10 of a package's delivered documents, its relevant characters and all its
    characters."""
    ranked = list(dict.fromkeys(_doc_of(block.ref.path) for block in package.blocks))
    chars = sum(block.chars for block in package.blocks)
    useful = sum(b.chars for b in package.blocks if relevant.get(_doc_of(b.ref.path), 0) > 0)
    return ndcg_at(ranked, relevant), useful, chars


def _measure(corpus: Corpus, params: BudgetParams, root: Path) -> dict[str, Any]:
    folder = root / "scifact"
    folder.mkdir()
    _write_corpus(corpus, folder)
    host = PluginHost(allow=["taskctx-workspace", "taskctx-fts"])
    context = TaskContext("bench-budget", host=host, state_dir=root / "state")
    context.attach(host.source("task_workspace", root=str(folder)), binding_id="scifact")
    started = time.perf_counter()
    context.sync_index()
    sync_s = time.perf_counter() - started
    query_ids = list(corpus.queries)
    if params.queries:
        query_ids = query_ids[: params.queries]
    per_budget: dict[str, Any] = {}
    for budget in params.budgets:
        scores: list[float] = []
        useful = chars = empty = 0
        blocks: list[int] = []
        parts = 0
        started = time.perf_counter()
        for query_id in query_ids:
            reader = context.reader(
                "bench", budget=ContextBudget(max_chars=budget, max_blocks=MAX_BLOCKS)
            )
            package = reader.read(corpus.queries[query_id])
            score, got, total = package_quality(package, corpus.qrels[query_id])
            scores.append(score)
            useful, chars = useful + got, chars + total
            empty += not package.blocks
            blocks.append(len(package.blocks))
            parts += sum(block.completeness.value == "part" for block in package.blocks)
        per_budget[str(budget)] = {
            "ndcg_at_10": statistics.fmean(scores),
            "relevant_share": useful / chars if chars else 0.0,
            "empty_share": empty / len(query_ids),
            "mean_blocks": statistics.fmean(blocks),
            "mean_chars": chars / len(query_ids),
            "part_blocks": parts,
            "seconds": time.perf_counter() - started,
        }
    return {
        "corpus": {
            "source": corpus.source,
            "documents": len(corpus.documents),
            "queries": len(query_ids),
        },
        "sync_s": sync_s,
        "budgets": per_budget,
    }


def verdicts(budgets: Mapping[str, Any]) -> dict[str, bool]:
    """Per budget: does its nDCG@10 beat whole sections (below 6,000) or keep it (6,000)."""
    judged = {}
    for budget, figures in budgets.items():
        base = BASELINE.get(int(budget))
        if base is None:
            continue
        better = figures["ndcg_at_10"] > base["ndcg_at_10"]
        if int(budget) >= max(BASELINE):
            better = figures["ndcg_at_10"] >= base["ndcg_at_10"] - 0.005
        judged[f"ndcg_{budget}"] = better
    return judged


def run_budget(
    params: BudgetParams, *, corpus_dir: Path | None = None, quick: bool = False
) -> dict[str, Any]:
    """Read every query at every budget; SciFact unless ``params`` asks for synthetic data."""
    folder = SCIFACT_DIR if corpus_dir is None else Path(corpus_dir)
    if params.synthetic_docs:
        corpus = synthetic_corpus(params.synthetic_docs, params.queries or 40, params.seed)
    elif not (folder / "corpus.jsonl").is_file():
        return skipped_result(
            NAME,
            quick=quick,
            params=asdict(params),
            notes=NOTES,
            reason=f"BEIR SciFact folder {str(folder)!r} is absent",
        )
    else:
        corpus = load_scifact(folder)
    with tempfile.TemporaryDirectory(prefix="taskctx-bench-budget-") as temp:
        measured = _measure(corpus, params, Path(temp))
    judged = not quick and not params.synthetic_docs
    judged_budgets = verdicts(measured["budgets"]) if judged else {}
    return {
        **result_header(NAME, quick=quick, params=asdict(params), notes=NOTES),
        "skipped": False,
        **measured,
        "baseline": {str(k): dict(v) for k, v in BASELINE.items()},
        "targets": {
            **judged_budgets,
            "applies": judged,
            "met": all(judged_budgets.values()) if judged else None,
        },
    }


def run(quick: bool) -> dict[str, Any]:
    """The registry entry point: SciFact, or a small synthetic corpus for smoke runs."""
    return run_budget(QUICK if quick else FULL, quick=quick)


def summary_lines(result: dict[str, Any]) -> list[str]:
    """One line per budget beside the whole-section baseline."""
    if result.get("skipped"):
        return [f"skipped: {result['reason']}"]
    corpus = result["corpus"]
    lines = [
        f"{corpus['source']}: {corpus['documents']} documents, {corpus['queries']} queries, "
        f"first sync {result['sync_s']:.1f} s"
    ]
    targets = result["targets"]
    for budget, figures in result["budgets"].items():
        base = result["baseline"].get(budget)
        was = (
            f" (whole sections: {base['ndcg_at_10']:.3f}, {base['relevant_share']:.0%},"
            f" {base['empty_share']:.0%} empty)"
            if base
            else ""
        )
        verdict = targets.get(f"ndcg_{budget}")
        judged = "" if verdict is None else (" met" if verdict else " MISSED")
        lines.append(
            f"max_chars {budget:>5}: nDCG@10 {figures['ndcg_at_10']:.3f}, relevant "
            f"{figures['relevant_share']:.0%}, empty {figures['empty_share']:.0%}, "
            f"{figures['mean_blocks']:.1f} blocks ({figures['part_blocks']} parts){was}{judged}"
        )
    return lines
