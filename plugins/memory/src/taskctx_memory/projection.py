"""The working-state projection: one bounded block appended at the end of a request.

Pure functions of (notes, tasks, boundary, max_chars, max_notes, max_tasks). At a
``user_input`` boundary the block shows notes and active tasks; at a ``tool_result``
boundary active tasks only; at any other boundary nothing (None). Notes come first, by
key, then tasks, by creation::

    <working-state>
    <notes>
    <note key="a">value</note>
    <note-ref key="big" chars="90000"/>
    <notes-omitted count="2"/>
    </notes>
    <tasks>
    <task id="t1" status="in_progress">title</task>
    </tasks>
    </working-state>

The block shows at most ``max_notes`` notes (the first in key order; default 256) and
``max_tasks`` active tasks (the first created; default 128): the others are still
stored, and counted. The block never exceeds ``max_chars`` (default 65,536). Room for
each section's omitted-count line is reserved first, so the count always fits. Tasks
may take up to half of the rest while there are notes; notes then take what is left:
first a ``<note-ref>`` for every note that fits (in key order), then, in key order,
whole values in place of refs while they fit. A note is shown whole or not at all (a
ref names it and its length in characters, ``chars``; ``note_get`` reads it); notes and
tasks that fit in no form are counted. Tasks are whole lines or counted. Keys, values
and titles are escaped by :mod:`taskctx.markup` (the kernel's one table), so no value
can open or close an element, end an attribute or show a package alias.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from taskctx.markup import element
from taskctx.model import FrozenModel
from taskctx_memory.config import (
    DEFAULT_PROJECTION_CHARS,
    DEFAULT_PROJECTION_NOTES,
    DEFAULT_PROJECTION_TASKS,
    MIN_PROJECTION_CHARS,
)
from taskctx_memory.values import Task

__all__ = [
    "PROJECTED_BOUNDARIES",
    "Projection",
    "ProjectionBoundary",
    "build_projection",
    "project_working_state",
]

ProjectionBoundary = Literal["user_input", "tool_result"]
PROJECTED_BOUNDARIES: tuple[ProjectionBoundary, ...] = ("user_input", "tool_result")

_OPEN, _CLOSE = "<working-state>", "</working-state>"


class Projection(FrozenModel):
    """A projection block and what it shows, names only by ref, and leaves out."""

    text: str
    notes_whole: tuple[str, ...] = ()
    notes_referenced: tuple[str, ...] = ()
    notes_omitted: tuple[str, ...] = ()
    tasks_shown: tuple[str, ...] = ()
    tasks_omitted: tuple[str, ...] = ()


def _note_line(key: str, value: str) -> str:
    return element("note", value, key=key)


def _ref_line(key: str, value: str) -> str:
    return element("note-ref", None, key=key, chars=len(value))


def _task_line(task: Task) -> str:
    return element("task", task.title, id=task.id, status=task.status.value)


def _omitted_line(section: str, count: int) -> str:
    return f'<{section}-omitted count="{count}"/>'


def _section_frame(section: str, items: int) -> int:
    """Characters of a section's open and close tags and its reserved omitted line."""
    lines = (f"<{section}>", f"</{section}>", _omitted_line(section, items))
    return sum(len(line) + 1 for line in lines)


class _TaskPlan:
    """Which task lines are shown, filled first-fit in creation order under a cap."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.shown = [False] * len(lines)
        self.used = 0

    def fill(self, cap: int) -> None:
        for index, line in enumerate(self.lines):
            cost = len(line) + 1
            if not self.shown[index] and self.used + cost <= cap:
                self.shown[index] = True
                self.used += cost


def _plan_notes(items: list[tuple[str, str]], budget: int) -> tuple[list[str | None], int]:
    """Per note: its whole line, its ref line or None (omitted); and the characters used."""
    refs = [_ref_line(key, value) for key, value in items]
    wholes = [_note_line(key, value) for key, value in items]
    chosen: list[str | None] = [None] * len(items)
    used = 0
    for index, ref in enumerate(refs):
        if used + len(ref) + 1 <= budget:
            chosen[index] = ref
            used += len(ref) + 1
    for index, whole in enumerate(wholes):
        if chosen[index] is None:
            continue
        extra = len(whole) - len(refs[index])
        if used + extra <= budget:
            chosen[index] = whole
            used += extra
    return chosen, used


def _check_count(name: str, value: int, least: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} is an int, not {type(value).__name__}")
    if value < least:
        raise ValueError(f"{name} must be at least {least}, not {value}")


def _room(max_chars: int, notes: int, tasks: int, all_notes: int) -> int:
    """The characters left for note and task lines once the frame is reserved: the block's
    tags, and each non-empty section's tags with its omitted-count line."""
    frame = len(_OPEN) + 1 + len(_CLOSE)
    if notes:
        frame += _section_frame("notes", notes)
    if tasks:
        frame += _section_frame("tasks", tasks)
    available = max_chars - frame
    if available < 0:
        raise ValueError(f"max_chars={max_chars} cannot hold the frame of {all_notes} notes")
    return available


