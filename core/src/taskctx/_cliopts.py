"""The options of ``taskctx read`` and ``taskctx index`` that plugins give (for ``taskctx.cli``).

Each ``CliSource`` a loaded plugin registered becomes one click parameter: a flag, or
the positional ``PATH...``; :func:`attach_given` turns the values given into attached
sources. Nothing here names a source kind: what a flag attaches is the plugin's word.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs
import click

from taskctx._ownership import FIRST_PARTY_NAMES
from taskctx.clisources import POSITIONAL, CliOption, CliSource, CliValue
from taskctx.protocols import ContextSource

if TYPE_CHECKING:
    from taskctx.context import TaskContext
    from taskctx.plugins import PluginHost

__all__ = ["PATHS_PARAM", "SourceOptionsCommand", "SourceParams", "attach_given", "source_params"]

PATHS_PARAM = "paths"
"""The callback keyword of the positional arguments (there even with no plugin owning them)."""

_TYPES: dict[CliValue, click.ParamType[Any]] = {
    CliValue.TEXT: click.STRING,
    CliValue.DIRECTORY: click.Path(file_okay=False),
    CliValue.EXISTING_DIRECTORY: click.Path(file_okay=False, exists=True),
    CliValue.POSITIVE_INTEGER: click.IntRange(min=1),
}


@attrs.frozen
class SourceParams:
    """The click parameters one command gets from the plugins, and what each attaches."""

    params: tuple[click.Parameter, ...]
    sources: Mapping[str, CliSource]
    """Callback keyword -> the CliSource behind it (the positional under ``paths``)."""
    skipped: tuple[str, ...]
    """Why a registered CliSource or CliOption got no parameter (its flag is taken)."""
    options: Mapping[str, tuple[str, str]] = attrs.field(factory=dict)
    """Callback keyword of a CliOption -> (the callback keyword of its source, the factory
    option it sets)."""


def _param_name(source: CliSource) -> str:
    return PATHS_PARAM if source.flag is None else "cli_" + source.flag[2:].replace("-", "_")


def _option_name(option: CliOption) -> str:
    return "cliopt_" + option.flag[2:].replace("-", "_")


def _option_param(option: CliOption) -> click.Parameter:
    return click.Option(
        [option.flag, _option_name(option)],
        type=_TYPES[option.value],
        metavar=option.metavar,
        help=option.help,
    )


def _param(source: CliSource, required: bool) -> click.Parameter:
    kind = _TYPES[source.value]
    if source.flag is None:
        metavar = f"{source.metavar}..." if required else f"[{source.metavar}]..."
        return click.Argument(
            [PATHS_PARAM], nargs=-1, required=required, type=kind, metavar=metavar
        )
    return click.Option(
        [source.flag, _param_name(source)],
        type=kind,
        multiple=source.multiple,
        metavar=source.metavar,
        help=source.help + (" Repeatable." if source.multiple else ""),
    )


def source_params(
    registered: Mapping[str, CliSource], kernel_flags: Iterable[str], index: bool
) -> SourceParams:
    """Parameters for ``registered`` CliSources (``host.cli_sources()``).

    ``index``: only those ``taskctx index`` takes, and the positional is required when it
    is the only one. With no plugin owning the positional, a placeholder ``PATH...``
    stands in, so the command can say which plugin to install. A flag the kernel's
    command already has is skipped, with the reason in ``skipped``.
    """
    taken = set(kernel_flags)
    chosen = [s for s in registered.values() if not index or s.index_binding_id is not None]
    flags = [s for s in chosen if s.flag is not None and s.flag not in taken]
    skipped = tuple(
        f"{s.flag} ({s.kind}) is an option of the kernel's command; not added"
        for s in chosen
        if s.flag in taken
    )
    positional = registered.get(POSITIONAL) if POSITIONAL in {s.name for s in chosen} else None
    required = index and not flags
    params: list[click.Parameter] = []
    if positional is None:
        metavar = f"{POSITIONAL}..." if required else f"[{POSITIONAL}]..."
        params.append(click.Argument([PATHS_PARAM], nargs=-1, required=required, metavar=metavar))
    else:
        params.append(_param(positional, required))
    params.extend(_param(s, required=False) for s in flags)
    sources = {_param_name(s): s for s in ([positional] if positional else []) + flags}
    taken.update(s.flag for s in flags if s.flag is not None)
    options: dict[str, tuple[str, str]] = {}
    for name, source in sources.items():
        for option in source.options:
            if option.flag in taken:
                reason = f"{option.flag} ({source.kind}) is already an option of this command"
                skipped += (f"{reason}; not added",)
                continue
            taken.add(option.flag)
            params.append(_option_param(option))
            options[_option_name(option)] = (name, option.option)
    return SourceParams(tuple(params), sources, skipped, options)


def attach_given(
    values: Mapping[str, Any],
    sources: Mapping[str, CliSource],
    make: Callable[..., ContextSource],
    attach: Callable[[ContextSource, str], object],
    index: bool = False,
    options: Mapping[str, tuple[str, str]] | None = None,
) -> list[tuple[str, str]]:
    """Make and attach a source per value given; return ``(value, binding id)`` in order.

    ``values`` are the command's keyword arguments; ``make(kind, **options)`` makes a
    source and ``attach(source, binding_id)`` attaches it. The positional comes first,
    then the flags in the order the plugins registered them. ``options`` (from
    ``SourceParams.options``) adds each CliOption given to its source's factory options.
    """
    tuned: dict[str, dict[str, str]] = {}
    for param, (name, option) in (options or {}).items():
        if values.get(param) is not None:
            tuned.setdefault(name, {})[option] = str(values[param])
    attached: list[tuple[str, str]] = []
    for name, source in sources.items():
        raw = values.get(name)
        given: tuple[str, ...] = (
            () if raw is None else (raw,) if isinstance(raw, str) else tuple(raw)
        )
        if index and source.index_binding_id is None:
            raise ValueError(f"{source.name} is not indexed by taskctx index")
        for value, binding_id in zip(given, source.bindings_for(given), strict=True):
            factory = {**source.fixed_options, **tuned.get(name, {}), source.value_option: value}
            attach(make(source.kind, **factory), binding_id)
            attached.append((value, binding_id))
    return attached


class SourceOptionsCommand(click.Command):
    """A kernel command (``read``, ``index``) whose source options come from the plugins.

    Each ``CliSource`` of the loaded host (the ``register_cli_sources`` hook) becomes a
    flag or the positional ``PATH...``, built when the command line is parsed or its help
    shown, so ``--help`` lists what the enabled plugins give. ``host_of`` gives the
    host of a command line.
    """

    def __init__(
        self,
        *args: Any,
        host_of: Callable[[click.Context], PluginHost],
        index: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.host_of = host_of
        """The host of a command line (``taskctx.cli.context_host``)."""
        self.index = index
        """Whether this is ``taskctx index`` (only sources it may index)."""

    def source_params(self, ctx: click.Context) -> SourceParams:
        """The parameters the plugins give this command (built once per invocation)."""
        key = f"taskctx.source_params.{self.name}"
        built = ctx.meta.get(key)
        if not isinstance(built, SourceParams):
            flags = [opt for param in self.params for opt in param.opts]
            built = source_params(
                self.host_of(ctx).cli_sources(), [*flags, "-h", "--help"], self.index
            )
            for reason in built.skipped:
                click.echo(f"warning: taskctx {self.name}: {reason}", err=True)
            ctx.meta[key] = built
        return built

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        """The plugins' parameters, then the kernel's, then ``--help``."""
        params = [*self.source_params(ctx).params, *self.params]
        help_option = self.get_help_option(ctx)
        return [*params, help_option] if help_option is not None else params

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Parse; an unknown first-party flag says which plugin gives it."""
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as exc:
            if exc.option_name in FIRST_PARTY_NAMES["cli_sources"]:
                hint = self.host_of(ctx).not_installed_message("cli_sources", exc.option_name)
                raise click.UsageError(f"{exc.format_message()} ({hint})", ctx) from exc
            raise

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The positional's help (click shows none for arguments), then the options."""
        positional = self.source_params(ctx).sources.get(PATHS_PARAM)
        if positional is not None:
            with formatter.section("Arguments"):
                formatter.write_dl([(f"{positional.metavar}...", positional.help)])
        super().format_options(ctx, formatter)

    def attach(
        self, ctx: click.Context, values: Mapping[str, Any], context: TaskContext
    ) -> list[tuple[str, str]]:
        """Attach the sources given on the command line; ``(value, binding id)`` each."""
        sources = self.source_params(ctx).sources
        if values.get(PATHS_PARAM) and PATHS_PARAM not in sources:
            message = self.host_of(ctx).not_installed_message("cli_sources", POSITIONAL)
            raise click.ClickException(f"PATH: {message}")
        make = context.host.source if self.index else context.source
        options = self.source_params(ctx).options
        return attach_given(values, sources, make, context.attach, self.index, options)
