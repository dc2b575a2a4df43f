"""``taskctx records put | get | query | events``: the record store from the shell, as JSON."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import click
from pydantic import BaseModel

from taskctx.errors import TaskCtxError
from taskctx.jsonsafe import check_json_text_depth, loads_json

__all__ = ["records_group"]

_ROOT = click.option(
    "--records",
    "--root",
    "root",
    default=".",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Folder whose .taskctx/records/records.db holds the store, or a database URL "
    "(postgresql://user@host/db, with taskctx-postgres); taskctx read --records names it "
    "the same way; --root is the older spelling.",
)
_OUTPUT = click.option(
    "--json",
    is_flag=True,
    expose_value=False,
    help="Print JSON (what records commands always print; one spelling for every command).",
)


def _json_arg(value: str | None, name: str) -> Any:
    if value is None:
        return None
    try:
        return loads_json(value, name)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint=name) from None


def _emit(value: Any) -> None:
    if isinstance(value, BaseModel):
        click.echo(value.model_dump_json(indent=2))
    else:
        click.echo(json.dumps(value, indent=2, default=str))


def _answer(produce: Callable[[], Any]) -> None:
    """Print what ``produce`` returns as JSON; store errors become a clear CLI error."""
    try:
        value = produce()
    except (TaskCtxError, ValueError, TypeError) as exc:
        raise click.ClickException(str(exc)) from exc
    _emit(value)


def _store(root: str, *, read_only: bool = False) -> Any:
    from taskctx_records.store import RecordStore

    return RecordStore(root, mode="read_only" if read_only else "read_write")


@click.group("records")
def records_group() -> None:
    """The record store: put, get, query and events, with JSON output."""


@records_group.command("put")
@_ROOT
@click.option("--collection", required=True, help="Collection of the record (required).")
@click.option("--kind", default=None, help="Kind of record.")
@click.option("--scope", default=None, help='Scope as a JSON object, e.g. \'{"task_id": "t1"}\'.')
@click.option("--meta", default=None, help="Metadata as a JSON object.")
@click.option("--id", "record_id", default=None, help="Write a new version of this record.")
@click.option("--content-json", is_flag=True, help="CONTENT is JSON, stored as JSON.")
@click.option(
    "--json",
    "old_json",
    is_flag=True,
    help="Deprecated spelling of --content-json (--json means output everywhere else).",
)
@click.argument("content")
def put_command(
    root: str,
    collection: str,
    kind: str | None,
    scope: str | None,
    meta: str | None,
    record_id: str | None,
    content_json: bool,
    old_json: bool,
    content: str,
) -> None:
    """Store CONTENT ('-' reads stdin) and print the new record's ref as JSON."""
    if old_json:
        click.echo(
            "warning: taskctx records put --json is deprecated: CONTENT as JSON is "
            "--content-json (--json means JSON output in every other command)",
            err=True,
        )
    text = sys.stdin.read() if content == "-" else content
    value: Any = _json_arg(text, "CONTENT") if content_json or old_json else text
    parsed_scope, parsed_meta = _json_arg(scope, "--scope"), _json_arg(meta, "--meta")
    _answer(
        lambda: _store(root).put(
            value,
            collection=collection,
            kind=kind,
            scope=parsed_scope,
            meta=parsed_meta,
            record_id=record_id,
        )
    )


@records_group.command("get")
@_ROOT
@_OUTPUT
@click.option("--at-revision", type=int, default=None, help="Read as of this store revision.")
@click.argument("record_id")
def get_command(root: str, at_revision: int | None, record_id: str) -> None:
    """Print one record (bytes content is shown base64-encoded)."""
    _answer(lambda: _store(root, read_only=True).get(record_id, at_revision=at_revision))


@records_group.command("query")
@_ROOT
@_OUTPUT
@click.option("--collection", default=None, help="Only this collection.")
@click.option("--kind", default=None, help="Only this kind.")
@click.option("--scope", default=None, help="Scope filter as a JSON object.")
@click.option(
    "--filter",
    "filters",
    multiple=True,
    metavar="PATH=JSON",
    help="Equality on a dotted path of content or meta; repeatable.",
)
@click.option(
    "--order",
    type=click.Choice(["asc", "desc"]),
    default="asc",
    show_default=True,
    help="Order by record id.",
)
@click.option(
    "--page-size",
    type=click.IntRange(min=1),
    default=50,
    show_default=True,
    help="Records per page.",
)
@click.option("--cursor", default=None, help="Continue the result this cursor came from.")
def query_command(
    root: str,
    collection: str | None,
    kind: str | None,
    scope: str | None,
    filters: tuple[str, ...],
    order: str,
    page_size: int,
    cursor: str | None,
) -> None:
    """Print one page of matching records with its cursor and coverage."""
    parsed: dict[str, Any] = {}
    for raw in filters:
        path, sep, value = raw.partition("=")
        if not sep or not path:
            raise click.BadParameter(f"expected PATH=JSON, got {raw!r}", param_hint="--filter")
        try:
            check_json_text_depth(value, f"--filter {path}")
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--filter") from None
        try:
            parsed[path] = json.loads(value)
        except ValueError:
            parsed[path] = value  # a bare word is a string
    parsed_scope = _json_arg(scope, "--scope")

    def page() -> Any:
        store = _store(root, read_only=True)
        if cursor is not None:
            return store.query_continue(cursor)
        return store.query(
            collection=collection,
            kind=kind,
            scope=parsed_scope,
            filters=parsed or None,
            order=order,
            page_size=page_size,
        )

    _answer(page)


@records_group.command("events")
@_ROOT
@_OUTPUT
@click.option("--stream", default=None, help="Only this stream.")
@click.option("--task-id", default=None, help="Only events of this task.")
@click.option("--type", "event_type", default=None, help="Only events of this type.")
@click.option("--actor", default=None, help="Only events by this actor.")
@click.option(
    "--page-size",
    type=click.IntRange(min=1),
    default=50,
    show_default=True,
    help="Events per page.",
)
@click.option("--cursor", default=None, help="Continue the result this cursor came from.")
def events_command(
    root: str,
    stream: str | None,
    task_id: str | None,
    event_type: str | None,
    actor: str | None,
    page_size: int,
    cursor: str | None,
) -> None:
    """Print one page of events (by stream, task, type or actor) with its cursor."""

    def page() -> Any:
        store = _store(root, read_only=True)
        if cursor is not None:
            return store.events_continue(cursor)
        return store.events(
            stream, task_id=task_id, type=event_type, actor=actor, page_size=page_size
        )

    _answer(page)
