"""``taskctx read``: a context package from folders, records, sources and direct entries.

The package is printed as the model sees it (or as JSON). Follow-up reads go on from a
printed package: ``--package FILE.json`` resolves its aliases in ``--ref`` and keeps the
numbering of refs, ``--cursor CURSOR`` (or ``--next``, the package's own cursor) reads
the next page of the same snapshot, and ``<more>`` says which command does that.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from pydantic import ValidationError

from taskctx._clihost import context_host, provider_option
from taskctx._cliopts import SourceOptionsCommand
from taskctx._cliprogress import terminal_progress
from taskctx._cliwords import in_flags
from taskctx.cliinspect import load_packages, write_html
from taskctx.errors import SourceSpecError, TaskCtxError
from taskctx.sourcespec import parse_source_spec

if TYPE_CHECKING:
    from taskctx.context import TaskContext
    from taskctx.model import ContextPackage

if TYPE_CHECKING:
    from taskctx.context import TaskContext
    from taskctx.model import ContextPackage, ContextReadIntent
    from taskctx.reader import ContextReader

__all__ = ["read_command"]

_ALIAS = re.compile(r"(?:\[\[ref:)?(ref_[1-9][0-9]*)(?:\]\])?")
"""An alias as a package shows it (``[[ref:ref_3]]``) or bare (``ref_3``)."""


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


@click.command("read", cls=SourceOptionsCommand, host_of=context_host)
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
@provider_option
@click.option(
    "--package",
    "package_file",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    metavar="FILE.json",
    help="A package printed before with --json: its aliases work in --ref and keep their numbers.",
)
@click.option(
    "--cursor",
    metavar="CURSOR",
    help="Read the next page of the result this cursor continues (same snapshot).",
)
@click.option("--next", "next_page", is_flag=True, help="Read the page after --package's.")
@click.option("--all-pages", is_flag=True, help="Follow the cursor and print every page.")
@click.option(
    "--html",
    "html_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="FILE",
    help="Also write one self-contained HTML page of the package(s) to FILE.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the package as JSON (with --all-pages: one JSON array of the pages).",
)
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
    provider: str | None,
    package_file: Path | None,
    cursor: str | None,
    next_page: bool,
    all_pages: bool,
    html_file: Path | None,
    as_json: bool,
    **given: Any,
) -> None:
    """Read a context package from folders, records, sources and direct entries.

    Each PATH and each source option (listed below, given by the installed plugins) is
    attached as the plugin that owns it says. The package is printed as the model sees
    it, refs as [[ref:ref_N]] aliases, with coverage. With --allow-host, every source is
    made and attached under a RunConfiguration allowing only those hosts. --cursor (or
    --package FILE --next) reads the next page of a printed package.
    """
    command = click_ctx.command
    assert isinstance(command, SourceOptionsCommand)
    overflow = _overflow(lossy, required_overflow)
    shown = _load_package(package_file) if package_file is not None else None
    cursor = _continuation(cursor, next_page, shown, package_file, query, refs)
    try:
        ctx = _context(click_ctx, task_id, allow_hosts, provider)
        _put_entries(ctx, puts, required_puts, put_files)
        command.attach(click_ctx, given, ctx)
        _attach_sources(ctx, sources)
        _require_material(ctx, refs, cursor)
        refs = tuple(_resolved(ref, shown, package_file) for ref in refs)
        intent = _intent(query, refs, include_hidden, source_kinds, binding_ids, overflow)
        reader = _reader(ctx, shown, max_chars, max_blocks)
        with terminal_progress(sys.stderr, enabled=not as_json):
            packages = _pages(reader, intent, cursor, all_pages)
    except ValidationError as exc:
        problems = "; ".join(in_flags(str(error["msg"])) for error in exc.errors())
        raise click.ClickException(problems) from exc
    except (TaskCtxError, OSError, ValueError) as exc:
        raise click.ClickException(in_flags(str(exc))) from exc
    _print(packages, all_pages=all_pages, as_json=as_json, html_file=html_file)


def _context(
    click_ctx: click.Context, task_id: str, allow_hosts: tuple[str, ...], provider: str | None
) -> TaskContext:
    """The read's TaskContext: the command line's host, --allow-host, --provider."""
    from taskctx.context import TaskContext
    from taskctx.policy import RunConfiguration

    configuration = RunConfiguration(allowed_hosts=allow_hosts or None)
    ctx = TaskContext(task_id, host=context_host(click_ctx), configuration=configuration)
    ctx.configure_index(provider)
    return ctx


def _require_material(ctx: TaskContext, refs: tuple[str, ...], cursor: str | None) -> None:
    """A usage error when the command names nothing to read."""
    if not (ctx.bindings or ctx.entries or refs or cursor):
        raise click.UsageError(
            "nothing to read: give a PATH, a source option (--source, --records...), --put or --ref"
        )


def _reader(
    ctx: TaskContext, shown: ContextPackage | None, max_chars: int, max_blocks: int
) -> ContextReader:
    """The command's reader, going on from ``--package`` when one is given."""
    from taskctx.model import ContextBudget

    reader = ctx.reader(consumer="cli", budget=ContextBudget(max_chars, max_blocks))
    if shown is not None:
        reader.continue_from(shown)
    return reader


