"""The retriever inside LlamaIndex's own query engine and response synthesizer."""

from __future__ import annotations

from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.response_synthesizers import ResponseMode
from llama_index.core.schema import MetadataMode
from taskctx_llamaindex import COVERAGE_KIND, TaskContextRetriever

from taskctx import ContextBudget, ContextReadIntent, TaskContext
from taskctx.flatview import block_metadata

QUERY = "upload"


def _retriever(ctx: TaskContext, include_coverage: bool = True) -> TaskContextRetriever:
    return TaskContextRetriever(
        ctx,
        consumer="li-test",
        budget=ContextBudget(max_chars=4000, max_blocks=8),
        include_coverage=include_coverage,
    )


def test_source_nodes_carry_the_kernel_metadata(ctx: TaskContext) -> None:
    """The response's source nodes hold each block's flatview metadata, in order."""
    engine = RetrieverQueryEngine.from_args(_retriever(ctx), llm=MockLLM())
    response = engine.query(QUERY)
    blocks = [n for n in response.source_nodes if n.node.metadata.get("kind") != COVERAGE_KIND]
    package = ctx.reader(consumer="li-test", budget=ContextBudget(4000, 8)).read(
        ContextReadIntent(query=QUERY)
    )
    assert len(blocks) == len(package.blocks) > 0
    for rank, (node, block) in enumerate(zip(blocks, package.blocks, strict=True), start=1):
        expected = block_metadata(package, block, rank)
        got = dict(node.node.metadata)
        assert got.pop("package_id") != expected.pop("package_id")  # another read
        assert got == expected
        assert node.node.get_content() == block.content
        assert node.node.node_id == f"{block.ref}@{block.digest}"


def test_coverage_node_reaches_the_synthesizer(ctx: TaskContext) -> None:
    """The closing coverage node is a source node and its words are in the LLM prompt."""
    engine = RetrieverQueryEngine.from_args(
        _retriever(ctx), llm=MockLLM(), response_mode=ResponseMode.COMPACT
    )
    response = engine.query(QUERY)
    last = response.source_nodes[-1]
    assert last.node.metadata["kind"] == COVERAGE_KIND
    assert last.score is None
    statement = last.node.get_content(MetadataMode.LLM)
    assert statement.startswith("Coverage of package ")
    assert "files (task_workspace)" in statement
    assert statement in str(response)  # MockLLM answers with the prompt it was given


def test_llm_sees_ref_and_completeness_not_bookkeeping(ctx: TaskContext) -> None:
    """What the model is shown of a block: ref, role, completeness; no digest or revision."""
    node = _retriever(ctx, include_coverage=False).retrieve(QUERY)[0].node
    shown = node.get_content(MetadataMode.LLM)
    assert f"ref: {node.metadata['ref']}" in shown
    assert "completeness: complete" in shown
    assert "digest" not in shown
    assert "context_revision" not in shown
    assert "None" not in shown
    assert node.get_content(MetadataMode.EMBED).endswith(node.get_content().strip())
    assert "ref:" not in node.get_content(MetadataMode.EMBED)
