"""Compaction: the summary request sees everything, the new history replays the inputs."""

from __future__ import annotations

import asyncio

import pytest
from taskctx_conversation.compaction import (
    DEFAULT_SUMMARY_INSTRUCTIONS,
    CompactionResult,
    async_summarize,
    compact,
    summarize,
    summary_request,
)
from taskctx_conversation.handoff import SUMMARY_HEADING, SkillInUse, skills_reminder
from taskctx_conversation.history import MessageHistory, Turn, TurnKind
from taskctx_conversation.parts import (
    DocumentPart,
    ImagePart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
)
from taskctx_conversation.request import ModelCharacteristics, ModelRequest, ToolDefinition
from taskctx_memory import WorkingState
from taskctx_memory.request import CapabilityLimitError
from taskctx_memory.state_context import ProjectionLimits

from tests.plugins.conversation.helpers import PNG_1X1, at
from tests.plugins.memory.helpers import TinyState

IMAGE = ImagePart(data=PNG_1X1, media_type="image/png", label="the error dialog")
READ = ToolDefinition(name="read_file", description="Read a file.")


def run() -> MessageHistory:
    """A run: multimodal initial input, a skill read, notices, steering (one undelivered)."""
    return MessageHistory(
        turns=(
            Turn(
                role="user",
                parts=(TextPart(text="Why do uploads fail?"), IMAGE),
                kind=TurnKind.INITIAL_INPUT,
                at=at(0),
            ),
            Turn(
                role="user",
                parts=(DocumentPart(url="https://example.org/spec.pdf"),),
                kind=TurnKind.INITIAL_INPUT,
                at=at(0),
            ),
            Turn(
                role="assistant",
                parts=(
                    ThinkingPart(text="Read the review skill first.", signature="sig"),
                    ToolCallPart(
                        call_id="c1", name="read_file", arguments={"path": "skills/review/SKILL.md"}
                    ),
                ),
                at=at(1),
            ),
            Turn(role="tool", parts=(ToolResultPart(call_id="c1", content="# Review"),)),
            Turn.text("user", "Working state: old", kind=TurnKind.PROJECTION),
            Turn.text("user", "Only look at src/.", kind=TurnKind.STEERING, at=at(2)),
            Turn.text("user", "You have 10 minutes left.", kind=TurnKind.NOTICE),
            Turn.text("assistant", "The timeout is 30 s.", at=at(3)),
            Turn.text("user", "An older summary.", kind=TurnKind.SUMMARY),
            Turn.text("user", "Also check retries.", kind=TurnKind.STEERING, delivered=False),
        )
    )


# -- the summary request ----------------------------------------------------------------


def test_summary_request_holds_every_stored_turn_unchanged() -> None:
    """Every turn as stored, the very same objects, even media the model cannot take."""
    history = run()
    blind = ModelCharacteristics(name="text-only", image_input=False)
    request = summary_request(history, model=blind)
    assert request.turns[:-1] == history.turns
    assert all(a is b for a, b in zip(request.turns, history.turns, strict=False))
    assert request.turns[0].parts[1] is IMAGE
    assert (request.model, request.changes, request.attempt) == (blind, (), 1)


def test_summary_request_keeps_tools_and_tool_choice_and_asks_for_no_tool_call() -> None:
    """Same tools, tool_choice and system as the run; the last turn is the no-tools notice."""
    request = summary_request(
        run(), tools=[READ], tool_choice={"type": "auto"}, system="You review uploads."
    )
    assert request.tools == (READ,)
    assert request.tool_choice == {"type": "auto"}
    assert request.system == "You review uploads."
    last = request.turns[-1]
    assert (last.role, last.kind) == ("user", TurnKind.NOTICE)
    assert last.parts == (TextPart(text=DEFAULT_SUMMARY_INSTRUCTIONS),)
    assert "Summarize the run so far" in DEFAULT_SUMMARY_INSTRUCTIONS
    assert "Do not call any tools" in DEFAULT_SUMMARY_INSTRUCTIONS


def test_summary_instructions_can_be_replaced_but_not_emptied() -> None:
    """``instructions`` replaces the default text; an empty one is refused."""
    request = summary_request(run(), instructions="Summarize in five bullets; no tools.")
    assert request.turns[-1].parts == (TextPart(text="Summarize in five bullets; no tools."),)
    with pytest.raises(ValueError, match="instructions are empty"):
        summary_request(run(), instructions=" \n")
    assert len(summary_request(MessageHistory()).turns) == 1


# -- compact ----------------------------------------------------------------------------


def test_compaction_replays_inputs_in_order_then_summary_reminder_projection(
    state: WorkingState,
) -> None:
    """Initial input and delivered steering in order, then summary, reminder and projection."""
    history = run()
    result = compact(history, "Uploads fail on a 30 s timeout.", projection=state, at=at(9))
    turns = result.history.turns
    replayed = (history[0], history[1], history[5])
    assert turns[:3] == replayed
    assert all(new is old for new, old in zip(turns[:3], replayed, strict=True))
    assert [t.kind for t in turns] == [
        TurnKind.INITIAL_INPUT,
        TurnKind.INITIAL_INPUT,
        TurnKind.STEERING,
        TurnKind.SUMMARY,
        TurnKind.NOTICE,
        TurnKind.PROJECTION,
    ]
    assert turns[3].parts == (
        TextPart(text=f"{SUMMARY_HEADING}\n\nUploads fail on a 30 s timeout."),
    )
    assert turns[4] == skills_reminder([SkillInUse(path="skills/review/SKILL.md")], at=at(9))
    assert turns[5].parts == (TextPart(text=state.project("user_input") or ""),)
    assert all(t.role == "user" and t.at == at(9) for t in turns[3:])


