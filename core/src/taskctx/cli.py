"""The ``taskctx`` command: one click command per function, one group (``main``).

Commands build their host with :func:`load_host`, which honours ``TASKCTX_LOAD_PLUGINS``
and ``TASKCTX_BLOCK_PLUGINS`` and echoes plugin load warnings to stderr (the failures
also appear in ``taskctx plugins``).
"""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from pydantic import ValidationError

from taskctx._cliopts import SourceOptionsCommand
from taskctx._cliprogress import terminal_progress
from taskctx.clistate import state_command
from taskctx.errors import PluginLoadWarning, SourceSpecError, TaskCtxError
from taskctx.plugins import PluginHost, PluginRecord, normalize_name
from taskctx.sourcespec import parse_source_spec

if TYPE_CHECKING:
    from taskctx.context import TaskContext
    from taskctx.model import ContextReadIntent

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


def _role_value(raw: str, option: str) -> tuple[str, str]:
    role, sep, value = raw.partition("=")
    if not sep or not role or not value:
        raise click.BadParameter(f"expected ROLE=VALUE, got {raw!r}", param_hint=option)
    return role, value


def _attach_sources(ctx: TaskContext, sources: tuple[str, ...]) -> None:
    """Attach each ``--source KIND[:k=v,...,id=BINDING]`` (parsed by the kernel's parser)."""
    for raw in sources:
        try:
            spec = parse_source_spec(raw)
        except SourceSpecError as exc:
            raise click.BadParameter(str(exc), param_hint="--source") from None
        ctx.attach(ctx.source(spec.kind, **spec.options), binding_id=spec.binding_id)


