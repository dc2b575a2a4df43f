"""Registers the ``record_store`` source kind, ``taskctx read --records DIR`` and the
``taskctx records`` commands."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from taskctx import CliSource, SourceFactory
from taskctx.hookspecs import hookimpl
from taskctx_records.source import RecordSource

if TYPE_CHECKING:
    import click

__all__ = ["make_source", "register_cli_sources", "register_commands", "register_source_kinds"]


def make_source(
    root: str | Path,
    scope: Mapping[str, Any] | str | None = None,
    collections: Sequence[str] | str | None = None,
) -> RecordSource:
    """The factory behind ``host.source("record_store", root=..., scope=..., collections=...)``.

    From the CLI (``--source record_store:root=DIR``) options arrive as strings: ``scope``
    may be JSON and ``collections`` a ``+``-separated list.
    """
    from taskctx.jsonsafe import loads_json
    from taskctx_records.store import RecordStore

    parsed_scope = loads_json(scope, "record_store scope") if isinstance(scope, str) else scope
    names = (
        [c for c in collections.split("+") if c] if isinstance(collections, str) else collections
    )
    store = RecordStore(root, mode="read_only")
    return RecordSource(store, scope=parsed_scope, collections=names)


@hookimpl
def register_source_kinds(register: Callable[[str, SourceFactory], None]) -> None:
    """Source kind ``record_store``."""
    register("record_store", make_source)


@hookimpl
def register_commands(register: Callable[[click.Command], None]) -> None:
    """``taskctx records put | get | query | events``."""
    from taskctx_records.cli import records_group

    register(records_group)


@hookimpl
def register_cli_sources(register: Callable[[CliSource], None]) -> None:
    """``taskctx read --records DIR``: the record store under DIR, bound as ``records``."""
    register(
        CliSource(
            kind="record_store",
            value_option="root",
            flag="--records",
            binding_id="records",
            help="Attach the record store under this directory, or at this database URL "
            "(taskctx-records; URLs need their backend, e.g. taskctx-postgres).",
        )
    )
