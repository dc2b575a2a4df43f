"""Registers the ``fts`` provider through the ordinary hook."""

from __future__ import annotations

from collections.abc import Callable

from taskctx import IndexProvider
from taskctx.hookspecs import hookimpl
from taskctx_fts.provider import FtsProvider

__all__ = ["register_index_providers"]


@hookimpl
def register_index_providers(register: Callable[[IndexProvider], None]) -> None:
    """The ``fts`` lexical provider (SQLite FTS5, BM25)."""
    register(FtsProvider())