def _notes_section(
    note_items: list[tuple[str, str]], chosen: list[str | None], lines: list[str]
) -> tuple[list[str], list[str], list[str]]:
    """Append the notes section to ``lines``; the keys shown whole, by ref, and omitted."""
    whole: list[str] = []
    referenced: list[str] = []
    omitted: list[str] = []
    if note_items:
        lines.append("<notes>")
        for (key, _), line in zip(note_items, chosen, strict=True):
            if line is None:
                omitted.append(key)
                continue
            lines.append(line)
            (referenced if line.startswith("<note-ref ") else whole).append(key)
        if omitted:
            lines.append(_omitted_line("notes", len(omitted)))
        lines.append("</notes>")
    return whole, referenced, omitted


def _tasks_section(
    active: list[Task], task_plan: _TaskPlan, lines: list[str]
) -> tuple[list[str], list[str]]:
    """Append the tasks section to ``lines``; the ids of the tasks shown and left out."""
    task_shown = task_plan.shown + [False] * (len(active) - len(task_plan.shown))
    shown_ids = [t.id for t, shown in zip(active, task_shown, strict=True) if shown]
    left_ids = [t.id for t, shown in zip(active, task_shown, strict=True) if not shown]
    if active:
        lines.append("<tasks>")
        pairs = zip(task_plan.lines, task_plan.shown, strict=True)
        lines.extend(line for line, shown in pairs if shown)
        if left_ids:
            lines.append(_omitted_line("tasks", len(left_ids)))
        lines.append("</tasks>")
    return shown_ids, left_ids


def build_projection(
    notes: Mapping[str, str],
    tasks: Sequence[Task],
    boundary: str,
    *,
    max_chars: int = DEFAULT_PROJECTION_CHARS,
    max_notes: int = DEFAULT_PROJECTION_NOTES,
    max_tasks: int = DEFAULT_PROJECTION_TASKS,
) -> Projection | None:
    """The block for ``boundary`` and what it holds, or None when it would show nothing.

    It shows at most ``max_notes`` notes and ``max_tasks`` active tasks in at most
    ``max_chars`` characters; every note and active task it does not show is counted.
    """
    _check_count("max_chars", max_chars, MIN_PROJECTION_CHARS)
    _check_count("max_notes", max_notes, 0)
    _check_count("max_tasks", max_tasks, 0)
    if boundary not in PROJECTED_BOUNDARIES:
        return None
    note_items = sorted(notes.items()) if boundary == "user_input" else []
    active = [task for task in tasks if task.active]
    if not note_items and not active:
        return None
    shown_notes = note_items[:max_notes]  # the rest are omitted (counted) whatever the room
    available = _room(max_chars, len(note_items), len(active), len(notes))
    task_plan = _TaskPlan([_task_line(task) for task in active[:max_tasks]])
    task_plan.fill(available // 2 if note_items else available)
    chosen, notes_used = _plan_notes(shown_notes, available - task_plan.used)
    chosen += [None] * (len(note_items) - len(shown_notes))
    task_plan.fill(available - notes_used)  # tasks may take what notes left

    lines = [_OPEN]
    whole, referenced, omitted = _notes_section(note_items, chosen, lines)
    shown_ids, left_ids = _tasks_section(active, task_plan, lines)
    lines.append(_CLOSE)
    text = "\n".join(lines)
    if len(text) > max_chars:  # the reservations above make this unreachable
        raise AssertionError(f"projection of {len(text)} chars passed its bound {max_chars}")
    return Projection(
        text=text,
        notes_whole=tuple(whole),
        notes_referenced=tuple(referenced),
        notes_omitted=tuple(omitted),
        tasks_shown=tuple(shown_ids),
        tasks_omitted=tuple(left_ids),
    )


def project_working_state(
    notes: Mapping[str, str],
    tasks: Sequence[Task],
    boundary: str,
    *,
    max_chars: int = DEFAULT_PROJECTION_CHARS,
    max_notes: int = DEFAULT_PROJECTION_NOTES,
    max_tasks: int = DEFAULT_PROJECTION_TASKS,
) -> str | None:
    """The ``<working-state>`` block for ``boundary`` within ``max_chars``, or None."""
    projection = build_projection(
        notes, tasks, boundary, max_chars=max_chars, max_notes=max_notes, max_tasks=max_tasks
    )
    return None if projection is None else projection.text
