"""The arguments of a record query: one list for ``RecordStore.query`` and ``PinnedView.query``.

:func:`query_request` holds the public parameter list, its defaults and its validation,
and returns a frozen :class:`QueryRequest`. :func:`takes_query_request` gives a method
that takes a ``QueryRequest`` exactly that signature (for callers, ``inspect``, ``help``
and mypy), so the two query methods cannot drift apart.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Concatenate, Literal, ParamSpec, TypeVar

from taskctx.cursor import check_ttl
from taskctx_records.query import QuerySpec

__all__ = ["QueryRequest", "query_request", "takes_query_request"]

S = TypeVar("S")
R = TypeVar("R")
P = ParamSpec("P")


@dataclass(frozen=True)
class QueryRequest:
    """A validated record query: what it asks (``spec``), its cursor lifetime and, when
    it continues an earlier page, the cursor that query issued."""

    spec: QuerySpec
    cursor_ttl: float
    cursor: str | None = None


def query_request(
    collection: str | None = None,
    kind: str | None = None,
    scope: Mapping[str, Any] | None = None,
    filters: Mapping[str, Any] | None = None,
    order: Literal["asc", "desc"] = "asc",
    page_size: int = 50,
    cursor_ttl: float = 3600,
    *,
    max_records: int | None = None,
    max_bytes: int | None = None,
    cursor: str | None = None,
) -> QueryRequest:
    """Validate the arguments of a record query (ValueError naming the bad one).

    ``max_records``/``max_bytes`` bound what one page returns (a page always holds at
    least one record when any remain). ``cursor_ttl`` is seconds in
    ``(0, MAX_CURSOR_TTL]`` (``taskctx.cursor.check_ttl``). A ``cursor`` must be one this
    very query issued; the page then continues it.
    """
    ttl = check_ttl(cursor_ttl)
    return QueryRequest(
        spec=QuerySpec.build(
            collection=collection,
            kind=kind,
            scope=scope,
            filters=filters,
            order=order,
            page_size=page_size,
            max_records=max_records,
            max_bytes=max_bytes,
        ),
        cursor_ttl=ttl,
        cursor=cursor,
    )


def _taking(
    template: Callable[P, QueryRequest],
) -> Callable[[Callable[[S, QueryRequest], R]], Callable[Concatenate[S, P], R]]:
    """A decorator: the method takes ``template``'s arguments and receives its result."""
    parameters = list(inspect.signature(template).parameters.values())

    def decorate(method: Callable[[S, QueryRequest], R]) -> Callable[Concatenate[S, P], R]:
        own = inspect.signature(method)

        @functools.wraps(method)
        def call(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
            return method(self, template(*args, **kwargs))

        call.__signature__ = own.replace(  # type: ignore[attr-defined]
            parameters=[next(iter(own.parameters.values())), *parameters]
        )
        return call

    return decorate


takes_query_request = _taking(query_request)
"""Decorate ``def query(self, request: QueryRequest)``: it is called with the arguments of
:func:`query_request` and receives them validated."""
