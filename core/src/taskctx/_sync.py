"""Thin sync facades over the async API, for scripts and the CLI.

On the main thread the facades share one event loop (and its default executor, whose
worker threads run the sources' blocking work) across calls: ``asyncio.run`` per call
started a loop and new worker threads each time and, on Python 3.11, rendered the repr of
the whole task (its coroutine's arguments, frozen models and all) while restoring the
SIGINT handler, a large part of a warm read. Ctrl-C is taken as ``asyncio.run`` takes it
(the first cancels the call, which then raises KeyboardInterrupt), by a plain handler.
Each call still ends as ``asyncio.run`` ends its coroutine: the tasks it left are
cancelled and awaited (async generators left open are closed at exit: a
``shutdown_asyncgens`` per call would warn on every later generator). Other threads keep
``asyncio.run``: a loop per thread would outlive its thread unclosed.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import signal
import threading
from collections.abc import Coroutine
from types import FrameType
from typing import Any, TypeVar

from taskctx.errors import SyncInAsyncError

T = TypeVar("T")


class _SharedLoop:
    """The main thread's event loop for sync facades, made on first use, closed at exit."""

    __slots__ = ("loop", "pid")

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.pid = 0

    def get(self) -> asyncio.AbstractEventLoop:
        """The loop, new if none is open in this process (a forked child makes its own)."""
        loop = self.loop
        if loop is None or loop.is_closed() or self.pid != os.getpid():
            loop = asyncio.new_event_loop()
            if self.loop is None:
                atexit.register(self.close)
            self.loop, self.pid = loop, os.getpid()
        return loop

    def drop(self) -> None:
        """Close and forget the loop (after a call that could not be settled)."""
        loop, self.loop = self.loop, None
        if loop is not None and not loop.is_closed() and self.pid == os.getpid():
            loop.close()

    def close(self) -> None:
        """Shut the default executor down and close the loop (at interpreter exit)."""
        loop = self.loop
        if loop is not None and not loop.is_closed() and self.pid == os.getpid():
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.run_until_complete(loop.shutdown_default_executor())
            finally:
                self.drop()


_SHARED = _SharedLoop()


def _settle(loop: asyncio.AbstractEventLoop) -> None:
    """What ``asyncio.run`` does after its coroutine: cancel and await the tasks left."""
    pending = asyncio.all_tasks(loop)
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))


def run_sync(coroutine: Coroutine[Any, Any, T], async_name: str) -> T:
    """Run ``coroutine`` to completion; refuse inside a running event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        coroutine.close()
        raise SyncInAsyncError(
            f"called a sync method inside a running event loop; await {async_name}() instead"
        )
    if threading.current_thread() is not threading.main_thread():
        return asyncio.run(coroutine)
    loop = _SHARED.get()
    task = loop.create_task(coroutine)
    interrupt = _Interrupt(loop, task)
    installed = signal.getsignal(signal.SIGINT) is signal.default_int_handler
    if installed:
        signal.signal(signal.SIGINT, interrupt.handle)
    try:
        return loop.run_until_complete(task)
    except asyncio.CancelledError:
        uncancel = getattr(task, "uncancel", None)  # Python 3.11+
        if interrupt.count and (uncancel is None or uncancel() == 0):
            raise KeyboardInterrupt from None
        raise
    finally:
        if installed and signal.getsignal(signal.SIGINT) == interrupt.handle:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            _settle(loop)
        except BaseException:
            _SHARED.drop()
            raise


class _Interrupt:
    """Ctrl-C during a sync call, as ``asyncio.run`` takes it: the first cancels the call's
    task (its cleanups run; the call raises KeyboardInterrupt), a second interrupts."""

    __slots__ = ("count", "loop", "task")

    def __init__(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any]) -> None:
        self.loop, self.task, self.count = loop, task, 0

    def handle(self, signum: int, frame: FrameType | None) -> None:
        """The SIGINT handler while the call runs."""
        self.count += 1
        if self.count == 1 and not self.task.done():
            self.task.cancel()
            self.loop.call_soon_threadsafe(lambda: None)  # wake the loop's select
            return
        raise KeyboardInterrupt
