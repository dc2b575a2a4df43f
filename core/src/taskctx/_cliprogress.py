"""Progress bars of ``taskctx`` commands (for ``taskctx.cli``): on a terminal only.

What the work reports through :mod:`taskctx.progress` (documents read and parsed,
items indexed) is drawn as a click progress bar on stderr, one bar per task, when
stderr is a terminal and the command's output is not JSON. On a pipe, in a CI log or
with ``--json`` nothing is drawn.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

import click
from click._termui_impl import ProgressBar

from taskctx.progress import listening

__all__ = ["TerminalProgress", "terminal_progress"]


class TerminalProgress:
    """A progress listener drawing one click bar per task on a terminal stream."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self._bar: ProgressBar[int] | None = None
        self._task: str | None = None
        self._lock = threading.Lock()

    def __call__(self, task: str, done: int, total: int) -> None:
        """Move the task's bar to ``done`` of ``total`` (a new task finishes the last)."""
        with self._lock:
            bar = self._bar
            if bar is None or task != self._task or total != bar.length:
                self._finish()
                bar = click.progressbar(
                    length=total, label=task, file=self.stream, show_pos=True, show_eta=False
                )
                bar.__enter__()
                self._bar, self._task = bar, task
            if done > bar.pos:
                bar.update(done - bar.pos)
            if done >= total:
                self._finish()

    def close(self) -> None:
        """Finish the bar being drawn, if any."""
        with self._lock:
            self._finish()

    def _finish(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = self._task = None


@contextmanager
def terminal_progress(stream: TextIO, *, enabled: bool = True) -> Iterator[None]:
    """Draw the progress reported inside this block on ``stream`` when it is a terminal
    and ``enabled`` (False for ``--json``); otherwise draw nothing."""
    if not enabled or not stream.isatty():
        yield
        return
    drawer = TerminalProgress(stream)
    try:
        with listening(drawer):
            yield
    finally:
        drawer.close()
