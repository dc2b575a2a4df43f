"""``ContextService``: one TaskContext made from a ServerConfig, read the kernel's way.

Everything the MCP server answers comes from here, and everything here is the kernel's:
readers pin snapshots, page with signed cursors and validate aliases; sources enforce
their own boundaries and the media rules. The service only keeps track of which reader
issued what, so ``read_next`` and ``read_ref`` find the reader a cursor or alias belongs
to.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import attrs

from taskctx import (
    ContextBudget,
    ContextPackage,
    ContextReader,
    ContextReadIntent,
    ContextRef,
    PluginHost,
    SourceDescriptor,
    TaskContext,
    TaskCtxError,
    UnknownBindingError,
)
from taskctx.imageprep import MAX_SEGMENTS
from taskctx.listing import current_revisions
from taskctx_mcp.config import ServerConfig
from taskctx_mcp.errors import ServiceError, check_delivered
from taskctx_mcp.uris import uri_to_ref

__all__ = ["ContextService", "ResourcePage", "ServiceError"]

_KEEP_READERS = 64  # readers whose cursors and aliases stay resolvable in this process


@attrs.define(slots=True, frozen=True)
class ResourcePage:
    """One page of ``resources/list``: descriptors by binding, a cursor, and the bindings
    that did not answer when the listing began (listed as unavailable, never as empty)."""

    items: tuple[tuple[str, SourceDescriptor], ...]
    next_cursor: str | None
    unavailable: tuple[str, ...] = ()


@attrs.define(slots=True)
class _Read:
    """A reader and the packages it issued (its aliases are unique across them)."""

    reader: ContextReader
    packages: list[ContextPackage] = attrs.field(factory=list)


def _host(config: ServerConfig) -> PluginHost:
    if config.plugins is None:
        return PluginHost.from_environment()
    return PluginHost(allow=config.plugins)


@attrs.define(slots=True)
class ContextService:
    """A TaskContext with the configured bindings, and the reads made on it."""

    config: ServerConfig
    context: TaskContext
    working_state: Any = None
    """A ``taskctx_memory.WorkingState`` when session memory is bound, else None."""
    _reads: OrderedDict[str, _Read] = attrs.field(factory=OrderedDict)
    _by_cursor: dict[str, str] = attrs.field(factory=dict)
    _by_package: dict[str, str] = attrs.field(factory=dict)
    _next_read: int = 1

    @classmethod
    def from_config(cls, config: ServerConfig, *, host: PluginHost | None = None) -> ContextService:
        """Attach every configured binding under the configuration's RunConfiguration."""
        context = TaskContext(
            config.task_id, host=host or _host(config), configuration=config.configuration
        )
        working_state = None
        for binding in config.bindings:
            try:
                if binding.kind == "session_memory" and working_state is None:
                    # the writable state first: it creates the store the source reads
                    working_state = _working_state(binding.options)
                source = context.source(binding.kind, **dict(binding.options))
                context.attach(source, binding_id=binding.binding_id)
            except (TypeError, KeyError, TaskCtxError) as exc:  # a factory refused options
                raise ServiceError(
                    f"binding {binding.binding_id!r} ({binding.kind}): {exc}"
                ) from exc
        return cls(config, context, working_state)

    # -- reads -------------------------------------------------------------------------

    def _new_read(self, budget: ContextBudget) -> tuple[str, _Read]:
        reader = self.context.reader(
            self.config.consumer, budget=budget, cursor_ttl=self.config.cursor_ttl
        )
        read_id = f"read-{self._next_read}"
        self._next_read += 1
        self._reads[read_id] = read = _Read(reader)
        while len(self._reads) > _KEEP_READERS:
            _, old = self._reads.popitem(last=False)
            for package in old.packages:
                self._by_package.pop(package.package_id, None)
                if package.cursor is not None:
                    self._by_cursor.pop(package.cursor, None)
        return read_id, read

    def _keep(self, read_id: str, package: ContextPackage) -> ContextPackage:
        read = self._reads.get(read_id)
        if read is not None:
            read.packages.append(package)
            self._by_package[package.package_id] = read_id
            if package.cursor is not None:
                self._by_cursor[package.cursor] = read_id
        return package

    def _budget(self, max_chars: int | None, max_blocks: int | None) -> ContextBudget:
        base = self.config.budget
        return ContextBudget(
            max_chars=max_chars or base.max_chars, max_blocks=max_blocks or base.max_blocks
        )

    async def read_context(
        self,
        query: str,
        *,
        max_chars: int | None = None,
        max_blocks: int | None = None,
        filters: Any = None,
        refs: tuple[str, ...] = (),
        required_overflow: str = "fail",
    ) -> ContextPackage:
        """A fresh read (a new reader, so it sees the current data) of its first page."""
        explicit = tuple(self.resolve(r) for r in refs)
        intent = ContextReadIntent(
            query=query,
            explicit_refs=explicit,
            filters=filters if filters is not None else {},
            required_overflow=required_overflow,
        )
        read_id, read = self._new_read(self._budget(max_chars, max_blocks))
        return self._keep(read_id, await read.reader.async_read(intent))

    async def read_next(self, cursor: str) -> ContextPackage:
        """The next page of the read ``cursor`` continues (from its pinned snapshot).

        A cursor issued by another process (or a reader no longer kept) continues in a
        new reader, as the kernel allows; aliases then restart for that reader.
        """
        read_id = self._by_cursor.get(cursor)
        read = self._reads.get(read_id) if read_id is not None else None
        if read_id is None or read is None:
            read_id, read = self._new_read(self.config.budget)
        return self._keep(read_id, await read.reader.async_read_next(cursor))

    def _latest_packages(self, package_id: str | None) -> list[ContextPackage]:
        if package_id is not None:
            read_id = self._by_package.get(package_id)
            if read_id is None or read_id not in self._reads:
                raise ServiceError(f"no package {package_id!r} was issued by this server")
            return [p for p in self._reads[read_id].packages if p.package_id == package_id]
        for read in reversed(self._reads.values()):
            if read.packages:
                return read.packages
        return []

    def resolve(self, text: str, package_id: str | None = None) -> ContextRef:
        """A canonical ref from an alias of the latest read (or of ``package_id``), a
        ``ctx://`` ref or a resource URI; the kernel validates an alias."""
        text = text.strip()
        if text.startswith("ctx://"):
            return self.bound(ContextRef.parse(text))
        if text.startswith("taskctx://"):
            return self.bound(uri_to_ref(text))
        packages = self._latest_packages(package_id)
        if not packages:
            raise ServiceError(
                f"alias {text!r}: no read has issued aliases yet; call read_context first"
            )
        error: TaskCtxError | None = None
        for package in reversed(packages):
            try:
                return package.resolve_alias(text)
            except TaskCtxError as exc:  # UnknownAliasError
                error = exc
        assert error is not None
        raise error

    def bound(self, ref: ContextRef) -> ContextRef:
        """``ref`` if its binding is bound here; UnknownBindingError naming the bound ones."""
        if ref.binding not in self.context.bindings:
            attached = ", ".join(map(repr, sorted(self.context.bindings))) or "none"
            raise UnknownBindingError(
                f"{ref.binding!r} is not a binding of this server; bound: {attached}"
            )
        return ref

    async def read_ref(
        self,
        ref_or_alias: str,
        *,
        scope: str | None = None,
        package_id: str | None = None,
        max_chars: int | None = None,
    ) -> ContextPackage:
        """One exact (or scoped) read of a ref: delivered whole or failing closed."""
        ref = self.resolve(ref_or_alias, package_id)
        if scope is not None:
            ref = ref.with_scope(scope)
        return await self.read_exact(ref, max_chars or self.config.budget.max_chars)

    async def read_exact(self, ref: ContextRef, max_chars: int) -> ContextPackage:
        """The package holding exactly ``ref`` (an explicit ref: never cut, never dropped)."""
        ref = self.bound(ref)
        intent = ContextReadIntent(
            query="",
            explicit_refs=(ref,),
            filters={"bindings": [ref.binding]},
            optional_selection="none",
        )
        # one item: one block, or the segments a tall image became (each counts as one)
        budget = ContextBudget(max_chars=max_chars, max_blocks=MAX_SEGMENTS)
        read_id, read = self._new_read(budget)
        return self._keep(read_id, await read.reader.async_read(intent))

    # -- resources -----------------------------------------------------------------------

    async def revisions(self) -> dict[str, str | None]:
        """Each binding's current revision (None for one that did not answer)."""
        return await current_revisions(self.context.bindings)

    async def list_resources(self, cursor: str | None) -> ResourcePage:
        """One page of descriptors (hidden files are not offered) across the bindings: the
        kernel's listing (:meth:`TaskContext.async_list_descriptors`), on one pinned
        snapshot, its cursor signed with the context's key."""
        listing = await self.context.async_list_descriptors(
            cursor, page_size=self.config.resources.page_size, cursor_ttl=self.config.cursor_ttl
        )
        return ResourcePage(
            tuple((item.binding_id, item.descriptor) for item in listing.items),
            listing.next_cursor,
            listing.unavailable,
        )

    async def read_resource(self, uri: str) -> ContextPackage:
        """The package holding the item (or scope) a resource URI names; NotDeliveredError
        (with the kernel's reason) when it holds neither text nor an image of it."""
        package = await self.read_exact(uri_to_ref(uri), self.config.resources.max_chars)
        check_delivered(package, uri)
        return package


def _working_state(options: Any) -> Any:
    """The writable working state behind a ``session_memory`` binding's options."""
    from taskctx_memory import WorkingState

    return WorkingState(options["root"], str(options["session_id"]))
