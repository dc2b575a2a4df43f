"""``WorkingStateConfiguration``: the limits of a working state and of its projection."""

from __future__ import annotations

from pydantic import Field

from taskctx.model import FrozenModel

__all__ = ["MIN_PROJECTION_CHARS", "WorkingStateConfiguration"]

MIN_PROJECTION_CHARS = 256
"""The smallest projection bound: room for the frame and both omitted-count lines."""


class WorkingStateConfiguration(FrozenModel):
    """Limits of one working state (one session's, or global memory's).

    Notes and tasks share ``max_bytes`` of UTF-8: note keys and values, task titles
    and task notes. A write that would pass any limit is refused whole. The projection
    block is never longer than ``projection_max_chars`` characters. ``max_changes``
    bounds the change log a WorkingState keeps in memory.
    """

    max_notes: int = Field(default=256, ge=0)
    max_tasks: int = Field(default=128, ge=0)
    max_bytes: int = Field(default=65_536, ge=0)
    projection_max_chars: int = Field(default=8_000, ge=MIN_PROJECTION_CHARS)
    max_changes: int = Field(default=1_000, ge=1)
