"""The values of working state: tasks, the note index, change entries, name checks."""

from __future__ import annotations

import unicodedata
from enum import Enum
from typing import Literal

from pydantic import Field, field_validator

from taskctx.model import FrozenModel
from taskctx_memory.errors import InvalidKeyError

__all__ = [
    "KEY_MAX_CHARS",
    "SESSION_ID_MAX_CHARS",
    "ChangeAction",
    "ChangeTarget",
    "NoteIndex",
    "StateChange",
    "Task",
    "TaskStatus",
    "check_key",
    "check_session_id",
    "check_title",
]

KEY_MAX_CHARS = 128
"""The longest note key or task id, in characters."""

SESSION_ID_MAX_CHARS = 256
"""The longest session id, in characters."""

_FORBIDDEN = frozenset({"Cc", "Cs", "Zl", "Zp"})  # control, surrogate, line/para separator

ChangeTarget = Literal["note", "task"]
ChangeAction = Literal["created", "updated", "deleted"]


def _problem(text: str, max_chars: int | None) -> str | None:
    if not text or not text.strip():
        return "it is empty or only whitespace"
    if max_chars is not None and len(text) > max_chars:
        return f"it has {len(text):,} characters, more than {max_chars}"
    bad = next((c for c in text if unicodedata.category(c) in _FORBIDDEN), None)
    if bad is not None:
        return f"it holds the control character U+{ord(bad):04X}"
    return None


def check_key(key: object, what: str = "note key") -> str:
    """``key`` if it is a valid note key or task id; else InvalidKeyError naming it.

    Valid: a non-empty string of at most :data:`KEY_MAX_CHARS` characters that is not
    only whitespace and holds no control characters.
    """
    if not isinstance(key, str):
        raise TypeError(f"a {what} is a str, not {type(key).__name__}")
    problem = _problem(key, KEY_MAX_CHARS)
    if problem is not None:
        raise InvalidKeyError(f"invalid {what} {key!r}: {problem}")
    return key


def check_session_id(session_id: object) -> str:
    """``session_id`` if valid (like a key, up to :data:`SESSION_ID_MAX_CHARS` characters)."""
    if not isinstance(session_id, str):
        raise TypeError(f"a session id is a str, not {type(session_id).__name__}")
    problem = _problem(session_id, SESSION_ID_MAX_CHARS)
    if problem is not None:
        raise InvalidKeyError(f"invalid session id {session_id!r}: {problem}")
    return session_id


def check_title(title: object) -> str:
    """A task title: a non-empty, single-line string without control characters."""
    if not isinstance(title, str):
        raise TypeError(f"a task title is a str, not {type(title).__name__}")
    problem = _problem(title, max_chars=None)
    if problem is not None:
        raise ValueError(f"invalid task title {title[:80]!r}: {problem}")
    return title


class TaskStatus(str, Enum):
    """Where a task stands. Every status but ``done`` is active (projected)."""

    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    DONE = "done"
    BLOCKED = "blocked"

    def __str__(self) -> str:
        return str(self.value)


class Task(FrozenModel):
    """One task of a working state: an id, a one-line title, a status and free notes."""

    id: str
    title: str
    status: TaskStatus = TaskStatus.PENDING
    notes: str = ""

    @field_validator("id")
    @classmethod
    def _id_shape(cls, value: str) -> str:
        return check_key(value, "task id")

    @field_validator("title")
    @classmethod
    def _title_shape(cls, value: str) -> str:
        return check_title(value)

    @property
    def active(self) -> bool:
        """Whether the task is still open (any status but ``done``)."""
        return self.status is not TaskStatus.DONE


class NoteIndex(FrozenModel):
    """The notes of a working state by key: sorted keys and how many there are."""

    keys: tuple[str, ...]
    count: int = Field(ge=0)


class StateChange(FrozenModel):
    """One committed change: what was touched and how, never the value itself.

    ``chars`` is the length of what was written (a note's value; a task's title plus
    notes), 0 for a deletion. ``sequence`` counts from 1 per WorkingState object.
    """

    sequence: int = Field(ge=1)
    target: ChangeTarget
    key: str
    action: ChangeAction
    chars: int = Field(ge=0)
