"""The stored message history: immutable turns, appended to, never rewritten.

A :class:`Turn` has a role, its parts, what kind of turn it is (an ordinary message,
the run's initial input, a steering input that arrived while the run was going, an
internal notice, a summary or a working-state projection), when it was made and, for
steering input, whether it has been delivered to the model yet. A
:class:`MessageHistory` is a tuple of turns; every change returns a new history, so a
request filter can never alter what is stored.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Literal

from pydantic import Field, field_validator

from taskctx.codes import StrChoice
from taskctx.frozen import FrozenModel
from taskctx_conversation.parts import (
    ImagePart,
    Part,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

__all__ = ["MessageHistory", "Role", "Turn", "TurnKind"]

Role = Literal["system", "user", "assistant", "tool"]
"""Who a turn is from; tool results sit in ``tool`` (or ``user``) turns."""


class TurnKind(StrChoice):
    """What a turn is, for compaction and handoff: which turns are replayed."""

    MESSAGE = "message"
    INITIAL_INPUT = "initial_input"
    """The input the logical run started from; compaction replays it."""
    STEERING = "steering"
    """Input that arrived while the run was going; replayed once delivered."""
    NOTICE = "notice"
    """A harness notice to the model; never replayed by compaction."""
    SUMMARY = "summary"
    PROJECTION = "projection"
    """A working-state projection (notes and tasks)."""


class Turn(FrozenModel):
    """One turn of the history: its role, parts and kind, never rewritten once stored."""

    role: Role
    parts: tuple[Part, ...] = Field(min_length=1)
    kind: TurnKind = TurnKind.MESSAGE
    at: datetime | None = None
    """When the turn was made (an assistant turn: when the model's response arrived)."""
    delivered: bool = True
    """Whether the model has seen this turn; a queued steering input has not."""

    @field_validator("at")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.utcoffset() is None:
            raise ValueError("a turn's time must carry a time zone (datetime.now(timezone.utc))")
        return value

    @classmethod
    def text(cls, role: Role, text: str, **fields: object) -> Turn:
        """A turn of one text part."""
        return cls(role=role, parts=(TextPart(text=text),), **fields)

    def tool_calls(self) -> tuple[ToolCallPart, ...]:
        """The tool calls of this turn, in order."""
        return tuple(p for p in self.parts if isinstance(p, ToolCallPart))

    def tool_results(self) -> tuple[ToolResultPart, ...]:
        """The tool results of this turn, in order."""
        return tuple(p for p in self.parts if isinstance(p, ToolResultPart))

    def images(self) -> tuple[ImagePart, ...]:
        """Every image of the turn: its own image parts and its tool results' top-level ones."""
        found: list[ImagePart] = []
        for part in self.parts:
            if isinstance(part, ImagePart):
                found.append(part)
            elif isinstance(part, ToolResultPart):
                found.extend(part.images)
        return tuple(found)


class MessageHistory(FrozenModel):
    """The turns of one logical run, in order; ``append`` returns a new history."""

    turns: tuple[Turn, ...] = ()

    def __len__(self) -> int:
        return len(self.turns)

    def __iter__(self) -> Iterator[Turn]:  # type: ignore[override]
        return iter(self.turns)

    def __getitem__(self, index: int) -> Turn:
        return self.turns[index]

    def append(self, *turns: Turn) -> MessageHistory:
        """This history with ``turns`` added at the end."""
        return MessageHistory(turns=(*self.turns, *turns))

    def extend(self, turns: Sequence[Turn]) -> MessageHistory:
        """This history with every turn of ``turns`` added at the end."""
        return self.append(*turns)

    def last_response_at(self) -> datetime | None:
        """When the model last responded: the time of the last assistant turn that has one."""
        for turn in reversed(self.turns):
            if turn.role == "assistant" and turn.at is not None:
                return turn.at
        return None
