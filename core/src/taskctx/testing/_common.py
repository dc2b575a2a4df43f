"""Shared helpers of the conformance kits."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["run", "sha256_of"]

T = TypeVar("T")


def sha256_of(content: str | bytes) -> str:
    """``sha256:<hex>`` of text (UTF-8) or bytes: the digest format every source uses."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    return "sha256:" + hashlib.sha256(data).hexdigest()


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run one coroutine to completion (the kits are synchronous pytest classes)."""
    return asyncio.run(coroutine)
