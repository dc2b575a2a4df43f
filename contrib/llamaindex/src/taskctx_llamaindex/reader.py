"""A LlamaIndex reader: every item of one binding as a ``Document``, read exactly."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

from llama_index.core.readers.base import BaseReader
from llama_index.core.schema import Document

from taskctx import (
    ContextBudget,
    ContextConsumer,
    ContextPackage,
    ContextReadIntent,
    ContextRef,
    SourceDescriptor,
    TaskContext,
    TaskCtxError,
)
from taskctx.reader import ContextReader
from taskctx_llamaindex.nodes import block_document

__all__ = ["TaskContextReader", "UndeliveredItemError"]


class UndeliveredItemError(TaskCtxError):
    """The kernel delivered no text of a listed item (the message says why)."""


class TaskContextReader(BaseReader):
    """Loads every item of binding ``binding_id`` of ``context`` as one ``Document``.

    The items are the kernel's listing (:meth:`TaskContext.list_descriptors`, hidden
    paths only with ``include_hidden``); each is read through one reader as an explicit
    ref, so its text is exact or fails closed within ``max_chars``. A document's text is
    the delivered content, its id ``"<ref>@<digest>"``, its metadata
    :func:`taskctx.flatview.block_metadata`. An item the kernel delivers no text of (a
    binary file, say) raises :class:`UndeliveredItemError` naming the kernel's reasons,
    or is left out with ``skip_undelivered``.
    """

    def __init__(
        self,
        context: TaskContext,
        binding_id: str,
        *,
        consumer: str | ContextConsumer = "llamaindex-reader",
        max_chars: int = 1_000_000,
        include_hidden: bool = False,
        skip_undelivered: bool = False,
    ) -> None:
        """Keep the settings; nothing is listed or read until a load."""
        self.context = context
        self.binding_id = binding_id
        self.consumer = consumer
        self.max_chars = max_chars
        self.include_hidden = include_hidden
        self.skip_undelivered = skip_undelivered

    def _reader(self) -> ContextReader:
        budget = ContextBudget(max_chars=self.max_chars, max_blocks=50)
        return self.context.reader(consumer=self.consumer, budget=budget)

    def _intent(self, descriptor: SourceDescriptor) -> ContextReadIntent:
        ref = ContextRef(binding=self.binding_id, path=descriptor.path, scope=descriptor.scope)
        return ContextReadIntent(
            query="",
            explicit_refs=(ref,),
            filters={"bindings": [self.binding_id]},
            optional_selection="none",
        )

    def _document(self, package: ContextPackage, descriptor: SourceDescriptor) -> Document | None:
        for rank, block in enumerate(package.blocks, start=1):
            if block.binding_id == self.binding_id and block.ref.path == descriptor.path:
                return block_document(package, block, rank)
        if self.skip_undelivered:
            return None
        reasons = ", ".join(o.reason.value for o in package.omissions) or "none given"
        raise UndeliveredItemError(
            f"{self.binding_id}/{descriptor.path}: no text delivered (omissions: {reasons})"
        )

    def _descriptors(self) -> Iterator[SourceDescriptor]:
        cursor: str | None = None
        while True:
            listing = self.context.list_descriptors(cursor, include_hidden=self.include_hidden)
            for item in listing.items:
                if item.binding_id == self.binding_id:
                    yield item.descriptor
            cursor = listing.next_cursor
            if cursor is None:
                return

    def lazy_load_data(self, *args: Any, **load_kwargs: Any) -> Iterator[Document]:
        """One document per item of the binding, in listing order (no arguments)."""
        if self.binding_id not in self.context.bindings:
            raise KeyError(f"{self.binding_id!r} is not a binding of {self.context.task_id!r}")
        reader = self._reader()
        for descriptor in self._descriptors():
            document = self._document(reader.read(self._intent(descriptor)), descriptor)
            if document is not None:
                yield document

    async def _alazy(self) -> AsyncIterator[Document]:
        reader = self._reader()
        cursor: str | None = None
        while True:
            listing = await self.context.async_list_descriptors(
                cursor, include_hidden=self.include_hidden
            )
            for item in listing.items:
                if item.binding_id != self.binding_id:
                    continue
                package = await reader.async_read(self._intent(item.descriptor))
                document = self._document(package, item.descriptor)
                if document is not None:
                    yield document
            cursor = listing.next_cursor
            if cursor is None:
                return

    async def aload_data(self, *args: Any, **load_kwargs: Any) -> list[Document]:
        """The documents of :meth:`lazy_load_data`, read through the kernel's async API."""
        if self.binding_id not in self.context.bindings:
            raise KeyError(f"{self.binding_id!r} is not a binding of {self.context.task_id!r}")
        return [document async for document in self._alazy()]
