"""``taskctx mcp serve`` and the ``taskctx-mcp`` console script (the same click group)."""

from __future__ import annotations

import click

from taskctx.errors import TaskCtxError

__all__ = ["main", "mcp_group", "serve_command"]


def _host_port(raw: str) -> tuple[str, int]:
    host, sep, port = raw.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise click.BadParameter(f"expected HOST:PORT, got {raw!r}", param_hint="--http")
    return host.strip("[]"), int(port)


@click.group("mcp", context_settings={"help_option_names": ["-h", "--help"]})
def mcp_group() -> None:
    """An MCP server over task context (taskctx-mcp)."""


@mcp_group.command("serve")
@click.argument("config", required=False, type=click.Path(dir_okay=False, exists=True))
@click.option(
    "--workspace",
    "workspaces",
    multiple=True,
    type=click.Path(file_okay=False, exists=True),
    help="Bind this folder as a task workspace, read only (id files); repeatable.",
)
@click.option(
    "--records",
    "records",
    multiple=True,
    type=click.Path(file_okay=False),
    help="Bind the record store under this folder (id records); repeatable.",
)
@click.option(
    "--source",
    "sources",
    multiple=True,
    metavar="KIND[:k=v,...]",
    help="Bind a source by kind and options, as taskctx read --source (id=NAME sets its id).",
)
@click.option("--task", "task_id", default=None, help="Task id (default: the config's, or mcp).")
@click.option("--http", "http", default=None, metavar="HOST:PORT", help="Serve streamable HTTP.")
def serve_command(
    config: str | None,
    workspaces: tuple[str, ...],
    records: tuple[str, ...],
    sources: tuple[str, ...],
    task_id: str | None,
    http: str | None,
) -> None:
    """Serve the bound sources over MCP: stdio by default, --http for streamable HTTP.

    CONFIG is a TOML file (bindings, plugins, budget, consumer, configuration,
    resources); the flags add bindings to it, or stand in for it.
    """
    from taskctx_mcp.config import ConfigError, ServerConfig, load_config
    from taskctx_mcp.run import serve_http, serve_stdio
    from taskctx_mcp.service import ContextService

    address = _host_port(http) if http is not None else None
    try:
        base = load_config(config) if config is not None else None
        settings = ServerConfig.from_flags(
            workspace=workspaces, records=records, sources=sources, base=base
        )
        if task_id is not None:
            settings = settings.model_copy(update={"task_id": task_id})
        if not settings.bindings:
            raise ConfigError(
                "nothing to serve: give a CONFIG file, --workspace, --records or --source"
            )
        service = ContextService.from_config(settings)
    except (ConfigError, TaskCtxError, OSError) as exc:
        raise click.ClickException(str(exc)) from exc
    if address is None:
        serve_stdio(service)
    else:
        serve_http(service, *address)


def main() -> None:
    """The ``taskctx-mcp`` console script."""
    mcp_group()