def _pages(
    reader: ContextReader, intent: ContextReadIntent, cursor: str | None, all_pages: bool
) -> list[ContextPackage]:
    """The first page (of ``intent``, or the one ``cursor`` continues), then every next
    page with ``all_pages``."""
    packages = [reader.read_next(cursor) if cursor is not None else reader.read(intent)]
    while all_pages and packages[-1].has_more:
        packages.append(reader.read_next(packages[-1].cursor))
    return packages


def _print(
    packages: list[ContextPackage], *, all_pages: bool, as_json: bool, html_file: Path | None
) -> None:
    """The packages as the model sees them, or as one JSON value (an array of pages with
    ``all_pages``); with ``html_file``, their HTML page written there too."""
    if html_file is not None:
        write_html(packages, html_file)
    if as_json:
        dumped = [package.model_dump(mode="json") for package in packages]
        click.echo(json.dumps(dumped if all_pages else dumped[0], indent=2))
        return
    for package in packages:
        click.echo(package.render(next_step=_next_step(package)))


def _load_package(path: Path) -> ContextPackage:
    """The package in ``path`` (``taskctx read --json``: one object, or the last page of
    an ``--all-pages`` array)."""
    return load_packages(path, "--package")[-1]


def _continuation(
    cursor: str | None,
    next_page: bool,
    shown: ContextPackage | None,
    package_file: Path | None,
    query: str,
    refs: tuple[str, ...],
) -> str | None:
    """The cursor to read the next page with (``--cursor``, or ``--next``: the cursor of
    ``--package``), or None for a new read."""
    if next_page:
        if cursor is not None:
            raise click.UsageError("--next reads on from --package's cursor; drop --cursor")
        if shown is None:
            raise click.UsageError("--next needs --package FILE.json, the page to go on from")
        if not shown.has_more or not shown.cursor:
            raise click.UsageError(f"the package in {str(package_file)!r} has no next page")
        cursor = shown.cursor
    if cursor is not None and (query or refs):
        raise click.UsageError(
            "a cursor goes on with the query it was made for; drop --query and --ref"
        )
    return cursor


def _resolved(ref: str, shown: ContextPackage | None, package_file: Path | None) -> str:
    """``--ref`` as a canonical ref: an alias resolves through ``--package``."""
    alias = _ALIAS.fullmatch(ref.strip())
    if alias is None:
        return ref
    if shown is None:
        raise click.BadParameter(
            f"{ref!r} is an alias: give --package FILE.json, the package that showed it",
            param_hint="--ref",
        )
    try:
        return str(shown.resolve_alias(alias[1]))
    except TaskCtxError:
        raise click.BadParameter(
            f"{ref!r} is not an alias the package in {str(package_file)!r} shows",
            param_hint="--ref",
        ) from None


def _next_step(package: ContextPackage) -> str | None:
    """How to read the page after ``package``: this command with its cursor (spelled out
    when this process is the ``taskctx`` command itself)."""
    if not package.has_more or not package.cursor:
        return None
    argv = sys.argv
    if not argv or Path(argv[0]).name not in ("taskctx", "__main__.py"):
        return (
            f"run the same taskctx read with --cursor {package.cursor} in place of "
            "--query and --ref"
        )
    kept: list[str] = []
    skip = False
    for arg in argv[1:]:
        if skip:
            skip = False
        elif arg in _CONTINUED_WITH_VALUE:
            skip = True
        elif arg != "--next" and not arg.startswith(tuple(f"{o}=" for o in _CONTINUED_WITH_VALUE)):
            kept.append(arg)
    return "run " + shlex.join(["taskctx", *kept, "--cursor", package.cursor])


_CONTINUED_WITH_VALUE = ("--cursor", "--query", "-q", "--ref")
"""Options a continuation drops: the cursor carries the query, and a new one replaces it."""


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
