"""A LangChain retriever over a TaskContext: one package per call, as Documents.

Each call makes a new reader (so it pins a fresh snapshot and sees the data as it is now),
reads one package for the query and translates its blocks in order: the content as the
page content, :func:`taskctx.flatview.block_metadata` as the metadata. Asked to, it closes
the list with one Document that states the package's coverage in words
(:func:`taskctx.flatview.coverage_statement`). What is delivered, and in which order, is
the kernel's decision; ``k`` only caps the number of blocks of that call's budget.
"""

from __future__ import annotations

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import Field

from taskctx import (
    ContextBudget,
    ContextConsumer,
    ContextFilters,
    ContextPackage,
    ContextReader,
    ContextReadIntent,
    TaskContext,
)
from taskctx.flatview import COVERAGE_KIND, block_metadata, coverage_metadata, coverage_statement

__all__ = ["COVERAGE_KIND", "TaskContextRetriever", "package_documents"]


def package_documents(package: ContextPackage, *, include_coverage: bool = False) -> list[Document]:
    """The Documents of ``package``: one per block, in the package's order, and (with
    ``include_coverage``) one closing Document stating the package's coverage."""
    documents = [
        Document(page_content=block.content, metadata=block_metadata(package, block, rank))
        for rank, block in enumerate(package.blocks, start=1)
    ]
    if include_coverage:
        documents.append(
            Document(
                page_content=coverage_statement(package),
                metadata=coverage_metadata(package),
            )
        )
    return documents


class TaskContextRetriever(BaseRetriever):
    """Retrieves the package a TaskContext delivers for a query, as LangChain Documents.

    ``TaskContextRetriever(context=ctx, consumer="planner", budget=ContextBudget(6000, 12))``;
    ``retriever.invoke("upload timeout", k=3)`` reads at most three blocks. Every call
    makes a new reader, so a later call sees data written since.
    """

    context: TaskContext
    """The task context read from."""
    consumer: str | ContextConsumer = "langchain"
    """Who reads: a consumer name or a :class:`~taskctx.ContextConsumer`."""
    budget: ContextBudget = Field(default_factory=ContextBudget)
    """The budget of each package (``k`` replaces its ``max_blocks``)."""
    phase: str | None = None
    """The task phase the reader is made for."""
    filters: ContextFilters = Field(default_factory=ContextFilters)
    """Structural filters of each read (bindings, source kinds, path prefix, ...)."""
    k: int | None = Field(default=None, ge=1)
    """The most blocks a call returns unless the call passes ``k``; None: the budget's."""
    include_coverage: bool = False
    """Close each result with one Document stating the package's coverage in words."""

    def _reader(self, k: int | None) -> ContextReader:
        limit = k if k is not None else self.k
        budget = self.budget
        if limit is not None:
            budget = ContextBudget(max_chars=budget.max_chars, max_blocks=limit)
        return self.context.reader(consumer=self.consumer, phase=self.phase, budget=budget)

    def _intent(self, query: str) -> ContextReadIntent:
        return ContextReadIntent(query=query, filters=self.filters)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        """The Documents of one package read for ``query`` (at most ``k`` blocks)."""
        package = self._reader(k).read(self._intent(query))
        return package_documents(package, include_coverage=self.include_coverage)

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
    ) -> list[Document]:
        """The async twin of :meth:`_get_relevant_documents`, through ``async_read``."""
        package = await self._reader(k).async_read(self._intent(query))
        return package_documents(package, include_coverage=self.include_coverage)
