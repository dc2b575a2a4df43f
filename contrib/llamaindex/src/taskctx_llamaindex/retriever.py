"""A LlamaIndex retriever over a task context: one fresh kernel read per query."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from llama_index.core.callbacks import CallbackManager
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle

from taskctx import ContextBudget, ContextConsumer, ContextFilters, ContextReadIntent, TaskContext
from taskctx.reader import ContextReader
from taskctx_llamaindex.nodes import scored_nodes

__all__ = ["TaskContextRetriever"]


class TaskContextRetriever(BaseRetriever):
    """Retrieves from ``context`` for ``consumer`` within ``budget`` (and ``phase``,
    ``filters``).

    Each query makes a NEW reader, so it reads the context's current snapshot and sees
    data added since the last query; the nodes are the first page of that read (the
    ``has_more`` metadata says whether the kernel had more). Each block is a
    ``NodeWithScore`` of a ``TextNode``: text ``block.content``, id ``"<ref>@<digest>"``,
    metadata :func:`taskctx.flatview.block_metadata`. The score is ``block.score`` when
    the kernel ranked the block; an unranked block (an instruction, a required item, an
    explicit ref) gets the rank-derived score ``1 / rank``, rank 1 being the first block.
    With ``include_coverage`` one closing node (metadata ``kind="coverage"``, score None)
    holds :func:`taskctx.flatview.coverage_statement`, so the model is told what was
    covered and what was left out; a similarity cutoff postprocessor drops nodes scored
    None, so do not put one after this retriever when the coverage must reach the model.
    """

    def __init__(
        self,
        context: TaskContext,
        *,
        consumer: str | ContextConsumer,
        budget: ContextBudget | None = None,
        phase: str | None = None,
        filters: ContextFilters | Mapping[str, Any] | None = None,
        include_coverage: bool = False,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        """Keep the read settings; nothing is read until the first query."""
        super().__init__(callback_manager=callback_manager, verbose=verbose)
        self.context = context
        self.consumer = consumer
        self.budget = budget
        self.phase = phase
        self.filters = ContextFilters.model_validate(filters or {})
        self.include_coverage = include_coverage

    def _reader(self) -> ContextReader:
        return self.context.reader(consumer=self.consumer, phase=self.phase, budget=self.budget)

    def _intent(self, query_bundle: QueryBundle) -> ContextReadIntent:
        return ContextReadIntent(query=query_bundle.query_str, filters=self.filters)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """One read of the current snapshot, as nodes."""
        package = self._reader().read(self._intent(query_bundle))
        return scored_nodes(package, self.include_coverage)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """The same read through ``reader.async_read``."""
        package = await self._reader().async_read(self._intent(query_bundle))
        return scored_nodes(package, self.include_coverage)
