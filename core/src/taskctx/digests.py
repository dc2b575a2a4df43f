"""The one digest format: ``sha256:`` and 64 lower-case hex digits.

Content versions, exact-read digests and content-addressed names all use it. Sources
and plugins call :func:`sha256_digest` rather than spelling the prefix themselves, so
the format has one owner.
"""

from __future__ import annotations

import hashlib
import re

__all__ = ["DIGEST_PATTERN", "SHA256_PREFIX", "is_digest", "sha256_digest", "sha256_hex"]

SHA256_PREFIX = "sha256:"
"""The algorithm prefix of every digest taskctx writes."""

DIGEST_PATTERN = re.compile(re.escape(SHA256_PREFIX) + "[0-9a-f]{64}")
"""A whole digest (``fullmatch``): the prefix and 64 lower-case hex digits."""


def _bytes_of(data: object) -> bytes:
    """The bytes to hash; TypeError naming the type for anything but bytes or str."""
    if isinstance(data, str):
        return data.encode("utf-8")
    if isinstance(data, bytes):
        return data
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    raise TypeError(f"a digest is of bytes or str (UTF-8), not {type(data).__name__}")


def sha256_hex(data: bytes | str) -> str:
    """The bare 64-digit hex SHA-256 of ``data`` (bytes, or text as UTF-8)."""
    return hashlib.sha256(_bytes_of(data)).hexdigest()


def sha256_digest(data: bytes | str) -> str:
    """``sha256:<hex>`` of ``data`` (bytes, or text as UTF-8): the digest every source uses."""
    return SHA256_PREFIX + sha256_hex(data)


def is_digest(value: object) -> bool:
    """Whether ``value`` is a digest in the one format (a str ``sha256:<64 lower hex>``)."""
    return isinstance(value, str) and DIGEST_PATTERN.fullmatch(value) is not None
