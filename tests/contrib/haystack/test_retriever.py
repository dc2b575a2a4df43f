"""TaskContextRetriever in real Haystack pipelines over a real TaskContext."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from haystack import Document, Pipeline
from haystack.core.errors import SerializationError
from taskctx_haystack import COVERAGE_KIND, TaskContextRetriever
from taskctx_records import RecordStore

from taskctx import ContextBudget, ContextReadIntent, PluginHost, TaskContext
from taskctx.flatview import block_metadata, coverage_statement
from taskctx.testing import MemorySource

NOTES = {
    "notes/upload.md": "The upload times out after thirty seconds on large files.",
    "notes/login.md": "Login uses a session cookie that expires after one hour.",
    "notes/cache.md": "The cache is warmed at startup from the last snapshot.",
}


@pytest.fixture
def host() -> PluginHost:
    """The first-party plugins these tests read through, loaded by name only."""
    return PluginHost(allow=["taskctx-fts", "taskctx-records", "taskctx-haystack"], strict=True)


@pytest.fixture
def ctx(host: PluginHost, tmp_path: Path) -> TaskContext:
    """A TaskContext over the notes (binding ``notes``)."""
    context = TaskContext("haystack-task", host=host, state_dir=tmp_path / "state")
    context.attach(MemorySource(dict(NOTES), identity="test:haystack-notes"), binding_id="notes")
    return context


def _pipeline(retriever: TaskContextRetriever) -> Pipeline:
    pipeline = Pipeline()
    pipeline.add_component("context", retriever)
    return pipeline


def _documents(pipeline: Pipeline, query: str, **extra: object) -> list[Document]:
    result = pipeline.run({"context": {"query": query, **extra}})
    documents: list[Document] = result["context"]["documents"]
    return documents


def test_plugin_loads_and_registers_nothing(host: PluginHost) -> None:
    """The entry point loads under a strict host with warnings as errors, with no hooks."""
    (record,) = [p for p in host.plugins() if p.name == "taskctx-haystack"]
    assert (record.status, record.hooks, record.error) == ("loaded", (), None)


def test_loading_the_plugin_does_not_import_haystack(tmp_path: Path) -> None:
    """The kernel loading the plugin module leaves Haystack unimported."""
    code = (
        "import sys; from taskctx import PluginHost; "
        "PluginHost(allow=['taskctx-haystack'], strict=True); "
        "print('haystack' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "False"


def test_metadata_equals_the_package_facts(ctx: TaskContext) -> None:
    """Each Document is one block: content, flatview metadata (package_id is the run's
    own package), score, and an id stable across runs."""
    pipeline = _pipeline(TaskContextRetriever(ctx, budget=ContextBudget(4000, 5)))
    documents = _documents(pipeline, "upload times out")
    package = ctx.reader("haystack", budget=ContextBudget(4000, 5)).read("upload times out")
    assert [d.content for d in documents] == [b.content for b in package.blocks]
    assert str(documents[0].meta["ref"]).endswith("notes/upload.md")
    for rank, (doc, block) in enumerate(zip(documents, package.blocks, strict=True), start=1):
        expected = block_metadata(package, block, rank)
        assert {k: v for k, v in doc.meta.items() if k != "package_id"} == {
            k: v for k, v in expected.items() if k != "package_id"
        }
        assert doc.score == block.score
    again = _documents(pipeline, "upload times out")
    assert [d.id for d in again] == [d.id for d in documents]


def test_coverage_document_closes_the_list(ctx: TaskContext) -> None:
    """include_coverage adds one Document with coverage_statement, meta kind=coverage."""
    retriever = TaskContextRetriever(ctx, include_coverage=True)
    documents = _documents(_pipeline(retriever), "session cookie", top_k=1)
    blocks, coverage = documents[:-1], documents[-1]
    assert len(blocks) == 1
    assert all(d.meta.get("kind") != COVERAGE_KIND for d in blocks)
    assert coverage.meta["kind"] == COVERAGE_KIND
    assert coverage.meta["package_id"] == blocks[0].meta["package_id"]
    assert coverage.content is not None
    assert coverage.content.startswith(f"Coverage of package {blocks[0].meta['package_id']}")
    assert "- notes (memory" in coverage.content or "- notes (" in coverage.content


def test_no_match_is_empty_with_no_match_coverage(ctx: TaskContext) -> None:
    """No block matches: only the coverage Document, saying no match in scope."""
    retriever = TaskContextRetriever(ctx, include_coverage=True)
    documents = _documents(_pipeline(retriever), "zebra quantum")
    assert len(documents) == 1
    assert documents[0].content is not None
    assert "no match in scope" in documents[0].content
    assert _documents(_pipeline(TaskContextRetriever(ctx)), "zebra quantum") == []


def test_a_new_run_sees_new_records(host: PluginHost, tmp_path: Path) -> None:
    """Each run reads a new snapshot: a record put between runs is delivered."""
    store = RecordStore(tmp_path / "records")
    ctx = TaskContext("records-task", host=host, state_dir=tmp_path / "state")
    ctx.attach(store.source(collections=["observations"]), binding_id="records")
    pipeline = _pipeline(TaskContextRetriever(ctx, include_coverage=True))
    store.put("the deploy failed on a missing secret", collection="observations")
    first = _documents(pipeline, "deploy secret")
    store.put("the rollback secret was rotated yesterday", collection="observations")
    second = _documents(pipeline, "rollback secret")
    assert len(second) > len(first) - 1
    assert any("rotated" in (d.content or "") for d in second)
    assert all(d.meta["source_kind"] == "record_store" for d in second[:-1])
    assert second[0].meta["source_revision"] != first[0].meta["source_revision"]
    store.close()


def test_filters_and_phase_reach_the_reader(ctx: TaskContext) -> None:
    """Structural filters are the reader's: an unknown binding fails the run."""
    with pytest.raises(Exception, match="nope"):
        TaskContextRetriever(ctx, filters={"bindings": ["nope"]}).run("upload")
    only = TaskContextRetriever(ctx, phase="review", filters={"bindings": ["notes"]})
    assert only.run("upload")["documents"]
    package = ctx.reader("haystack").read(ContextReadIntent(query="upload"))
    assert coverage_statement(package).startswith("Coverage of package")


def test_pipeline_run_async_uses_run_async(ctx: TaskContext) -> None:
    """Pipeline.run_async runs the component's run_async: the same blocks as run."""
    retriever = TaskContextRetriever(ctx)
    assert getattr(retriever, "__haystack_supports_async__", False)
    pipeline = _pipeline(retriever)
    result = asyncio.run(pipeline.run_async({"context": {"query": "cache startup"}}))
    assert [d.content for d in result["context"]["documents"]] == [
        d.content for d in retriever.run("cache startup")["documents"]
    ]


def test_a_pipeline_with_the_retriever_cannot_be_serialized(ctx: TaskContext) -> None:
    """A TaskContext is not serializable: Haystack says so instead of saving half a pipeline."""
    with pytest.raises(SerializationError):
        _pipeline(TaskContextRetriever(ctx)).dumps()
