"""In-memory test sources for the reading rules: failing, moving, paging, N items."""

from __future__ import annotations

from collections.abc import Callable

from taskctx import hookimpl
from taskctx.errors import SourceUnavailableError
from taskctx.model import ContextRef, DescriptorPage, EnumerationRequest, ExactRead
from taskctx.plugins import PluginHost
from taskctx.protocols import ContextSource, Selector
from taskctx.testing import MemorySource


def numbered(count: int, *, chars: int = 100, prefix: str = "item") -> dict[str, str]:
    """``count`` items of exactly ``chars`` characters each, paths sorted by number."""
    items = {}
    for number in range(count):
        head = f"{prefix} {number}: "
        items[f"{prefix}-{number:05d}.txt"] = (head + "x" * chars)[:chars]
    return items


class FailingSource(MemorySource):
    """A source whose server is down: every call raises."""

    kind = "failing"

    async def async_revision(self) -> str:
        raise SourceUnavailableError("connection refused by test server")


class FailsOnEnumerate(MemorySource):
    """Answers its revision but fails while enumerating."""

    kind = "flaky"

    async def async_enumerate_descriptors(self, request: EnumerationRequest) -> DescriptorPage:
        raise OSError("disk read error during enumeration")


class MovesOnceSource(MemorySource):
    """Its first enumeration materialises a new revision (a lazy refresh), then it is stable."""

    kind = "moves_once"

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.moved = False

    async def async_enumerate_descriptors(self, request: EnumerationRequest) -> DescriptorPage:
        if not self.moved:
            self.moved = True
            self.put("late-arrival.txt", "materialised during the first enumeration")
        return await super().async_enumerate_descriptors(
            EnumerationRequest(cursor=request.cursor, page_size=request.page_size)
        )


class AlwaysMovingSource(MemorySource):
    """Changes on every enumeration: continuous change that must fail closed."""

    kind = "always_moving"

    async def async_enumerate_descriptors(self, request: EnumerationRequest) -> DescriptorPage:
        self.put(f"tick-{self._revision}.txt", "tick")
        return await super().async_enumerate_descriptors(
            EnumerationRequest(cursor=request.cursor, page_size=request.page_size)
        )


class BrokenReadSource(MemorySource):
    """Enumerates fine, but one item cannot be read."""

    kind = "broken_read"

    async def async_read_exact(self, ref: ContextRef, limit: int | None = None) -> ExactRead:
        if ref.path.startswith("broken"):
            raise OSError(f"I/O error reading {ref.path}")
        return await super().async_read_exact(ref, limit)


class CueAfterEnumeration:
    """Wraps any source; when an enumeration's last page is out, ``cue`` runs once (a
    writer that acts between the reader's enumeration and its readback)."""

    def __init__(self, inner: ContextSource, cue: Callable[[], object]) -> None:
        self.inner = inner
        self.cue: Callable[[], object] | None = cue
        self.kind = inner.kind
        self.identity = getattr(inner, "identity", None)
        self.serves_pinned_revisions = getattr(inner, "serves_pinned_revisions", False)

    async def async_revision(self) -> str:
        """The inner source's revision."""
        return await self.inner.async_revision()

    async def async_enumerate_descriptors(self, request: EnumerationRequest) -> DescriptorPage:
        """The inner enumeration; the cue runs after its last page."""
        page = await self.inner.async_enumerate_descriptors(request)
        if page.next_cursor is None and self.cue is not None:
            cue, self.cue = self.cue, None
            cue()
        return page

    async def async_read_exact(self, ref: ContextRef, limit: int | None = None) -> ExactRead:
        """The inner exact read."""
        return await self.inner.async_read_exact(ref, limit)


def selector_host(selector: Selector) -> PluginHost:
    """A built-ins-only host (structural order) with ``selector`` registered through the hook."""

    class Plugin:
        @hookimpl
        def register_selectors(self, register: Callable[[Selector], None]) -> None:
            register(selector)

    host = PluginHost(allow=[])
    host.register(Plugin(), name="test-selector")
    return host
