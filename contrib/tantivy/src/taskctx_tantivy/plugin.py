"""Registers the ``tantivy`` lexical index provider (``register_index_providers``)."""

from __future__ import annotations

from collections.abc import Callable

from taskctx import IndexProvider
from taskctx.hookspecs import hookimpl

__all__ = ["register_index_providers"]


@hookimpl
def register_index_providers(register: Callable[[IndexProvider], None]) -> None:
    """The ``tantivy`` provider. Nothing is opened here: a partition's index directory is
    made when the kernel first opens the partition."""
    from taskctx_tantivy.provider import TantivyProvider

    register(TantivyProvider())
