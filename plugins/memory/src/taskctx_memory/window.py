"""Context-window thresholds and compaction that keeps the working state.

:class:`WindowPolicy` turns a token count into an action: ``ok``, ``handoff_reminder``
(at 65 % of the window by default) or ``compact`` (at 90 %), each at exactly its
threshold (``>=``). Explicit token thresholds override the ratios.

:func:`compact_history` replaces the compacted turns with one summary turn and then
re-projects the working state right after it: a summary continues the narrative but
never stands in for notes and tasks. Turns are frozen; the kept turns (earlier
projection turns among them) are the same objects in the new history.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from enum import Enum
from fractions import Fraction

from pydantic import Field, model_validator

from taskctx.model import FrozenModel
from taskctx_memory.state_context import ProjectionLimits, ProjectionSource, bounded_projection

__all__ = ["Turn", "TurnKind", "WindowAction", "WindowPolicy", "compact_history"]


class WindowAction(str, Enum):
    """What a token count asks of the agent loop."""

    OK = "ok"
    HANDOFF_REMINDER = "handoff_reminder"
    COMPACT = "compact"

    def __str__(self) -> str:
        return str(self.value)


class TurnKind(str, Enum):
    """What a history turn is: a message, a working-state projection or a summary."""

    MESSAGE = "message"
    PROJECTION = "projection"
    SUMMARY = "summary"

    def __str__(self) -> str:
        return str(self.value)


class Turn(FrozenModel):
    """One turn of an agent's history: immutable, so compaction can never rewrite it."""

    role: str = Field(min_length=1)
    content: str
    kind: TurnKind = TurnKind.MESSAGE


def _at(ratio: float, window: int) -> int:
    """The smallest token count that is at least ``ratio`` of ``window`` (exact decimal)."""
    return math.ceil(Fraction(repr(ratio)) * window)


class WindowPolicy(FrozenModel):
    """When to remind about a handoff and when to compact, for one context window.

    ``handoff_tokens`` / ``compaction_tokens`` override the ratios. Ratios are in
    (0, 1]; token thresholds in [1, ``context_window_tokens``]; the handoff threshold
    must not be above the compaction threshold.
    """

    context_window_tokens: int = Field(ge=1)
    handoff_ratio: float = Field(default=0.65, gt=0, le=1)
    compaction_ratio: float = Field(default=0.90, gt=0, le=1)
    handoff_tokens: int | None = Field(default=None, ge=1)
    compaction_tokens: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _thresholds_agree(self) -> WindowPolicy:
        window = self.context_window_tokens
        for label, tokens in (
            ("handoff_tokens", self.handoff_tokens),
            ("compaction_tokens", self.compaction_tokens),
        ):
            if tokens is not None and tokens > window:
                raise ValueError(f"{label}={tokens} exceeds context_window_tokens={window}")
        if self.handoff_at > self.compaction_at:
            raise ValueError(
                f"the handoff threshold ({self.handoff_at} tokens) is above the compaction "
                f"threshold ({self.compaction_at} tokens)"
            )
        return self

    @property
    def handoff_at(self) -> int:
        """Tokens at which a handoff reminder starts."""
        if self.handoff_tokens is not None:
            return self.handoff_tokens
        return _at(self.handoff_ratio, self.context_window_tokens)

    @property
    def compaction_at(self) -> int:
        """Tokens at which compaction is due."""
        if self.compaction_tokens is not None:
            return self.compaction_tokens
        return _at(self.compaction_ratio, self.context_window_tokens)

    def check(self, used_tokens: int) -> WindowAction:
        """``compact`` at or over the compaction threshold, ``handoff_reminder`` at or over
        the handoff threshold, else ``ok``."""
        if isinstance(used_tokens, bool) or not isinstance(used_tokens, int) or used_tokens < 0:
            raise ValueError(f"used_tokens must be an int >= 0, not {used_tokens!r}")
        if used_tokens >= self.compaction_at:
            return WindowAction.COMPACT
        if used_tokens >= self.handoff_at:
            return WindowAction.HANDOFF_REMINDER
        return WindowAction.OK


def compact_history(
    history: Sequence[Turn],
    summary: str,
    projection: ProjectionSource,
    *,
    keep_first: int = 0,
    keep_last: int = 0,
    role: str = "user",
    limits: ProjectionLimits | None = None,
) -> list[Turn]:
    """A new history: kept head, the summary, a fresh projection, kept tail.

    The turns between the first ``keep_first`` and the last ``keep_last`` are replaced
    by one ``summary`` turn; right after it comes a fresh ``projection`` turn built with
    the ``user_input`` boundary (so notes are included), unless the working state
    projects nothing. Kept turns are the very same objects, never rewritten. The
    projection is bounded by ``limits.max_chars`` and fails closed when over it.
    """
    if keep_first < 0 or keep_last < 0:
        raise ValueError("keep_first and keep_last must be >= 0")
    if keep_first + keep_last > len(history):
        raise ValueError(
            f"cannot keep {keep_first} + {keep_last} turns of a history of {len(history)}"
        )
    if not summary.strip():
        raise ValueError("the summary is empty")
    bound = limits if limits is not None else ProjectionLimits()
    state = bounded_projection(projection, "user_input", bound, "compaction projection")
    tail = list(history[len(history) - keep_last :]) if keep_last else []
    middle = [Turn(role=role, content=summary, kind=TurnKind.SUMMARY)]
    if state is not None:
        middle.append(Turn(role=role, content=state, kind=TurnKind.PROJECTION))
    return [*history[:keep_first], *middle, *tail]
