"""Shared helpers of the conformance kits."""

from __future__ import annotations

import asyncio
import struct
import zlib
from collections.abc import Coroutine
from typing import Any, TypeVar

from taskctx.digests import sha256_digest

__all__ = ["make_png", "run", "sha256_of"]

T = TypeVar("T")


def sha256_of(content: str | bytes) -> str:
    """``sha256:<hex>`` of text (UTF-8) or bytes: the digest format every source uses."""
    return sha256_digest(content)


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run one coroutine to completion (the kits are synchronous pytest classes)."""
    return asyncio.run(coroutine)


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    crc = zlib.crc32(kind + body) & 0xFFFFFFFF
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)


def make_png(
    width: int = 1,
    height: int = 1,
    *,
    color_type: int = 2,
    depth: int = 8,
    idat: bytes | None = None,
) -> bytes:
    """A complete, real PNG (IHDR, IDAT, IEND) of the given size, for image tests.

    ``idat`` replaces the compressed pixel data (to build a damaged image on purpose).
    """
    header = struct.pack(">IIBBBBB", width, height, depth, color_type, 0, 0, 0)
    if idat is None:
        idat = zlib.compress(b"".join(b"\x00" + b"\x7f" * (3 * width) for _ in range(height)))
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"IDAT", idat)
        + _png_chunk(b"IEND", b"")
    )
