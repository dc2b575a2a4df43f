"""The kernel's own plugin: the structural index provider and the line-range reader.

Registered by every PluginHost through the same hooks as any plugin (as pytest's
built-ins are); ``taskctx plugins --all`` lists it.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from taskctx.hookspecs import hookimpl
from taskctx.index import StructuralProvider
from taskctx.model import ContextRef, ExactRead
from taskctx.protocols import ContextSource, IndexProvider, ScopedRead
from taskctx.sections import parse_line_scope, slice_lines

__all__ = ["LineRangeReader"]


@attrs.define(slots=True, frozen=True)
class LineRangeReader:
    """Serves ``lines:A-B`` scopes of any text item by reading it whole and slicing."""

    name: str = "lines"
    scope_kinds: tuple[str, ...] = ("lines",)
    media_types: tuple[str, ...] = ()

    async def async_read_scoped(
        self, source: ContextSource, ref: ContextRef, limit: int | None
    ) -> ExactRead:
        """Lines A..B of ``ref``'s item; the digest is of those lines."""
        if ref.scope is None:
            raise ValueError(f"{ref} has no scope")
        first, last = parse_line_scope(ref.scope)
        whole = await source.async_read_exact(ref.with_scope(None), None)
        return ExactRead.from_text(
            ref.path,
            slice_lines(whole.text or "", first, last),
            limit,
            scope=ref.scope,
            media_type=whole.media_type,
            representation=whole.representation,
            content_version=whole.content_version,
        )


@hookimpl
def register_index_providers(register: Callable[[IndexProvider], None]) -> None:
    """The structural provider: candidates in path order, no ranking."""
    register(StructuralProvider())


@hookimpl
def register_scoped_readers(register: Callable[[ScopedRead], None]) -> None:
    """The ``lines:A-B`` reader for text items."""
    register(LineRangeReader())
