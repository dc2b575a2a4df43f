"""Cold start: after a long idle gap, old tool output is shortened in the next request.

Once the time since the model's last response reaches ``idle_seconds`` (one hour by
default), the provider's prompt cache has long expired and the whole history is paid
for again. This filter then shortens the string results of tool calls the model has
already consumed (an assistant turn follows them) to their first ``keep_chars``
characters and a note of what was left out. User input, thinking, native media,
structured results and pending tool results (not yet answered by the model) stay as
they are, and the stored history keeps every character.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import attrs

from taskctx_conversation.history import Turn
from taskctx_conversation.parts import Part, ToolResultPart
from taskctx_conversation.request import FilterContext, ModelRequest, RequestChange
from taskctx_conversation.rewrite import PartLocation, replace_parts

__all__ = ["ColdStartFilter"]


def _positive(_: object, attribute: attrs.Attribute[Any], value: float) -> None:
    if isinstance(value, bool) or not value > 0:
        raise ValueError(f"{attribute.name} must be > 0, not {value!r}")


def _consumed_until(turns: Sequence[Turn]) -> int:
    """Index of the last assistant turn: tool results before it have been consumed."""
    for t in range(len(turns) - 1, -1, -1):
        if turns[t].role == "assistant":
            return t
    return -1


def _idle_words(seconds: float) -> str:
    hours = seconds / 3600
    return f"{hours:.1f} h" if hours >= 1 else f"{seconds / 60:.0f} min"


@attrs.frozen
class ColdStartFilter:
    """Shortens consumed tool-result strings once the model has been idle ``idle_seconds``."""

    idle_seconds: float = attrs.field(default=3600.0, validator=_positive)
    keep_chars: int = attrs.field(default=500, validator=_positive)

    name: ClassVar[str] = "cold_start"
    order: ClassVar[int] = 100
    automatic: ClassVar[bool] = True

    async def async_apply(self, request: ModelRequest, context: FilterContext) -> ModelRequest:
        """The request with old consumed tool output shortened, if the gap is long enough."""
        idle = context.idle_seconds()
        if idle is None or idle < self.idle_seconds:
            return request
        replacements: dict[PartLocation, Sequence[Part]] = {}
        changes: list[RequestChange] = []
        for t in range(_consumed_until(request.turns)):
            for p, part in enumerate(request.turns[t].parts):
                short = self._shortened(part, idle)
                if short is None:
                    continue
                replacements[PartLocation(t, p)] = (short,)
                changes.append(
                    RequestChange(
                        filter=self.name,
                        turn=t,
                        action="shortened",
                        detail=(
                            f"tool result {short.call_id!r}: {self.keep_chars} of "
                            f"{len(part.content)} characters kept"  # type: ignore[union-attr]
                        ),
                    )
                )
        return request.with_turns(replace_parts(request.turns, replacements), changes)

    def _shortened(self, part: Part, idle: float) -> ToolResultPart | None:
        """The shortened copy of a long string tool result, or None to leave it."""
        if not isinstance(part, ToolResultPart) or not isinstance(part.content, str):
            return None
        text = part.content
        if len(text) <= self.keep_chars:
            return None
        note = (
            f"\n[... {len(text) - self.keep_chars} of {len(text)} characters of this tool "
            f"result are left out of this request after {_idle_words(idle)} idle; the "
            "stored result is unchanged ...]"
        )
        if len(note) >= len(text) - self.keep_chars:
            return None  # the note would not save anything
        return part.model_copy(update={"content": text[: self.keep_chars] + note})
