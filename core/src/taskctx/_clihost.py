"""The plugin host of a ``taskctx`` command line (for ``taskctx.cli`` and its commands).

:func:`load_host` builds it from the environment (``TASKCTX_LOAD_PLUGINS``,
``TASKCTX_BLOCK_PLUGINS``) and echoes plugin load warnings to stderr; :func:`context_host`
shares one per invocation between the commands of a command line; :data:`provider_option`
is the ``--provider`` flag that picks one of its index providers.
"""

from __future__ import annotations

import warnings

import click

from taskctx.errors import PluginLoadWarning
from taskctx.plugins import PluginHost

__all__ = ["context_host", "load_host", "provider_option"]


def load_host() -> PluginHost:
    """A host from the environment; plugin load warnings go to stderr, not tracebacks."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PluginLoadWarning)
        host = PluginHost.from_environment()
    for warning in caught:
        if issubclass(warning.category, PluginLoadWarning):
            click.echo(f"warning: {warning.message}", err=True)
        else:
            warnings.warn_explicit(
                warning.message, warning.category, warning.filename, warning.lineno
            )
    return host


def context_host(ctx: click.Context) -> PluginHost:
    """The host of this command line: ``main(args, obj=host)``'s, else one from the
    environment (:func:`load_host`), loaded once per invocation and shared by its commands."""
    given = ctx.find_object(PluginHost)
    if given is not None:
        return given
    host = ctx.meta.get(_HOST_KEY)
    if not isinstance(host, PluginHost):
        host = ctx.meta[_HOST_KEY] = load_host()
    return host


_HOST_KEY = "taskctx.host"

provider_option = click.option(
    "--provider",
    default=None,
    metavar="NAME",
    help="Index provider name (default: the installed lexical provider, e.g. fts).",
)
"""``--provider NAME`` of ``taskctx read`` and ``taskctx index``: ``ctx.configure_index(NAME)``."""
