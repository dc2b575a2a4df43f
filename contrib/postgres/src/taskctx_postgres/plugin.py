"""Registers the ``postgresql://`` record store backend (``register_record_backends``) and
the ``postgres`` lexical index provider (``register_index_providers``)."""

from __future__ import annotations

from collections.abc import Callable

from taskctx_records.backend import StoreBackend
from taskctx_records.backends import BackendOpener

from taskctx import IndexProvider
from taskctx.hookspecs import hookimpl

__all__ = ["open_postgres", "register_index_providers", "register_record_backends"]


def open_postgres(url: str, read_only: bool) -> StoreBackend:
    """The backend of the store in the database ``url`` names."""
    from taskctx_postgres.backend import PostgresBackend

    return PostgresBackend(url, read_only=read_only)


# optionalhook: taskctx-records specifies this hook and adds its spec to the host when a
# store URL is first opened, after the plugins have loaded (pluggy checks the signature then)
@hookimpl(optionalhook=True)
def register_record_backends(register: Callable[[str, BackendOpener], None]) -> None:
    """``postgresql://`` and ``postgres://`` (libpq's two schemes)."""
    register("postgresql", open_postgres)
    register("postgres", open_postgres)


@hookimpl
def register_index_providers(register: Callable[[IndexProvider], None]) -> None:
    """The ``postgres`` lexical provider (BM25 in PostgreSQL). It connects to nothing
    here: the database URL (``TASKCTX_PG_INDEX_URL``) is read when a partition opens."""
    from taskctx_postgres.lexical import PostgresLexicalProvider

    register(PostgresLexicalProvider())
