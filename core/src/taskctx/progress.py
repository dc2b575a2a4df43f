"""Progress of slow work: reported by whoever does it, shown by whoever listens.

A source, an index provider or the kernel calls :func:`report` as it goes
(``report("parsing docs", 12, 80)``); it costs a context-variable lookup when nobody
listens. A caller listens for the work it starts with ``with listening(callback):``;
the listener is a context variable, so work run by ``asyncio.to_thread`` (which copies
the context) reports to it too, and two readers in two tasks do not hear each other.
The command line listens on a terminal only, never on a pipe or with ``--json``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar

__all__ = ["ProgressListener", "listening", "report"]

ProgressListener = Callable[[str, int, int], None]
"""``listener(task, done, total)``: ``task`` says what is being done and to what
(``"parsing docs"``, ``"indexing files"``); ``done`` of ``total`` units are finished."""

_listener: ContextVar[ProgressListener | None] = ContextVar("taskctx_progress", default=None)


def report(task: str, done: int, total: int) -> None:
    """Say that ``done`` of ``total`` units of ``task`` are finished (nothing if no one
    listens). A listener's failure is its own: it never stops the work."""
    listener = _listener.get()
    if listener is None:
        return
    with suppress(Exception):  # showing progress must not break the work
        listener(task, done, total)


@contextmanager
def listening(listener: ProgressListener) -> Iterator[None]:
    """Send what :func:`report` says inside this block (and the work it starts) to
    ``listener``."""
    token = _listener.set(listener)
    try:
        yield
    finally:
        _listener.reset(token)
