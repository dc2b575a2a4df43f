"""Compaction: a summary of the run in place of its turns, the run's inputs replayed.

Two steps. :func:`summary_request` asks the model for the summary: the complete stored
history exactly as it is (no request filter runs, nothing is dropped), the same tools
and ``tool_choice`` as every other request (so the provider's cached prefix stays
valid), and one last user notice asking for a summary and no tool call. Then
:func:`compact` builds the new history from that summary:

1. the logical run's initial input (turns of kind ``initial_input``) and the steering
   input already delivered (``steering`` with ``delivered=True``), in their original
   order, the very same turns (images and documents included);
2. one ``summary`` turn, then a reminder to re-read the skills in use (when there are
   any), then a fresh working-state projection (see
   :func:`taskctx_conversation.handoff.continuation_turns`).

Notices and every other turn are not replayed. Steering input not delivered yet is not
in the new history either: :class:`CompactionResult` hands it back as ``pending``, for
the application to deliver after the summary. A history with no ``initial_input`` turn
replays none (the summary carries the task). :func:`summarize` and
:func:`async_summarize` do both steps with a ``send`` callable of your own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from taskctx_memory.state_context import ProjectionLimits, ProjectionSource

from taskctx.frozen import FrozenModel
from taskctx_conversation.handoff import SkillInUse, continuation_turns, skills_in_use
from taskctx_conversation.history import MessageHistory, Turn, TurnKind
from taskctx_conversation.request import ModelCharacteristics, ModelRequest, ToolDefinition

__all__ = [
    "DEFAULT_SUMMARY_INSTRUCTIONS",
    "CompactionResult",
    "async_summarize",
    "compact",
    "summarize",
    "summary_request",
]

DEFAULT_SUMMARY_INSTRUCTIONS = (
    "The context window is nearly full: this run will continue from a summary instead of "
    "the turns above. Summarize the run so far for that continuation: the task and what "
    "was asked, the decisions made and why, what was found (files, facts, results), the "
    "skills relied on, what is done and what remains. Do not call any tools: answer with "
    "the summary as plain text only."
)
"""The text of the last turn of a summary request, unless ``instructions=`` replaces it."""

_ANY_MODEL = ModelCharacteristics()


def summary_request(
    history: MessageHistory,
    *,
    tools: Sequence[ToolDefinition] = (),
    tool_choice: str | Mapping[str, Any] | None = None,
    system: str | None = None,
    model: ModelCharacteristics = _ANY_MODEL,
    instructions: str | None = None,
) -> ModelRequest:
    """The request that asks the model for the summary compaction needs.

    Its turns are every stored turn of ``history``, unchanged and in order (no request
    filter runs), then one user turn of kind ``notice`` holding ``instructions``
    (default :data:`DEFAULT_SUMMARY_INSTRUCTIONS`), which asks for no tool call. The
    tools and ``tool_choice`` are passed as given, so the request shares the cached
    prefix of the run's other requests. Build it after the last tool results were
    appended: a tool call without its result is sent as it is.
    """
    text = DEFAULT_SUMMARY_INSTRUCTIONS if instructions is None else instructions
    if not text.strip():
        raise ValueError("the summary instructions are empty")
    ask = Turn.text("user", text, kind=TurnKind.NOTICE)
    return ModelRequest(
        turns=(*history.turns, ask),
        model=model,
        tools=tuple(tools),
        tool_choice=tool_choice,
        system=system,
    )


class CompactionResult(FrozenModel):
    """The compacted history and the steering input that was not delivered yet.

    ``pending`` holds the undelivered ``steering`` turns of the old history, the same
    objects in their order; they are in neither history until the application delivers
    them (``result.history.extend(result.pending)`` when the next request should).
    """

    history: MessageHistory
    pending: tuple[Turn, ...] = ()


def compact(
    history: MessageHistory,
    summary: str,
    *,
    projection: ProjectionSource | None = None,
    skills: Sequence[SkillInUse] = (),
    limits: ProjectionLimits | None = None,
    at: datetime | None = None,
    detect_skills: bool = True,
) -> CompactionResult:
    """The history that continues the run from ``summary``.

    Replays the ``initial_input`` turns and the delivered ``steering`` turns (the very
    same turns, in order), then adds the summary turn, the skills reminder and the
    projection of ``projection`` (``continuation_turns``). The skills are ``skills``
    (which win for their path) and, unless ``detect_skills=False``, those
    :func:`~taskctx_conversation.handoff.skills_in_use` finds in ``history``. An empty
    summary raises ``ValueError``; a projection over ``limits.max_chars`` raises
    ``CapabilityLimitError``. ``history`` itself is never changed.
    """
    replayed: list[Turn] = []
    pending: list[Turn] = []
    for turn in history:
        if turn.kind == TurnKind.INITIAL_INPUT:
            replayed.append(turn)
        elif turn.kind == TurnKind.STEERING:
            (replayed if turn.delivered else pending).append(turn)
    chosen = skills_in_use(history, explicit=skills) if detect_skills else tuple(skills)
    tail = continuation_turns(summary, skills=chosen, projection=projection, limits=limits, at=at)
    return CompactionResult(
        history=MessageHistory(turns=(*replayed, *tail)), pending=tuple(pending)
    )


def _asked(history: MessageHistory, request: ModelRequest | None) -> ModelRequest:
    """``request``, or the default summary request; it must start with the whole history."""
    if request is None:
        return summary_request(history)
    if request.turns[: len(history)] != history.turns:
        raise ValueError("the summary request does not start with the stored history")
    return request


def _reply(reply: object) -> str:
    if not isinstance(reply, str):
        raise TypeError(f"send() returned {type(reply).__name__}, not the summary text (str)")
    return reply


def summarize(
    history: MessageHistory,
    send: Callable[[ModelRequest], str],
    *,
    request: ModelRequest | None = None,
    projection: ProjectionSource | None = None,
    skills: Sequence[SkillInUse] = (),
    limits: ProjectionLimits | None = None,
) -> CompactionResult:
    """Send the summary request (``request``, default ``summary_request(history)``) with
    ``send``, which returns the model's text, and :func:`compact` with its reply."""
    summary = _reply(send(_asked(history, request)))
    return compact(history, summary, projection=projection, skills=skills, limits=limits)


async def async_summarize(
    history: MessageHistory,
    send: Callable[[ModelRequest], Awaitable[str]],
    *,
    request: ModelRequest | None = None,
    projection: ProjectionSource | None = None,
    skills: Sequence[SkillInUse] = (),
    limits: ProjectionLimits | None = None,
) -> CompactionResult:
    """:func:`summarize` with an async ``send``."""
    summary = _reply(await send(_asked(history, request)))
    return compact(history, summary, projection=projection, skills=skills, limits=limits)
