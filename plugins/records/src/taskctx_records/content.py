"""Canonical encoding of record content: text, bytes or JSON, with sha256 and size."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from json.encoder import encode_basestring
from typing import Any

from taskctx.jsonsafe import check_json_depth
from taskctx_records.values import ContentType

__all__ = [
    "Encoded",
    "canonical_json",
    "decode",
    "encode",
    "loads_stored",
    "pretty_json",
    "unchecked_canonical_json",
]

# one encoder each, made once: json.dumps with options builds a new JSONEncoder per call
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
_CONTENT = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)


def canonical_json(value: Any, what: str = "JSON value") -> str:
    """The canonical JSON text: sorted keys, no spaces, UTF-8 kept (``ensure_ascii=False``).

    TypeError naming ``what`` if ``value`` nests deeper than ``MAX_JSON_DEPTH`` levels.
    """
    check_json_depth(value, what)
    return _CANONICAL.encode(value)


def unchecked_canonical_json(value: Any) -> str:
    """:func:`canonical_json` of a value whose depth the caller has already checked
    (a part of a checked whole, such as one value of a checked scope)."""
    return _CANONICAL.encode(value)


class Encoded:
    """Content ready to store: its type, the stored value, digest and byte size."""

    __slots__ = ("content_type", "sha256", "size", "stored")

    def __init__(self, content_type: ContentType, stored: str | bytes, canonical: bytes) -> None:
        self.content_type: ContentType = content_type
        self.stored = stored
        self.sha256 = hashlib.sha256(canonical).hexdigest()
        self.size = len(canonical)


def encode(content: Any) -> Encoded:
    """Classify and canonicalize ``content`` (str -> text, bytes -> bytes, else JSON)."""
    if isinstance(content, str):
        return Encoded("text", content, content.encode("utf-8"))
    if isinstance(content, (bytes, bytearray, memoryview)):
        data = bytes(content)
        return Encoded("bytes", data, data)
    check_json_depth(content, "record content")
    try:
        text = _CONTENT.encode(content)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"record content must be str, bytes or JSON-compatible: {exc}") from None
    return Encoded("json", text, text.encode("utf-8"))


# the scanner json.loads ends in (typeshed omits the attribute JSONDecoder sets in __init__)
_SCAN: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def loads_stored(text: str) -> Any:
    """``json.loads(text)`` of JSON the store wrote (content, scope, meta: canonical, so
    nothing around the value), by the decoder's scanner itself: ``json.loads`` spends more
    on its whitespace passes and checks than on scanning a small value. Any other text
    (whitespace around the value, anything not JSON) is left to ``json.loads``: the same
    value, or the same error."""
    try:
        value, end = _SCAN(text, 0)
    except StopIteration:
        end = -1
    if end != len(text):
        return json.loads(text)
    return value


def decode(content_type: str, stored: str | bytes | None) -> Any:
    """The caller's value back from what was stored."""
    if content_type == "bytes":
        return stored if isinstance(stored, bytes) else b""
    if content_type == "json":
        if isinstance(stored, str):
            return loads_stored(stored)
        return json.loads(stored if stored is not None else "null")
    return stored if isinstance(stored, str) else (stored or b"").decode("utf-8")


# -- the JSON a model reads ---------------------------------------------------------------

_NEWLINES = ["\n" + "  " * depth for depth in range(32)]


class _Unusual(Exception):
    """A value :func:`pretty_json` leaves to ``json.dumps`` (not plain decoded JSON)."""


def _newline(depth: int) -> str:
    while depth >= len(_NEWLINES):
        _NEWLINES.append("\n" + "  " * len(_NEWLINES))
    return _NEWLINES[depth]


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value == float("inf"):
        return "Infinity"
    if value == -float("inf"):
        return "-Infinity"
    return float.__repr__(value)


def _scalar(value: Any) -> str:
    """A leaf as the encoder writes it; _Unusual for anything else."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    kind = type(value)
    if kind is int:
        return int.__repr__(value)
    if kind is float:
        return _float(value)
    raise _Unusual


def _member(item: Any, depth: int, out: list[str]) -> None:
    """One member of a container at ``depth``: a string or scalar by the C encoders, a
    container one level deeper."""
    item_kind = type(item)
    if item_kind is str:
        out.append(encode_basestring(item))
    elif item_kind is dict or item_kind is list:
        _render(item, depth + 1, out)
    else:
        out.append(_scalar(item))


def _render(value: Any, depth: int, out: list[str]) -> None:
    """Append the indented JSON of ``value`` (a container at ``depth``) to ``out``."""
    kind = type(value)
    inner = _newline(depth + 1)
    separator = "," + inner
    if kind is dict:
        if not value:
            out.append("{}")
            return
        keys = sorted(value)
        out.append("{")
        lead = inner
        for key in keys:
            if type(key) is not str:
                raise _Unusual
            out.append(lead)
            out.append(encode_basestring(key))
            out.append(": ")
            _member(value[key], depth, out)
            lead = separator
        out.append(_newline(depth))
        out.append("}")
        return
    if kind is list:
        if not value:
            out.append("[]")
            return
        out.append("[")
        lead = inner
        for item in value:
            out.append(lead)
            _member(item, depth, out)
            lead = separator
        out.append(_newline(depth))
        out.append("]")
        return
    raise _Unusual


def pretty_json(value: Any) -> str:
    """``json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)``, the same text.

    ``json.dumps`` with an indent runs the pure-Python encoder; this walks the containers
    of plain decoded JSON (dicts with str keys, lists, str, int, float, bool, None) in one
    function and leaves every string, number and literal to the C encoder's own leaf
    encoders. Anything else (subclasses, tuples, other key types) goes to ``json.dumps``,
    so the text (or the error) is always exactly what ``json.dumps`` gives.
    """
    kind = type(value)
    try:
        if kind is str:
            return encode_basestring(value)
        if kind is dict or kind is list:
            out: list[str] = []
            _render(value, 0, out)
            return "".join(out)
        return _scalar(value)
    except (_Unusual, TypeError, ValueError, RecursionError):
        return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)
