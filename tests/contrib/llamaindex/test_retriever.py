"""The retriever's own behaviour: async path, empty result, fresh data, unranked scores."""

from __future__ import annotations

import asyncio
from pathlib import Path

from llama_index.core.schema import NodeWithScore
from taskctx_llamaindex import COVERAGE_KIND, TaskContextRetriever

from taskctx import ContextBudget, PluginHost, TaskContext
from taskctx.testing import MemorySource


def _retriever(
    ctx: TaskContext, include_coverage: bool = True, filters: dict[str, str] | None = None
) -> TaskContextRetriever:
    return TaskContextRetriever(
        ctx,
        consumer="li-test",
        budget=ContextBudget(4000, 8),
        include_coverage=include_coverage,
        filters=filters,
    )


def _refs(nodes: list[NodeWithScore]) -> list[str]:
    return [str(n.node.metadata["ref"]) for n in nodes if n.node.metadata.get("kind") is None]


def test_async_path_matches_sync(ctx: TaskContext) -> None:
    """aretrieve reads through async_read and gives the same nodes as retrieve."""
    retriever = _retriever(ctx)
    sync = retriever.retrieve("upload")
    asynchronous = asyncio.run(retriever.aretrieve("upload"))
    assert [n.node.node_id for n in asynchronous[:-1]] == [n.node.node_id for n in sync[:-1]]
    assert [n.score for n in asynchronous] == [n.score for n in sync]
    assert asynchronous[-1].node.metadata["kind"] == COVERAGE_KIND


def test_empty_result_keeps_the_coverage_no_match(ctx: TaskContext) -> None:
    """A query nothing matches gives only the coverage node, saying no match in scope."""
    nodes = _retriever(ctx).retrieve("zyxwvu")
    assert len(nodes) == 1
    coverage = nodes[0].node
    assert coverage.metadata["kind"] == COVERAGE_KIND
    assert (
        "files (task_workspace): complete, no match in scope; 0 delivered" in coverage.get_content()
    )


def test_without_coverage_an_empty_result_is_empty(ctx: TaskContext) -> None:
    """include_coverage=False adds no node."""
    assert _retriever(ctx, include_coverage=False).retrieve("zyxwvu") == []


def test_a_new_query_sees_new_data(ctx: TaskContext, project: Path) -> None:
    """Each query reads the current snapshot: a file written after a query is found."""
    retriever = _retriever(ctx)
    assert _refs(retriever.retrieve("quota")) == []
    (project / "notes" / "quota.md").write_text("The quota is 5 uploads a day.\n", encoding="utf-8")
    assert _refs(retriever.retrieve("quota")) == ["ctx://files/notes/quota.md"]


def test_unranked_blocks_get_the_rank_score(tmp_path: Path) -> None:
    """A required instruction is not ranked: its score is 1 / rank; node ids are stable."""
    ctx = TaskContext("li-rank", host=PluginHost(allow=["taskctx-fts"]), state_dir=tmp_path)
    ctx.put(role="instruction", content="Do not modify source files.", required=True)
    memory = MemorySource()
    memory.put("a.txt", "upload notes")
    ctx.attach(memory, binding_id="mem")
    nodes = _retriever(ctx).retrieve("upload")
    first = nodes[0]
    assert first.node.metadata["role"] == "instruction"
    assert first.node.metadata["score"] is None
    assert first.score == 1.0
    for rank, node in enumerate(nodes[:-1], start=1):
        kernel_score = node.node.metadata["score"]
        assert node.score == (1.0 / rank if kernel_score is None else kernel_score)
    again = _retriever(ctx).retrieve("upload")
    assert [n.node.node_id for n in again[:-1]] == [n.node.node_id for n in nodes[:-1]]


def test_filters_reach_the_kernel(ctx: TaskContext) -> None:
    """A path_prefix filter is the kernel's: no block outside it is returned."""
    nodes = _retriever(ctx, filters={"path_prefix": "notes/retry"}).retrieve("upload")
    assert _refs(nodes) == ["ctx://files/notes/retry.md"]
