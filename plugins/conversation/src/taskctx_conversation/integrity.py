"""Message integrity: every tool call in a request is answered right after it, once.

Providers refuse a request whose tool calls and results do not pair, and a history can
come apart in ordinary ways: a run interrupted between a call and its result, a
steering input that arrived between them, a result recorded twice, a result whose call
was lost. This filter, always on and last in line, rebuilds the request so that each
assistant turn with tool calls is followed by one turn holding a result for each call,
in call order:

- a result found later in the history moves up to its call (what came between stays,
  after the results);
- a call with no result gets an error result saying none was recorded;
- a second result for the same call, and a result whose call is not earlier in the
  request, are removed.

Nothing else changes; a request that already pairs comes back as the same object.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import attrs

from taskctx_conversation.history import Role, Turn
from taskctx_conversation.parts import Part, ToolResultPart
from taskctx_conversation.request import FilterContext, ModelRequest, RequestChange

__all__ = ["MISSING_RESULT", "MessageIntegrityFilter", "tool_call_ids"]

MISSING_RESULT = (
    "No result was recorded for this tool call (the run was interrupted or the result "
    "was lost); do not assume it ran."
)


@attrs.define(slots=True)
class _Plan:
    """What the rebuild found: the first result per known call and what it changed."""

    results: dict[str, tuple[ToolResultPart, Role]] = attrs.field(factory=dict)
    changes: list[RequestChange] = attrs.field(factory=list)


def _change(name: str, turn: int, action: str, detail: str) -> RequestChange:
    return RequestChange(filter=name, turn=turn, action=action, detail=detail)


def _survey(turns: Sequence[Turn], name: str) -> _Plan:
    """Collect each call's first result; note removed duplicates and orphans."""
    plan = _Plan()
    called: dict[str, int] = {}
    for t, turn in enumerate(turns):
        if turn.role == "assistant":
            called.update((c.call_id, t) for c in turn.tool_calls())
        for result in turn.tool_results():
            if result.call_id not in called:
                plan.changes.append(
                    _change(
                        name,
                        t,
                        "removed",
                        f"tool result {result.call_id!r} has no earlier tool call",
                    )
                )
            elif result.call_id in plan.results:
                plan.changes.append(
                    _change(name, t, "removed", f"a second result for tool call {result.call_id!r}")
                )
            else:
                plan.results[result.call_id] = (result, turn.role)
                if t != called[result.call_id] + 1:
                    plan.changes.append(
                        _change(
                            name,
                            t,
                            "moved",
                            f"tool result {result.call_id!r} moved to right after its call",
                        )
                    )
    return plan


def _answers(turn: Turn, t: int, plan: _Plan, name: str) -> tuple[list[Part], Role]:
    """Results for ``turn``'s calls, in call order (made up where missing), and the role
    the first found one was recorded under (``tool`` when none was)."""
    parts: list[Part] = []
    roles: list[Role] = []
    for call in turn.tool_calls():
        found = plan.results.get(call.call_id)
        if found is None:
            parts.append(
                ToolResultPart(call_id=call.call_id, content=MISSING_RESULT, is_error=True)
            )
            plan.changes.append(
                _change(name, t, "added", f"tool call {call.call_id!r} ({call.name}) had no result")
            )
        else:
            parts.append(found[0])
            roles.append(found[1])
    return parts, roles[0] if roles else "tool"


def _rest(turn: Turn) -> Turn | None:
    """``turn`` without its tool results, or None if nothing else was in it."""
    if not turn.tool_results():
        return turn
    kept = tuple(p for p in turn.parts if not isinstance(p, ToolResultPart))
    return turn.model_copy(update={"parts": kept}) if kept else None


def _rebuild(turns: Sequence[Turn], plan: _Plan, name: str) -> list[Turn]:
    """The turns with each call's results in the turn right after it."""
    out: list[Turn] = []
    t = 0
    while t < len(turns):
        turn = turns[t]
        if turn.role != "assistant" or not turn.tool_calls():
            rest = _rest(turn)
            if rest is not None:
                out.append(rest)
            t += 1
            continue
        out.append(_rest(turn) or turn)
        answers, role = _answers(turn, t, plan, name)
        following = turns[t + 1] if t + 1 < len(turns) else None
        if following is not None and following.role != "assistant" and following.tool_results():
            others = tuple(p for p in following.parts if not isinstance(p, ToolResultPart))
            parts = (*answers, *others)
            out.append(
                following
                if parts == following.parts
                else following.model_copy(update={"parts": parts})
            )
            t += 2
            continue
        out.append(Turn(role=role, parts=tuple(answers)))
        t += 1
    return out


@attrs.frozen
class MessageIntegrityFilter:
    """Pairs tool calls with their results in the request (always on, runs last)."""

    name: ClassVar[str] = "message_integrity"
    order: ClassVar[int] = 1000
    automatic: ClassVar[bool] = True

    async def async_apply(self, request: ModelRequest, context: FilterContext) -> ModelRequest:
        """The request with every tool call answered right after it, exactly once."""
        return self.apply(request)

    def apply(self, request: ModelRequest) -> ModelRequest:
        """Sync form of :meth:`async_apply` (the filter does no I/O)."""
        plan = _survey(request.turns, self.name)
        rebuilt = _rebuild(request.turns, plan, self.name)
        if len(rebuilt) == len(request.turns) and all(
            a is b or a == b for a, b in zip(rebuilt, request.turns, strict=True)
        ):
            return request
        if not plan.changes:
            plan.changes.append(
                RequestChange(
                    filter=self.name,
                    turn=0,
                    action="moved",
                    detail="tool results put first in their turn, in the order of their calls",
                )
            )
        return request.with_turns(rebuilt, plan.changes)


def tool_call_ids(turns: Sequence[Turn]) -> tuple[str, ...]:
    """Every tool call id of ``turns``, in order (a helper for tests and adapters)."""
    return tuple(c.call_id for turn in turns for c in turn.tool_calls())
