"""The hookspecs of taskctx: one function per hook, its docstring is the reference.

Every hook receives a ``register`` callable (the llm convention) so a plugin can
register several things and the host owns validation and the duplicate policy. The
parameter is typed with the protocol of what it takes (pytest's hookspec style), so a
plugin author's type checker sees what to hand it.

Every hook of a plugin is called exactly once, while that plugin loads: for an
entry-point plugin when the ``PluginHost`` is constructed, for an in-process one by
``host.register(plugin, name=...)``. ``register`` works only during that call. A hook's
return value is ignored; a hook that raises, or registers an object that does not keep
its protocol or a name already taken, fails its plugin as a whole (every registration
of the plugin is rolled back).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pluggy

from taskctx.clisources import CliSource
from taskctx.protocols import (
    FileIOHandler,
    IndexProvider,
    RequestFilter,
    ScopedRead,
    Selector,
    SourceFactory,
)

if TYPE_CHECKING:
    import click

__all__ = [
    "PROJECT_NAME",
    "hookimpl",
    "hookspec",
    "register_cli_sources",
    "register_commands",
    "register_file_io_handlers",
    "register_index_providers",
    "register_request_filters",
    "register_scoped_readers",
    "register_selectors",
    "register_source_kinds",
]

PROJECT_NAME = "taskctx"
"""The pluggy project name and the entry-point group."""

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


@hookspec
def register_source_kinds(register: Callable[[str, SourceFactory], None]) -> None:
    """Register ContextSource kinds: call ``register(kind, factory)`` once per kind.

    :param register: takes the kind name (letters, digits, ``_``, ``.``, ``-``; it is the
        default binding id) and a ``SourceFactory``: ``factory(**options)`` returns a new
        ``ContextSource`` that reports ``kind``.

    Called once, while the plugin loads. The factory is called later, by
    ``host.source(kind, **options)``, each time an application, a configuration file or
    ``taskctx read --source`` asks for a source of this kind.

    Returns nothing (the return value is ignored). Kind names are unique across plugins:
    a second registration of a name is refused and reported against the plugin that
    tried it.
    """


@hookspec
def register_scoped_readers(register: Callable[[ScopedRead], None]) -> None:
    """Register ScopedRead objects: call ``register(reader)`` once per reader.

    :param register: takes an object keeping ``taskctx.ScopedRead``.

    Called once, while the plugin loads. The reader's ``async_read_scoped`` is called
    only for a ref already selected and authorized, to locate a deterministic bounded
    range (``lines:10-40``, ``page:3``, ``sheet:Data!A1:D20``, ``section:<heading>``)
    inside it. It is matched by scope prefix and media type; a source's own
    ``async_read_scoped`` wins over a registered reader.

    Returns nothing (the return value is ignored). Reader names are unique.
    """


@hookspec
def register_file_io_handlers(register: Callable[[FileIOHandler], None]) -> None:
    """Register FileIOHandler objects: call ``register(handler)`` once per handler.

    :param register: takes an object keeping ``taskctx.FileIOHandler``.

    Called once, while the plugin loads. The handler's ``parse`` is called by a source
    that holds files, when it describes or reads a document the handler claims by
    suffix or media type; it parses the bytes of a document format (PDF, DOCX, XLSX,
    PPTX, ...) into text with sections. A document with no handler is delivered as a
    reference only, with a diagnostic.

    Returns nothing (the return value is ignored). Handler names are unique.
    """


@hookspec
def register_index_providers(register: Callable[[IndexProvider], None]) -> None:
    """Register IndexProvider objects: call ``register(provider)`` once per provider.

    :param register: takes an object keeping ``taskctx.IndexProvider``.

    Called once, while the plugin loads. ``open_partition`` is called the first time a
    TaskContext using the provider syncs a binding; partitions are keyed by binding,
    source identity, profile and provider version, take upserts and deletes by content
    version, and rank documents. The first installed provider of kind ``lexical`` is a
    TaskContext's default.

    Returns nothing (the return value is ignored). Provider names are unique.
    """


@hookspec
def register_selectors(register: Callable[[Selector], None]) -> None:
    """Register Selector objects: call ``register(selector)`` once per selector.

    :param register: takes an object keeping ``taskctx.Selector``.

    Called once, while the plugin loads. ``async_select`` is called once per page of a
    read, only by a reader made with ``selector="name"``; it chooses among optional
    candidates by host-issued keys, seeing previews only. The host validates its answer:
    unknown or duplicate keys make the whole answer untrusted (diagnostic
    ``selection_invalid``) and the read falls back to rank order.

    Returns nothing (the return value is ignored). Selector names are unique.
    """


@hookspec
def register_commands(register: Callable[[click.Command], None]) -> None:
    """Register CLI commands: call ``register(command)`` with a ``click.Command`` (or group).

    :param register: takes a ``click.Command``; it becomes ``taskctx <command.name>``.

    Called once, while the plugin loads (``taskctx`` builds its command line from the
    loaded plugins). The command runs when a user types it.

    Returns nothing (the return value is ignored). Names are unique across plugins and
    may not shadow a kernel command (``plugins``, ``read``, ``index``); a clash fails the
    plugin.
    """


@hookspec
def register_cli_sources(register: Callable[[CliSource], None]) -> None:
    """Register command-line sources: call ``register(cli_source)`` with a ``CliSource``.

    :param register: takes a ``taskctx.CliSource``: a ``--flag VALUE`` (or the positional
        ``PATH...``) of ``taskctx read``, the source kind each value makes, the factory
        option that receives it, the binding id, help and metavar, whether the flag
        repeats, and whether ``taskctx index`` takes it too.

    Called once, while the plugin loads (``taskctx read`` and ``taskctx index`` build
    their options from the loaded plugins, so ``--help`` lists what the enabled plugins
    give). When a user passes the option, the command makes
    ``host.source(kind, **{value_option: value, **fixed_options})`` per value and
    attaches it.

    Returns nothing (the return value is ignored). A flag, or the positional ``PATH``, is
    owned like a name (``taskctx._ownership``): a first-party one belongs to its
    distribution, and two third-party plugins registering the same one both fail. A flag
    the kernel's command already has (``--query``, ``--json``...) is not added, with a
    warning.
    """


@hookspec
def register_request_filters(register: Callable[[RequestFilter], None]) -> None:
    """Register request filters: call ``register(request_filter)`` once per filter.

    :param register: takes an object keeping ``taskctx.RequestFilter``: ``name``,
        ``order`` (an int, lower runs first), ``automatic`` (a bool: whether pipelines run
        it unless turned off) and ``async_apply(request, context)``.

    Called once, while the plugin loads. ``async_apply`` is called by a request pipeline
    (``taskctx_conversation.RequestPipeline``) once per model request it builds, with the
    request so far and the pipeline's context; it returns the changed request and must not
    change the stored history, source bytes, metadata or annotations. A pipeline that
    composes a filter of the same ``name`` explicitly runs that instance instead.

    Returns nothing (the return value is ignored). Filter names are unique.
    """
