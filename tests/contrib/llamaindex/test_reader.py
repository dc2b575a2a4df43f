"""The reader: every item of a binding as an exact Document, and the plugin entry point."""

from __future__ import annotations

import asyncio
import warnings

import pytest
from llama_index.core import SummaryIndex
from llama_index.core.llms import MockLLM
from taskctx_llamaindex import TaskContextReader
from taskctx_llamaindex.reader import UndeliveredItemError

from taskctx import PluginHost, TaskContext
from taskctx.digests import sha256_digest
from taskctx.testing import MemorySource

from .conftest import FILES


def test_reader_yields_every_descriptor_exactly(ctx: TaskContext) -> None:
    """One Document per listed item, its text the file's exact content."""
    documents = list(TaskContextReader(ctx, "files").lazy_load_data())
    by_ref = {str(d.metadata["ref"]): d for d in documents}
    assert sorted(by_ref) == sorted(f"ctx://files/{path}" for path in FILES)
    for path, text in FILES.items():
        document = by_ref[f"ctx://files/{path}"]
        assert document.text == text
        assert document.metadata["binding_id"] == "files"
        assert document.metadata["completeness"] == "complete"
        assert document.metadata["digest"] == sha256_digest(text)
        assert document.doc_id == f"ctx://files/{path}@{document.metadata['digest']}"


def test_async_load_matches_sync(ctx: TaskContext) -> None:
    """aload_data reads the same documents through the async API."""
    reader = TaskContextReader(ctx, "files")
    synchronous = [d.doc_id for d in reader.load_data()]
    assert [d.doc_id for d in asyncio.run(reader.aload_data())] == synchronous


def test_documents_index_and_query(ctx: TaskContext) -> None:
    """The documents go into a real LlamaIndex index and come back as sources."""
    index = SummaryIndex.from_documents(TaskContextReader(ctx, "files").load_data())
    response = index.as_query_engine(llm=MockLLM()).query("upload")
    refs = {n.node.metadata["ref"] for n in response.source_nodes}
    assert "ctx://files/notes/upload.md" in refs


def test_undelivered_item_fails_closed(tmp_path: object) -> None:
    """An item with no text raises, naming it; skip_undelivered leaves it out."""
    ctx = TaskContext("li-bin", host=PluginHost(allow=["taskctx-fts"]), state_dir=str(tmp_path))
    memory = MemorySource()
    memory.put("a.txt", "text")
    memory.put("b.bin", bytes(range(256)))
    ctx.attach(memory, binding_id="mem")
    with pytest.raises(UndeliveredItemError, match=r"b\.bin"):
        TaskContextReader(ctx, "mem").load_data()
    kept = TaskContextReader(ctx, "mem", skip_undelivered=True).load_data()
    assert [d.metadata["ref"] for d in kept] == ["ctx://mem/a.txt"]


def test_unknown_binding_is_refused(ctx: TaskContext) -> None:
    """A binding the context does not have is an error, not an empty load."""
    with pytest.raises(KeyError, match="nope"):
        TaskContextReader(ctx, "nope").load_data()


def test_plugin_loads_without_warning() -> None:
    """The entry point registers nothing and the host loads it without a warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        host = PluginHost(allow=["taskctx-llamaindex"])
        host.index_providers()