@main.command("read", cls=SourceOptionsCommand, host_of=context_host)
@click.option("--query", "-q", default="", help="What the reader is looking for.")
@click.option(
    "--source",
    "sources",
    multiple=True,
    metavar="KIND[:k=v,...]",
    help="Attach a source by kind name and options (id=NAME sets its binding id); repeatable.",
)
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="HOST",
    help="Restrict the hosts sources may contact to these (exact, or regex:RE2); repeatable.",
)
@click.option(
    "--put",
    "puts",
    multiple=True,
    metavar="ROLE=TEXT",
    help="Put an optional direct entry; repeatable.",
)
@click.option(
    "--put-required",
    "required_puts",
    multiple=True,
    metavar="ROLE=TEXT",
    help="Put a required direct entry (never dropped); repeatable.",
)
@click.option(
    "--put-file",
    "put_files",
    multiple=True,
    metavar="ROLE=PATH",
    help="Put a file's text as an optional direct entry; repeatable.",
)
@click.option(
    "--ref",
    "refs",
    multiple=True,
    metavar="REF",
    help="An explicit canonical ref to deliver whole; repeatable.",
)
@click.option("--task", "task_id", default="cli", show_default=True, help="Task id.")
@click.option(
    "--max-chars",
    type=click.IntRange(min=1),
    default=20_000,
    show_default=True,
    help="Characters of delivered text per package.",
)
@click.option(
    "--max-blocks",
    type=click.IntRange(min=1),
    default=50,
    show_default=True,
    help="Blocks per package.",
)
@click.option(
    "--lossy",
    is_flag=True,
    help="Deliver oversized required entries as lossy digests instead of failing.",
)
@click.option(
    "--required-overflow",
    type=click.Choice(["fail", "lossy_digest", "deliver"]),
    default=None,
    help="What required content over budget does: fail (default), lossy_digest (same as "
    "--lossy), or deliver it whole and record the excess.",
)
@click.option(
    "--source-kind",
    "source_kinds",
    multiple=True,
    metavar="KIND",
    help="Search only bindings of this source kind (an attached one); repeatable.",
)
@click.option(
    "--binding",
    "binding_ids",
    multiple=True,
    metavar="ID",
    help="Search only this binding id (an attached one); repeatable.",
)
@click.option("--include-hidden", is_flag=True, help="Offer dot files and folders too.")
@click.option("--all-pages", is_flag=True, help="Follow the cursor and print every page.")
@click.option("--json", "as_json", is_flag=True, help="Print the package(s) as JSON.")
@click.pass_context
def read_command(
    click_ctx: click.Context,
    /,
    query: str,
    sources: tuple[str, ...],
    allow_hosts: tuple[str, ...],
    puts: tuple[str, ...],
    required_puts: tuple[str, ...],
    put_files: tuple[str, ...],
    refs: tuple[str, ...],
    task_id: str,
    max_chars: int,
    max_blocks: int,
    lossy: bool,
    required_overflow: str | None,
    source_kinds: tuple[str, ...],
    binding_ids: tuple[str, ...],
    include_hidden: bool,
    all_pages: bool,
    as_json: bool,
    **given: Any,
) -> None:
    """Read a context package from folders, records, sources and direct entries.

    Each PATH and each source option (listed below, given by the installed plugins) is
    attached as the plugin that owns it says. The package is printed as the model sees
    it, refs as [[ref:ref_N]] aliases, with coverage. With --allow-host, every source is
    made and attached under a RunConfiguration allowing only those hosts (a pinned
    repository URL elsewhere is refused).
    """
    from taskctx.context import TaskContext
    from taskctx.model import ContextBudget
    from taskctx.policy import RunConfiguration

    command = click_ctx.command
    assert isinstance(command, SourceOptionsCommand)
    overflow = _overflow(lossy, required_overflow)
    try:
        configuration = RunConfiguration(allowed_hosts=allow_hosts or None)
        ctx = TaskContext(task_id, host=context_host(click_ctx), configuration=configuration)
        _put_entries(ctx, puts, required_puts, put_files)
        command.attach(click_ctx, given, ctx)
        _attach_sources(ctx, sources)
        intent = _intent(query, refs, include_hidden, source_kinds, binding_ids, overflow)
        budget = ContextBudget(max_chars=max_chars, max_blocks=max_blocks)
        reader = ctx.reader(consumer="cli", budget=budget)
        with terminal_progress(sys.stderr, enabled=not as_json):
            packages = [reader.read(intent)]
            while all_pages and packages[-1].has_more:
                packages.append(reader.read_next(packages[-1].cursor))
    except ValidationError as exc:
        problems = "; ".join(str(error["msg"]) for error in exc.errors())
        raise click.ClickException(problems) from exc
    except (TaskCtxError, OSError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
    for package in packages:
        click.echo(package.model_dump_json(indent=2) if as_json else package.render())


def _intent(
    query: str,
    refs: tuple[str, ...],
    include_hidden: bool,
    source_kinds: tuple[str, ...],
    binding_ids: tuple[str, ...],
    overflow: str,
) -> ContextReadIntent:
    """The read intent of ``taskctx read``'s options."""
    from taskctx.model import ContextReadIntent

    filters = {
        "include_hidden": include_hidden,
        "source_kinds": source_kinds or None,
        "bindings": binding_ids or None,
    }
    return ContextReadIntent(
        query=query, explicit_refs=refs, filters=filters, required_overflow=overflow
    )


def _overflow(lossy: bool, required_overflow: str | None) -> str:
    """The required-overflow mode of ``--lossy`` / ``--required-overflow``."""
    if lossy and required_overflow not in (None, "lossy_digest"):
        raise click.UsageError("--lossy means --required-overflow lossy_digest; pass one")
    return "lossy_digest" if lossy else (required_overflow or "fail")


def _put_entries(
    ctx: TaskContext,
    puts: tuple[str, ...],
    required_puts: tuple[str, ...],
    put_files: tuple[str, ...],
) -> None:
    """Put the direct entries of ``--put``, ``--put-required`` and ``--put-file``."""
    for raw in puts:
        ctx.put(*_role_value(raw, "--put"))
    for raw in required_puts:
        ctx.put(*_role_value(raw, "--put-required"), required=True)
    for raw in put_files:
        role, file_name = _role_value(raw, "--put-file")
        content = Path(file_name).read_bytes()
        ctx.put(role=role, content=content, title=file_name, media_type=None)


@main.command("index", cls=SourceOptionsCommand, host_of=context_host, index=True)
@click.option(
    "--provider",
    default=None,
    help="Index provider name (default: the installed lexical provider, e.g. fts).",
)
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
        raise click.ClickException(str(exc)) from exc
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
