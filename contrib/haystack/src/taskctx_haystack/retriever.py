"""A Haystack retriever component over a TaskContext: one package per run, as Documents.

Each run makes a NEW reader (a new snapshot, so a run sees what changed since the last)
and reads one package for the query. Every block becomes a Document: the block's
content, its flat facts from :func:`taskctx.flatview.block_metadata` as meta, its score,
and an id stable for the same ref and content. With ``include_coverage`` one closing
Document says in words what the package covers and leaves out. The kernel decides what
is delivered; ``top_k`` only lowers the budget's block limit.

A TaskContext cannot be serialized, so a pipeline holding this component cannot be
saved with ``Pipeline.dumps``/``to_dict`` (SerializationError); build it in code.
"""

from __future__ import annotations

import hashlib
from typing import Any

from haystack import Document, component

from taskctx import ContextBudget, ContextPackage, ContextReadIntent, TaskContext
from taskctx.flatview import COVERAGE_KIND, block_metadata, coverage_metadata, coverage_statement
from taskctx.model import ContextConsumer, ContextFilters

__all__ = ["COVERAGE_KIND", "TaskContextRetriever", "package_documents"]


def _stable_id(*parts: str) -> str:
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()


def package_documents(package: ContextPackage, *, include_coverage: bool) -> list[Document]:
    """The Documents of ``package``: one per block in order, then (``include_coverage``)
    the coverage statement as a Document with ``meta["kind"] == "coverage"``."""
    documents = [
        Document(
            id=_stable_id(str(block.ref), block.digest),
            content=block.content,
            meta=block_metadata(package, block, rank),
            score=block.score,
        )
        for rank, block in enumerate(package.blocks, start=1)
    ]
    if include_coverage:
        statement = coverage_statement(package)
        documents.append(
            Document(
                id=_stable_id(package.package_id, "coverage", statement),
                content=statement,
                meta=coverage_metadata(package),
            )
        )
    return documents


@component
class TaskContextRetriever:
    """Retrieves a taskctx package for a query as Haystack Documents (sync and async)."""

    def __init__(
        self,
        context: TaskContext,
        *,
        consumer: str | ContextConsumer = "haystack",
        budget: ContextBudget | None = None,
        phase: str | None = None,
        filters: ContextFilters | dict[str, Any] | None = None,
        include_coverage: bool = False,
    ) -> None:
        """Read ``context`` as ``consumer`` within ``budget`` (the kernel's default
        without), in ``phase``, with the structural ``filters`` of ContextReadIntent."""
        self.context = context
        self.consumer = consumer
        self.budget = budget or ContextBudget()
        self.phase = phase
        self.filters = ContextFilters.model_validate(filters or {})
        self.include_coverage = include_coverage

    def _reader_and_intent(self, query: str, top_k: int | None) -> tuple[Any, ContextReadIntent]:
        if top_k is not None and top_k < 1:
            raise ValueError("top_k must be at least 1")
        budget = self.budget
        if top_k is not None and top_k < budget.max_blocks:
            budget = ContextBudget(max_chars=budget.max_chars, max_blocks=top_k)
        reader = self.context.reader(consumer=self.consumer, phase=self.phase, budget=budget)
        return reader, ContextReadIntent(query=query, filters=self.filters)

    @component.output_types(documents=list[Document])
    def run(self, query: str, top_k: int | None = None) -> dict[str, list[Document]]:
        """One package for ``query`` from a new reader; ``top_k`` caps the blocks."""
        reader, intent = self._reader_and_intent(query, top_k)
        package = reader.read(intent)
        return {"documents": package_documents(package, include_coverage=self.include_coverage)}

    @component.output_types(documents=list[Document])
    async def run_async(self, query: str, top_k: int | None = None) -> dict[str, list[Document]]:
        """:meth:`run` on the reader's async path (``Pipeline.run_async`` calls it)."""
        reader, intent = self._reader_and_intent(query, top_k)
        package = await reader.async_read(intent)
        return {"documents": package_documents(package, include_coverage=self.include_coverage)}
