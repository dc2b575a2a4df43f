"""The ``taskctx`` command: one click command per function, one group (``main``).

Commands build their host with :func:`load_host` (``taskctx._clihost``), which honours
``TASKCTX_LOAD_PLUGINS`` and ``TASKCTX_BLOCK_PLUGINS`` and echoes plugin load warnings
to stderr (the failures also appear in ``taskctx plugins``). ``taskctx read`` lives in
``taskctx.cliread``, ``taskctx state`` in ``taskctx.clistate``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import click

from taskctx._clihost import context_host, load_host, provider_option
from taskctx._cliopts import SourceOptionsCommand
from taskctx._cliprogress import terminal_progress
from taskctx._cliwords import in_flags
from taskctx.cliinspect import inspect_command
from taskctx.cliread import read_command
from taskctx.clistate import state_command
from taskctx.errors import TaskCtxError
from taskctx.plugins import PluginRecord, normalize_name

__all__ = [
    "PluginCommandGroup",
    "SourceOptionsCommand",
    "as_command",
    "command_running",
    "context_host",
    "index_command",
    "load_host",
    "main",
    "plugins_command",
    "read_command",
]


class PluginCommandGroup(click.Group):
    """The ``taskctx`` group: kernel commands plus those plugins register.

    Plugin commands come from the ``register_commands`` hook of a host built from the
    environment, loaded only when a name is not a kernel command (or for ``--help``).
    """

    def _plugin_commands(self, ctx: click.Context) -> dict[str, click.Command]:
        commands = context_host(ctx).commands()
        return {name: cmd for name, cmd in commands.items() if name not in self.commands}

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Kernel commands, then plugin commands, sorted."""
        return sorted({*super().list_commands(ctx), *self._plugin_commands(ctx)})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """A kernel command, else a plugin's command of that name."""
        found = super().get_command(ctx, cmd_name)
        if found is not None:
            return found
        return self._plugin_commands(ctx).get(cmd_name)


class _Commands:
    """How many ``taskctx`` commands are running in this process (nested: CliRunner)."""

    running = 0


def command_running() -> bool:
    """Whether a ``taskctx`` command is running in this process.

    True from the moment :func:`main` (the console script, ``python -m taskctx``) starts a
    command until it ends; a library using taskctx is never a command. Plugins ask this to
    decide what only a command-line process should do (the record store's materialization
    budget raises there when memory is tight).
    """
    return _Commands.running > 0


@contextmanager
def as_command() -> Iterator[None]:
    """Run the ``with`` block as a ``taskctx`` command (what :func:`main` does)."""
    _Commands.running += 1
    try:
        yield
    finally:
        _Commands.running -= 1


@click.group(cls=PluginCommandGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="taskctx", prog_name="taskctx")
@click.pass_context
def main(ctx: click.Context) -> None:
    """taskctx: deliver task context to AI agents honestly.

    Plugins are loaded from the "taskctx" entry-point group; set TASKCTX_LOAD_PLUGINS
    (comma list of distributions, empty for none) and TASKCTX_BLOCK_PLUGINS to choose.
    """
    ctx.with_resource(as_command())


def _visible(records: Iterable[PluginRecord], show_all: bool) -> list[PluginRecord]:
    """All records with --all; otherwise non-built-ins that loaded, and every failure."""
    if show_all:
        return list(records)
    return [r for r in records if r.status == "failed" or (r.status == "loaded" and not r.builtin)]


def _format_text(records: list[PluginRecord]) -> str:
    """Records grouped by distribution, one indented block per entry point."""
    groups: dict[str, list[PluginRecord]] = {}
    for record in records:
        groups.setdefault(normalize_name(record.name), []).append(record)
    lines: list[str] = []
    for group in groups.values():
        first = group[0]
        tag = " (built-in)" if first.builtin else ""
        lines.append(f"{first.name} {first.version or '(no version)'}{tag}")
        for record in group:
            where = (
                f"{record.entry_point} = {record.module}" if record.entry_point else record.module
            )
            lines.append(f"  {where}: {record.status}")
            if record.hooks:
                lines.append(f"    hooks: {', '.join(record.hooks)}")
            for kind, names in record.registered.items():
                lines.append(f"    {kind}: {', '.join(names)}")
            if record.error:
                lines.append(f"    error: {record.error}")
    return "\n".join(lines)


main.add_command(inspect_command)
main.add_command(read_command)
main.add_command(state_command)


@main.command("plugins")
@click.option(
    "--all",
    "show_all",
    is_flag=True,
    help="Also show built-ins and plugins that are blocked or not allowed.",
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of plugin records.")
def plugins_command(show_all: bool, as_json: bool) -> None:
    """List installed plugins and their status.

    Shows each distribution's version, entry points, hooks, registered names and
    status. Failed plugins are always listed with their error.
    """
    records = _visible(load_host().plugins(), show_all)
    if as_json:
        click.echo(json.dumps([r.model_dump(mode="json") for r in records], indent=2))
    elif records:
        click.echo(_format_text(records))
    else:
        click.echo("No plugins installed." + ("" if show_all else " (--all shows built-ins)"))


@main.command("index", cls=SourceOptionsCommand, host_of=context_host, index=True)
@provider_option
@click.option("--json", "as_json", is_flag=True, help="Print the sync reports as JSON.")
@click.pass_context
def index_command(
    click_ctx: click.Context, /, provider: str | None, as_json: bool, **given: Any
) -> None:
    """Build or update the index of each PATH (a folder) and say what changed.

    Each PATH is attached as the plugin that owns it says (with taskctx-workspace,
    indexes live in the folder's derived state, outside it: see taskctx state) and
    updated incrementally: a second run re-indexes only files whose content changed.
    """
    from taskctx.context import TaskContext

    command = click_ctx.command
    assert isinstance(command, SourceOptionsCommand)
    try:
        ctx = TaskContext("index", host=context_host(click_ctx))
        ctx.configure_index(provider)
        attached = command.attach(click_ctx, given, ctx)
        if not attached:
            raise click.UsageError("nothing to index: give a PATH or a source option")
        with terminal_progress(sys.stderr, enabled=not as_json):
            reports = ctx.sync_index()
    except (TaskCtxError, OSError, ValueError) as exc:
        raise click.ClickException(in_flags(str(exc))) from exc
    rows = [
        {"path": value, "provider": ctx.index_provider.name, **reports[binding].model_dump()}
        for value, binding in attached
    ]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for row in rows:
        click.echo(
            f"{row['path']}: {row['provider']} index ({row['mode']}) added {row['added']}, "
            f"updated {row['updated']}, removed {row['removed']}, unchanged {row['unchanged']} "
            f"in {row['seconds']:.2f} s"
        )
