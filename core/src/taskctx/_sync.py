"""Thin sync facades over the async API, for scripts and the CLI."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from taskctx.errors import SyncInAsyncError

T = TypeVar("T")


def run_sync(coroutine: Coroutine[Any, Any, T], async_name: str) -> T:
    """Run ``coroutine`` to completion; refuse inside a running event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    coroutine.close()
    raise SyncInAsyncError(
        f"called a sync method inside a running event loop; await {async_name}() instead"
    )
