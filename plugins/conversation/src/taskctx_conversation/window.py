"""Context-window thresholds: when to remind about a handoff and when to compact.

:class:`WindowPolicy` turns a token count into a :class:`WindowAction`: ``ok``,
``handoff_reminder`` (at 65 % of the window by default) or ``compact`` (at 90 %), each
from exactly its threshold (``>=``). Explicit token thresholds override the ratios.
What to do at each threshold is in :mod:`taskctx_conversation.compaction` and
:mod:`taskctx_conversation.handoff`.
"""

from __future__ import annotations

import math
from fractions import Fraction

from pydantic import Field, model_validator

from taskctx.codes import StrChoice
from taskctx.frozen import FrozenModel

__all__ = ["WindowAction", "WindowPolicy"]


class WindowAction(StrChoice):
    """What a token count asks of the agent loop."""

    OK = "ok"
    HANDOFF_REMINDER = "handoff_reminder"
    COMPACT = "compact"


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
