"""TaskContextRetriever: metadata from the package, coverage in words, async, fresh reads."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.documents import Document
from taskctx_langchain import COVERAGE_KIND, TaskContextRetriever
from taskctx_workspace import TaskWorkspace

from taskctx import (
    ContextBudget,
    ContextConsumer,
    ContextReadIntent,
    PluginHost,
    TaskContext,
    sha256_digest,
)
from taskctx.flatview import METADATA_FIELDS, coverage_statement
from tests.contrib.langchain.conftest import FILES


def _blocks(documents: list[Document]) -> list[Document]:
    return [d for d in documents if d.metadata.get("kind") != COVERAGE_KIND]


def test_metadata_fields_are_the_package_facts(ctx: TaskContext) -> None:
    """Each Document carries the flatview fields: its ref, digest, snapshot and coverage."""
    retriever = TaskContextRetriever(context=ctx, consumer="planner", k=3)
    documents = retriever.invoke("upload")
    package = ctx.reader("planner", budget=ContextBudget(max_blocks=3)).read("upload")
    assert len(documents) == len(package.blocks) == 3
    for rank, (document, block) in enumerate(zip(documents, package.blocks, strict=True), 1):
        assert set(document.metadata) == set(METADATA_FIELDS)
        assert document.page_content == block.content == FILES[block.ref.path]
        assert document.metadata["ref"] == str(block.ref)
        assert document.metadata["digest"] == block.digest == sha256_digest(block.content)
        assert document.metadata["rank"] == rank
        assert document.metadata["context_revision"] == ctx.revision
        coverage = package.source_coverage["files"]
        assert document.metadata["coverage_status"] == coverage.status.value == "partial"
        assert document.metadata["coverage_outcome"] == coverage.outcome.value == "matched"
        assert document.metadata["coverage_considered"] == coverage.considered == 4
        assert document.metadata["coverage_delivered"] == coverage.delivered == 3
        assert document.metadata["coverage_omitted"] == coverage.omitted == 1
        assert document.metadata["has_more"] is package.has_more is True
    assert len({d.metadata["package_id"] for d in documents}) == 1


def test_coverage_document_closes_the_list(ctx: TaskContext) -> None:
    """include_coverage adds one last Document: the package's coverage statement."""
    retriever = TaskContextRetriever(context=ctx, k=2, include_coverage=True)
    documents = retriever.invoke("upload")
    assert len(documents) == 3
    *blocks, coverage = documents
    package_id = blocks[0].metadata["package_id"]
    assert coverage.metadata == {
        "kind": COVERAGE_KIND,
        "package_id": package_id,
        "task_id": "lc-task",
        "context_revision": ctx.revision,
        "has_more": True,
    }
    assert coverage.page_content.splitlines() == [
        f"Coverage of package {package_id} (task lc-task, snapshot {ctx.revision}): "
        "2 blocks delivered.",
        "- files (task_workspace): partial, matched; 2 delivered of 4 considered, 2 left out "
        "(in this package: over_block_budget: 1).",
        "More of the same snapshot can be read (has_more).",
    ]


def test_k_in_invoke_overrides_the_constructor_and_budget(ctx: TaskContext) -> None:
    """invoke(k=N) caps that call's blocks; the constructor's k and the budget otherwise."""
    retriever = TaskContextRetriever(context=ctx, k=3, budget=ContextBudget(4000, 1))
    assert len(retriever.invoke("upload")) == 3
    assert len(retriever.invoke("upload", k=2)) == 2
    assert (
        len(TaskContextRetriever(context=ctx, budget=ContextBudget(4000, 1)).invoke("upload")) == 1
    )
    assert len(TaskContextRetriever(context=ctx).invoke("upload")) == 4


def test_consumer_phase_and_filters_reach_the_reader(ctx: TaskContext) -> None:
    """The consumer, phase and filters are the reader's and the read's own."""
    retriever = TaskContextRetriever(
        context=ctx,
        consumer=ContextConsumer("reviewer"),
        phase="planning",
        filters={"path_prefix": "notes/"},
    )
    documents = retriever.invoke("project")
    assert documents == []
    reader = ctx.readers()[-1]
    assert reader.consumer.name == "reviewer"
    assert reader.phase == "planning"


async def test_async_path_reads_through_async_read(ctx: TaskContext) -> None:
    """ainvoke returns the same translation as invoke, read by async_read."""
    retriever = TaskContextRetriever(context=ctx, k=2, include_coverage=True)
    documents = await retriever.ainvoke("upload")
    assert len(documents) == 3
    assert documents[-1].metadata["kind"] == COVERAGE_KIND
    package = await ctx.reader("langchain", budget=ContextBudget(max_blocks=2)).async_read("upload")
    assert [d.metadata["ref"] for d in documents[:2]] == [str(b.ref) for b in package.blocks]
    assert [d.page_content for d in documents[:2]] == [b.content for b in package.blocks]


def test_no_match_returns_nothing_and_says_no_match(ctx: TaskContext) -> None:
    """A query that matches nothing gives [] (and, asked, a coverage Document saying so)."""
    assert TaskContextRetriever(context=ctx).invoke("zeppelin") == []
    documents = TaskContextRetriever(context=ctx, include_coverage=True).invoke("zeppelin")
    assert len(documents) == 1
    assert documents[0].metadata["kind"] == COVERAGE_KIND
    assert "- files (task_workspace): complete, no match in scope; 0 delivered" in (
        documents[0].page_content
    )


def test_a_new_invoke_sees_new_data(tmp_path: Path) -> None:
    """Each call makes a new reader: a file written after a call is found by the next."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.md").write_text("The upload times out.\n", encoding="utf-8")
    ctx = TaskContext("fresh", host=PluginHost(allow=["taskctx-fts"]), state_dir=tmp_path / "s")
    ctx.attach(TaskWorkspace(project, mode="read_only").source(), binding_id="files")
    retriever = TaskContextRetriever(context=ctx)
    first = retriever.invoke("upload")
    assert [d.metadata["ref"] for d in first] == ["ctx://files/a.md"]
    (project / "b.md").write_text("A second upload note.\n", encoding="utf-8")
    second = retriever.invoke("upload")
    assert sorted(d.metadata["ref"] for d in second) == ["ctx://files/a.md", "ctx://files/b.md"]
    assert second[0].metadata["source_revision"] != first[0].metadata["source_revision"]


def test_required_entries_count_towards_k(ctx: TaskContext) -> None:
    """A required direct entry is delivered first and is one of the k blocks."""
    ctx.put(role="instruction", content="Do not modify files.", required=True)
    documents = TaskContextRetriever(context=ctx, k=2).invoke("upload")
    assert [d.metadata["binding_id"] for d in documents] == ["_direct", "files"]
    assert documents[0].metadata["required"] is True


def test_an_unknown_binding_filter_fails_before_reading(ctx: TaskContext) -> None:
    """A filter naming no attached binding raises, as the kernel's read does."""
    retriever = TaskContextRetriever(context=ctx, filters={"bindings": ["nope"]})
    with pytest.raises(LookupError, match="nope"):
        retriever.invoke("upload")


def test_statement_is_flatviews(ctx: TaskContext) -> None:
    """The coverage Document's text is coverage_statement of a package of the same read."""
    documents = TaskContextRetriever(context=ctx, include_coverage=True).invoke("zeppelin")
    package = ctx.reader("langchain").read(ContextReadIntent(query="zeppelin"))
    expected = coverage_statement(package).replace(package.package_id, "PKG")
    got = documents[-1].page_content.replace(documents[-1].metadata["package_id"], "PKG")
    assert got == expected
