"""Canonical encoding of record content: text, bytes or JSON, with sha256 and size."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from taskctx.jsonsafe import check_json_depth
from taskctx_records.values import ContentType

__all__ = ["Encoded", "canonical_json", "decode", "encode", "unchecked_canonical_json"]

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


def decode(content_type: str, stored: str | bytes | None) -> Any:
    """The caller's value back from what was stored."""
    if content_type == "bytes":
        return stored if isinstance(stored, bytes) else b""
    if content_type == "json":
        return json.loads(stored if stored is not None else "null")
    return stored if isinstance(stored, str) else (stored or b"").decode("utf-8")