def test_multimodal_input_survives_compaction() -> None:
    """The image and the document of the initial input are the very same parts."""
    result = compact(run(), "summary")
    assert result.history[0].parts[1] is IMAGE
    assert result.history[0].images() == (IMAGE,)
    assert isinstance(result.history[1].parts[0], DocumentPart)


def test_undelivered_steering_is_pending_and_notices_are_not_replayed() -> None:
    """Queued steering comes back as pending; notices, old summaries, projections, messages
    and tool turns are not in the new history."""
    history = run()
    result = compact(history, "summary", detect_skills=False)
    assert result.pending == (history[9],)
    assert result.pending[0] is history[9]
    texts = [p.text for t in result.history for p in t.parts if isinstance(p, TextPart)]
    for gone in ("10 minutes", "An older summary", "Working state: old", "30 s.", "retries"):
        assert not any(gone in text for text in texts), gone
    assert not any(t.tool_calls() or t.tool_results() for t in result.history)
    assert history == run()  # the stored history never changes


def test_a_history_without_initial_input_replays_nothing() -> None:
    """No initial_input turn: the new history starts with the summary."""
    history = MessageHistory(
        turns=(Turn.text("user", "hello"), Turn.text("assistant", "hi", at=at(1)))
    )
    result = compact(history, "We greeted each other.")
    assert [t.kind for t in result.history] == [TurnKind.SUMMARY]
    assert result == CompactionResult(history=result.history)


@pytest.mark.parametrize("summary", ["", "  \n\t"])
def test_an_empty_summary_is_refused(summary: str) -> None:
    """Compaction without a summary would lose the run: refused."""
    with pytest.raises(ValueError, match="summary is empty"):
        compact(run(), summary)


def test_the_projection_asks_for_user_input_and_fails_closed_over_its_limit() -> None:
    """The projection is for ``user_input`` (notes included), bounded, and absent if empty."""
    tiny = TinyState(notes=("uploads fail at 30 s",), tasks=("t" * 50,))
    result = compact(run(), "s", projection=tiny, detect_skills=False)
    assert tiny.boundaries == ["user_input"]
    projected = result.history[-1]
    assert projected.kind == TurnKind.PROJECTION
    assert projected.parts[0] == TextPart(
        text=f"Working state:\nnote: uploads fail at 30 s\ntask: {'t' * 50}"
    )
    with pytest.raises(CapabilityLimitError, match="max_chars=20"):
        compact(run(), "s", projection=tiny, limits=ProjectionLimits(max_chars=20))
    empty = compact(run(), "s", projection=TinyState(), detect_skills=False)
    assert empty.history[-1].kind == TurnKind.SUMMARY


def test_a_real_working_state_over_the_limit_fails_closed(state: WorkingState) -> None:
    """The real working state's block over ``max_chars`` raises; it is never cut."""
    with pytest.raises(CapabilityLimitError, match="compaction projection"):
        compact(run(), "s", projection=state, limits=ProjectionLimits(max_chars=30))


def test_explicit_skills_win_and_detection_can_be_turned_off() -> None:
    """Given skills replace the detected one for their path; detect_skills=False uses only
    the given ones (no reminder without skills)."""
    mine = SkillInUse(path="skills/review/SKILL.md", purpose="the caller's purpose")
    other = SkillInUse(path="skills/deploy/SKILL.md")
    result = compact(run(), "s", skills=[mine, other], at=at(9))
    assert result.history[-1] == skills_reminder([mine, other], at=at(9))
    assert "the caller's purpose" in result.history[-1].parts[0].text  # type: ignore[union-attr]
    plain = compact(run(), "s", detect_skills=False)
    assert plain.history[-1].kind == TurnKind.SUMMARY


# -- summarize --------------------------------------------------------------------------


class Model:
    """A stand-in model: records each request and answers with a fixed summary."""

    def __init__(self, reply: object = "The timeout is 30 s.") -> None:
        self.reply = reply
        self.requests: list[ModelRequest] = []

    def send(self, request: ModelRequest) -> str:
        """Answer synchronously."""
        self.requests.append(request)
        return self.reply  # type: ignore[return-value]

    async def async_send(self, request: ModelRequest) -> str:
        """Answer asynchronously."""
        return self.send(request)


def test_summarize_sends_the_summary_request_and_compacts(state: WorkingState) -> None:
    """summarize = summary_request + send + compact; async_summarize the same."""
    history = run()
    model = Model()
    result = summarize(history, model.send, projection=state)
    assert model.requests == [summary_request(history)]
    assert result.history[3].parts[0] == TextPart(text=f"{SUMMARY_HEADING}\n\nThe timeout is 30 s.")
    assert result.history[-1].kind == TurnKind.PROJECTION
    asked = summary_request(history, tools=[READ], tool_choice="auto")
    again = asyncio.run(async_summarize(history, model.async_send, request=asked, projection=state))
    assert model.requests[-1] is asked
    assert [t.kind for t in again.history] == [t.kind for t in result.history]
    assert again.history.turns[:3] == result.history.turns[:3]
    assert again.pending == result.pending == (history[9],)


def test_summarize_refuses_a_foreign_request_or_reply() -> None:
    """The request must start with the history; the reply must be text (and not empty)."""
    history = run()
    other = summary_request(MessageHistory(turns=history.turns[1:]))
    with pytest.raises(ValueError, match="does not start with the stored history"):
        summarize(history, Model().send, request=other)
    with pytest.raises(TypeError, match="returned int"):
        summarize(history, Model(reply=3).send)
    with pytest.raises(ValueError, match="summary is empty"):
        asyncio.run(async_summarize(history, Model(reply="").async_send))
