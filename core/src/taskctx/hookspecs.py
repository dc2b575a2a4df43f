"""The hookspecs of taskctx: one function per hook, its docstring is the reference.

Every hook receives a ``register`` callable (the llm convention) so a plugin can
register several things and the host owns validation and the duplicate policy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pluggy

__all__ = [
    "PROJECT_NAME",
    "hookimpl",
    "hookspec",
    "register_commands",
    "register_file_io_handlers",
    "register_index_providers",
    "register_scoped_readers",
    "register_selectors",
    "register_source_kinds",
]

PROJECT_NAME = "taskctx"
"""The pluggy project name and the entry-point group."""

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


@hookspec
def register_source_kinds(register: Callable[[str, Callable[..., Any]], None]) -> None:
    """Register ContextSource kinds: ``register(kind, factory)``.

    ``factory(**options)`` returns a ContextSource; ``host.source(kind, **options)`` calls
    it. Kind names are unique across plugins: a second registration of a name is refused
    and reported against the plugin that tried it.
    """


@hookspec
def register_scoped_readers(register: Callable[[Any], None]) -> None:
    """Register ScopedRead objects: ``register(reader)``.

    A scoped reader locates a deterministic bounded range (``lines:10-40``, ``page:3``,
    ``sheet:Data!A1:D20``, ``slide:4``, ``section:<heading>``) inside a ref that was
    already selected and authorized. It is matched by scope prefix and media type; a
    source's own ``async_read_scoped`` wins over a registered reader.
    """


@hookspec
def register_file_io_handlers(register: Callable[[Any], None]) -> None:
    """Register FileIOHandler objects: ``register(handler)``.

    A handler parses the bytes of a document format (PDF, DOCX, XLSX, PPTX, ...) into
    text with sections. Sources look handlers up by suffix and media type; a document
    with no handler is delivered as a reference only, with a diagnostic.
    """


@hookspec
def register_index_providers(register: Callable[[Any], None]) -> None:
    """Register IndexProvider objects: ``register(provider)``.

    A provider opens partitions keyed by binding, source identity, profile and provider
    version, applies upserts and deletes by content version, and ranks documents. The
    first installed provider of kind ``lexical`` is a TaskContext's default.
    """


@hookspec
def register_selectors(register: Callable[[Any], None]) -> None:
    """Register Selector objects: ``register(selector)``.

    A selector chooses among optional candidates by host-issued keys, seeing previews
    only. The host validates its answer: unknown or duplicate keys make the whole answer
    untrusted (diagnostic ``selection_invalid``) and the read falls back to rank order.
    """


@hookspec
def register_commands(register: Callable[[Any], None]) -> None:
    """Register CLI commands: ``register(command)`` with a ``click.Command`` (or group).

    Each becomes ``taskctx <command.name>``. Names are unique across plugins and may not
    shadow a kernel command (``plugins``, ``read``, ``index``); a clash fails the plugin.
    """
