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
    EnumerationRequest,
    PluginHost,
    SourceDescriptor,
    SourceUnavailableError,
    TaskContext,
    TaskCtxError,
    UnknownBindingError,
)
from taskctx.cursor import CursorSigner
from taskctx.errors import CursorError, StaleReaderError
from taskctx.media import is_hidden_path
from taskctx_mcp.config import ServerConfig
from taskctx_mcp.errors import ServiceError, check_delivered
from taskctx_mcp.uris import uri_to_ref

__all__ = ["ContextService", "ResourcePage", "ServiceError"]

RESOURCE_CURSOR_PURPOSE = "taskctx-mcp.resources.v1"
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
        read_id, read = self._new_read(ContextBudget(max_chars=max_chars, max_blocks=1))
        return self._keep(read_id, await read.reader.async_read(intent))

    # -- resources -----------------------------------------------------------------------

    def _signer(self) -> CursorSigner:
        return CursorSigner(self.context.cursor_key, RESOURCE_CURSOR_PURPOSE)

    async def revisions(self) -> dict[str, str | None]:
        """Each binding's current revision (None for one that did not answer)."""
        found: dict[str, str | None] = {}
        for binding_id, binding in self.context.bindings.items():
            try:
                found[binding_id] = await binding.source.async_revision()
            except Exception:  # a source that cannot answer is reported, never raised
                found[binding_id] = None
        return found

    async def list_resources(self, cursor: str | None) -> ResourcePage:
        """One page of descriptors (hidden files are not offered) across the bindings.

        The cursor is signed with the context's cursor key and carries the pinned
        revisions; a source that moved since the first page fails the listing
        (StaleReaderError): start again from the first page.
        """
        bindings = list(self.context.bindings)
        pinned, position, source_cursor, skip = await self._listing_position(cursor)
        size = self.config.resources.page_size
        unavailable = tuple(b for b in bindings if pinned.get(b) is None)
        items: list[tuple[str, SourceDescriptor]] = []
        while position < len(bindings):
            binding_id = bindings[position]
            revision = pinned.get(binding_id)
            if revision is None:  # unavailable when the listing began: nothing to list
                position, source_cursor, skip = position + 1, None, 0
                continue
            source = self.context.bindings[binding_id].source
            page = await source.async_enumerate_descriptors(
                EnumerationRequest(cursor=source_cursor, page_size=size, revision=revision)
            )
            if page.revision != revision:
                raise StaleReaderError(
                    f"source {binding_id!r} moved from revision {revision!r} to "
                    f"{page.revision!r} since this listing began; list again"
                )
            if page.next_cursor is not None and page.next_cursor == source_cursor:
                raise SourceUnavailableError(
                    f"source {binding_id!r} returned the same enumeration cursor twice"
                )
            listed = [d for d in page.descriptors if not is_hidden_path(d.path)]
            room = size - len(items)
            taken = listed[skip : skip + room]
            items += [(binding_id, d) for d in taken]
            if skip + len(taken) < len(listed):  # the page is full inside this source page
                return ResourcePage(
                    tuple(items),
                    self._resource_cursor(pinned, position, source_cursor, skip + len(taken)),
                    unavailable,
                )
            if page.next_cursor is None:
                position, source_cursor, skip = position + 1, None, 0
            else:
                source_cursor, skip = page.next_cursor, 0
            if len(items) >= size:
                more = position < len(bindings)
                return ResourcePage(
                    tuple(items),
                    self._resource_cursor(pinned, position, source_cursor, 0) if more else None,
                    unavailable,
                )
        return ResourcePage(tuple(items), None, unavailable)

    async def _listing_position(
        self, cursor: str | None
    ) -> tuple[dict[str, str | None], int, str | None, int]:
        """Where a listing stands: the pinned revisions, the binding, its source cursor
        and how many of that source page were listed (a new listing pins them now)."""
        if cursor is None:
            return await self.revisions(), 0, None, 0
        body = self._signer().verify(cursor)
        try:
            pinned = dict(body["snapshot"])
            position, skip = int(body["binding"]), int(body["skip"])
            source_cursor = body["source_cursor"]
            context_revision = str(body["context"])
        except (KeyError, TypeError, ValueError) as exc:
            raise CursorError(f"malformed resource cursor payload: {exc}") from None
        if context_revision != self.context.revision:
            raise StaleReaderError("the bindings changed since this listing began; list again")
        return pinned, position, source_cursor, skip

    def _resource_cursor(
        self, pinned: dict[str, str | None], position: int, source_cursor: str | None, skip: int
    ) -> str:
        return self._signer().issue(
            {
                "snapshot": pinned,
                "context": self.context.revision,
                "binding": position,
                "source_cursor": source_cursor,
                "skip": skip,
            },
            self.config.cursor_ttl,
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
