"""A LangChain document loader over one binding of a TaskContext, lazy by descriptor.

``lazy_load`` pages through the context's descriptor listing, keeps the items of one
binding, and reads each one exactly through the kernel (an explicit ref: never cut, never
dropped; an original over the character budget is delivered whole), yielding its block
as a Document with :func:`taskctx.flatview.block_metadata` as metadata. One reader serves
the whole load, so every item comes from one pinned snapshot; an item that changed
during the load fails closed (``StaleReaderError``) rather than mixing snapshots.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

from langchain_core.document_loaders import BaseLoader
from langchain_core.documents import Document

from taskctx import (
    ContextBudget,
    ContextConsumer,
    ContextPackage,
    ContextReader,
    ContextReadIntent,
    ContextRef,
    SourceDescriptor,
    TaskContext,
    UnknownBindingError,
)
from taskctx.flatview import block_metadata

__all__ = ["TaskContextSourceLoader"]

# one item: one block, or the segments a tall image became (each one block)
_MAX_BLOCKS = 64


class TaskContextSourceLoader(BaseLoader):
    """Loads every item of one binding of a TaskContext, one Document per delivered block.

    ``TaskContextSourceLoader(ctx, "project-files").lazy_load()`` yields the items one by
    one, as the listing pages them; ``max_chars`` is the budget of each item's read.
    """

    def __init__(
        self,
        context: TaskContext,
        binding_id: str,
        *,
        consumer: str | ContextConsumer = "langchain-loader",
        max_chars: int = 20_000,
        page_size: int = 100,
        include_hidden: bool = False,
    ) -> None:
        """Load ``binding_id`` of ``context``; an unknown binding fails here."""
        if binding_id not in context.bindings:
            raise UnknownBindingError(f"no binding {binding_id!r} in task {context.task_id!r}")
        self.context = context
        self.binding_id = binding_id
        self.consumer = consumer
        self.budget = ContextBudget(max_chars=max_chars, max_blocks=_MAX_BLOCKS)
        self.page_size = page_size
        self.include_hidden = include_hidden

    def _reader(self) -> ContextReader:
        return self.context.reader(consumer=self.consumer, budget=self.budget)

    def _intent(self, descriptor: SourceDescriptor) -> ContextReadIntent:
        return ContextReadIntent(
            explicit_refs=(
                ContextRef(binding=self.binding_id, path=descriptor.path, scope=descriptor.scope),
            ),
            filters={"bindings": [self.binding_id], "include_hidden": self.include_hidden},
            optional_selection="none",
            required_overflow="deliver",
        )

    def _documents(self, package: ContextPackage, path: str) -> list[Document]:
        # the item's own blocks: not the direct entries or required items every read holds
        return [
            Document(page_content=block.content, metadata=block_metadata(package, block, rank))
            for rank, block in enumerate(package.blocks, start=1)
            if block.ref.binding == self.binding_id and block.ref.path == path
        ]

    def lazy_load(self) -> Iterator[Document]:
        """The binding's items, in listing order, each read exactly when reached."""
        reader = self._reader()
        cursor: str | None = None
        while True:
            listing = self.context.list_descriptors(
                cursor, page_size=self.page_size, include_hidden=self.include_hidden
            )
            for item in listing.items:
                if item.binding_id == self.binding_id:
                    package = reader.read(self._intent(item.descriptor))
                    yield from self._documents(package, item.descriptor.path)
            if listing.next_cursor is None:
                return
            cursor = listing.next_cursor

    async def alazy_load(self) -> AsyncIterator[Document]:
        """The async twin of :meth:`lazy_load`, through ``async_read``."""
        reader = self._reader()
        cursor: str | None = None
        while True:
            listing = await self.context.async_list_descriptors(
                cursor, page_size=self.page_size, include_hidden=self.include_hidden
            )
            for item in listing.items:
                if item.binding_id == self.binding_id:
                    package = await reader.async_read(self._intent(item.descriptor))
                    for document in self._documents(package, item.descriptor.path):
                        yield document
            if listing.next_cursor is None:
                return
            cursor = listing.next_cursor
