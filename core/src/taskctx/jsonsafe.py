"""How deep JSON values may nest, checked without recursion.

Every JSON value taskctx stores, signs or carries (record content, scope, meta,
checkpoint state, event payloads, link meta, cursor bodies, run-configuration
extensions, consumer capabilities and metadata) may nest at most ``MAX_JSON_DEPTH``
arrays and objects. Python's ``json`` and pydantic recurse once per level, so a value
nested a few hundred levels deep would otherwise end in a bare ``RecursionError`` (or
a stack overflow), wherever the interpreter's limit happens to fall. These checks walk
the value, or scan the text, iteratively and fail with an error that names the limit.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["MAX_JSON_DEPTH", "check_json_depth", "check_json_text_depth", "loads_json"]

MAX_JSON_DEPTH = 100
"""The most arrays and objects a JSON value may nest (``[[1]]`` nests 2)."""

_SCALARS = frozenset({str, int, float, bool, type(None)})
_CONTAINERS = (Mapping, list, tuple)
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


def _too_deep(what: str, limit: int) -> str:
    return (
        f"{what} nests arrays and objects more than {limit} levels deep "
        f"(JSON values are limited to {limit} levels)"
    )


def check_json_depth(value: object, what: str, *, limit: int = MAX_JSON_DEPTH) -> None:
    """Raise TypeError naming ``what`` and ``limit`` if ``value`` nests deeper than ``limit``.

    Mappings, lists and tuples count as levels; anything else is a leaf (whether it is
    JSON at all is the caller's check). A value that contains itself is refused too.
    Iterative, so any depth fails cleanly, in time proportional to what is walked.
    """
    kind = value.__class__
    if kind is not dict and kind is not list and not isinstance(value, _CONTAINERS):
        return
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            _refuse_too_deep(value, what, limit)
        children = item.values() if item.__class__ is dict or isinstance(item, Mapping) else item
        for child in children:
            kind = child.__class__
            if kind in _SCALARS:
                continue
            # exact dicts and lists first: an ABC check costs more than the whole walk
            if kind is dict or kind is list or isinstance(child, _CONTAINERS):
                stack.append((child, depth + 1))


def _refuse_too_deep(value: object, what: str, limit: int) -> None:
    """Raise for a value found too deep: say whether it is deep or contains itself.

    The slow walk, tracking the containers on the current path, runs only once a value
    is known to fail; it stops at the limit, so it is bounded too.
    """
    on_path: set[int] = set()
    stack: list[tuple[Any, int, bool]] = [(value, 1, False)]
    while stack:
        item, depth, leaving = stack.pop()
        if leaving:
            on_path.discard(id(item))
            continue
        if id(item) in on_path:
            raise TypeError(f"{what} contains itself, so it is not a JSON value")
        if depth > limit:
            break
        on_path.add(id(item))
        stack.append((item, depth, True))
        for child in item.values() if isinstance(item, Mapping) else item:
            if isinstance(child, (Mapping, list, tuple)):
                stack.append((child, depth + 1, False))
    raise TypeError(_too_deep(what, limit))


def check_json_text_depth(text: str, what: str, *, limit: int = MAX_JSON_DEPTH) -> None:
    """Raise ValueError naming ``what`` and ``limit`` if JSON ``text`` nests deeper.

    A scan over brackets outside strings, without parsing or recursion: run it before
    ``json.loads``, whose C scanner recurses once per level.
    """
    depth = 0
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token in ("[", "{"):
            depth += 1
            if depth > limit:
                raise ValueError(_too_deep(what, limit))
        elif token in ("]", "}"):
            depth -= 1


def loads_json(text: str | bytes, what: str, *, limit: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads(text)`` after :func:`check_json_text_depth`.

    Raises ValueError naming ``what``: for nesting past the limit and for text that is
    not JSON.
    """
    raw = text.decode("utf-8") if isinstance(text, bytes) else text
    check_json_text_depth(raw, what, limit=limit)
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise ValueError(f"{what} is not valid JSON: {exc}") from None
