"""``WorkingStateConfiguration``: what a working state may store, and what its projection shows.

Two kinds of settings, kept apart on purpose:

- **Storage limits** (``max_notes``, ``max_tasks``, ``max_bytes``) bound what is stored;
  a write past one is refused whole. Their defaults are generous: they guard against a
  runaway writer, not against an agent that takes many notes.
- **Projection settings** (``projection_max_notes``, ``projection_max_tasks``,
  ``projection_max_chars``) bound what the ``<working-state>`` block shows: by default
  256 notes, 128 active tasks and 64 KiB (65,536 characters). What they leave out is
  still stored and counted in the block (``<notes-omitted>``, ``<tasks-omitted>``).
"""

from __future__ import annotations

from pydantic import Field

from taskctx.model import FrozenModel

__all__ = [
    "DEFAULT_PROJECTION_CHARS",
    "DEFAULT_PROJECTION_NOTES",
    "DEFAULT_PROJECTION_TASKS",
    "MIN_PROJECTION_CHARS",
    "WorkingStateConfiguration",
]

MIN_PROJECTION_CHARS = 256
"""The smallest projection bound: room for the frame and both omitted-count lines."""

DEFAULT_PROJECTION_NOTES = 256
"""Notes the projection shows by default (whole or as a ref); the rest are counted."""

DEFAULT_PROJECTION_TASKS = 128
"""Active tasks the projection shows by default; the rest are counted."""

DEFAULT_PROJECTION_CHARS = 64 * 1024
"""Characters of the projection block by default: 64 KiB, counted as characters."""


class WorkingStateConfiguration(FrozenModel):
    """Storage limits of one working state (one session's, or global memory's) and what
    its projection shows.

    Storage: notes and tasks share ``max_bytes`` of UTF-8 (note keys and values, task
    titles and task notes), at most ``max_notes`` notes and ``max_tasks`` tasks; a write
    that would pass any of them is refused whole. Every write reads the namespace's
    state to check them, so they also bound what one write costs.

    Projection: the block shows at most ``projection_max_notes`` notes (in key order),
    ``projection_max_tasks`` active tasks (in creation order) and is never longer than
    ``projection_max_chars`` characters. ``max_changes`` bounds the change log a
    WorkingState keeps in memory.
    """

    max_notes: int = Field(default=10_000, ge=0)
    max_tasks: int = Field(default=10_000, ge=0)
    max_bytes: int = Field(default=16 * 1024 * 1024, ge=0)
    projection_max_notes: int = Field(default=DEFAULT_PROJECTION_NOTES, ge=0)
    projection_max_tasks: int = Field(default=DEFAULT_PROJECTION_TASKS, ge=0)
    projection_max_chars: int = Field(default=DEFAULT_PROJECTION_CHARS, ge=MIN_PROJECTION_CHARS)
    max_changes: int = Field(default=1_000, ge=1)
