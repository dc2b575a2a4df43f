"""Cold start: after an idle gap, consumed tool output is shortened in the request only."""

from __future__ import annotations

import pytest
from taskctx_conversation.coldstart import ColdStartFilter
from taskctx_conversation.history import MessageHistory, Turn
from taskctx_conversation.parts import (
    ImagePart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
)
from taskctx_conversation.pipeline import RequestPipeline
from taskctx_conversation.request import ModelRequest

from taskctx import PluginHost
from tests.plugins.conversation.helpers import PNG_1X1, at

LONG = "line of build output\n" * 500  # 10,500 characters


def history(last_response: float = 0) -> MessageHistory:
    """A run: a consumed long tool result, then a pending one after the last response."""
    return MessageHistory(
        turns=(
            Turn.text("user", "Build it and tell me what failed. " + LONG, at=at(-100)),
            Turn(
                role="assistant",
                parts=(
                    ThinkingPart(text="I will build. " + LONG),
                    ToolCallPart(call_id="b1", name="build"),
                ),
                at=at(-90),
            ),
            Turn(role="tool", parts=(ToolResultPart(call_id="b1", content=LONG),)),
            Turn(
                role="assistant",
                parts=(
                    ToolCallPart(call_id="b2", name="build"),
                    ToolCallPart(call_id="s1", name="shot"),
                ),
                at=at(last_response),
            ),
            Turn(
                role="tool",
                parts=(
                    ToolResultPart(call_id="b2", content=LONG),
                    ToolResultPart(
                        call_id="s1", content={"log": LONG}, images=(ImagePart(data=PNG_1X1),)
                    ),
                ),
            ),
        )
    )


def build(gap: float, **options: object) -> ModelRequest:
    pipeline = RequestPipeline(host=PluginHost(allow=[]), **options)  # type: ignore[arg-type]
    return pipeline.build(history(), now=at(gap))


def test_before_the_idle_interval_nothing_changes() -> None:
    stored = history()
    request = RequestPipeline(host=PluginHost(allow=[]), cold_start_filter=ColdStartFilter()).build(
        stored, now=at(3599)
    )
    assert request.turns == stored.turns
    assert request.changes == ()


def test_at_the_interval_old_consumed_results_are_shortened() -> None:
    request = build(3600, cold_start_filter=ColdStartFilter())
    shortened = request.turns[2].parts[0]
    assert isinstance(shortened, ToolResultPart)
    assert isinstance(shortened.content, str)
    assert shortened.content.startswith(LONG[:500])
    assert "10000 of 10500 characters of this tool result are left out" in shortened.content
    assert "1.0 h idle" in shortened.content
    assert len(shortened.content) < 800
    assert [(c.filter, c.turn, c.action) for c in request.changes] == [
        ("cold_start", 2, "shortened")
    ]


def test_user_input_thinking_media_structured_and_pending_results_stay() -> None:
    stored = history()
    pipeline = RequestPipeline(host=PluginHost(allow=[]), cold_start_filter=ColdStartFilter())
    request = pipeline.build(stored, now=at(7200))
    assert request.turns[2] is not stored.turns[2]  # the consumed result was shortened
    assert request.turns[0] is stored.turns[0]  # user input
    assert request.turns[1] is stored.turns[1]  # thinking
    assert request.turns[4] is stored.turns[4]  # pending string result, structured result, image


def test_the_stored_history_keeps_every_character() -> None:
    stored = history()
    RequestPipeline(host=PluginHost(allow=[]), cold_start_filter=ColdStartFilter()).build(
        stored, now=at(10_000)
    )
    result = stored.turns[2].parts[0]
    assert isinstance(result, ToolResultPart)
    assert result.content == LONG


def test_a_history_the_model_never_answered_is_not_cold() -> None:
    stored = MessageHistory(turns=(Turn.text("user", LONG),))
    request = RequestPipeline(host=PluginHost(allow=[]), cold_start_filter=ColdStartFilter()).build(
        stored, now=at(10**6)
    )
    assert request.turns == stored.turns


def test_short_results_are_left_whole() -> None:
    request = build(3600, cold_start_filter=ColdStartFilter(keep_chars=20_000))
    assert request.changes == ()


def test_interval_and_kept_length_are_settings() -> None:
    request = build(61, cold_start_filter=ColdStartFilter(idle_seconds=60, keep_chars=100))
    shortened = request.turns[2].parts[0]
    assert isinstance(shortened, ToolResultPart)
    assert isinstance(shortened.content, str)
    assert shortened.content.startswith(LONG[:100])
    assert "1 min idle" in shortened.content


@pytest.mark.parametrize("bad", [{"idle_seconds": 0}, {"keep_chars": -1}, {"idle_seconds": True}])
def test_bad_settings_are_refused_by_name(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=next(iter(bad))):
        ColdStartFilter(**bad)  # type: ignore[arg-type]


def test_cold_start_none_turns_it_off() -> None:
    pipeline = RequestPipeline(
        host=PluginHost(allow=[]), filters=[ColdStartFilter()], disable=["cold_start"]
    )
    assert [f.name for f in pipeline.active_filters] == ["message_integrity"]
    off = RequestPipeline(host=PluginHost(allow=[]), cold_start_filter=None)
    assert off.build(history(), now=at(10**6)).changes == ()


def test_text_parts_are_never_shortened() -> None:
    stored = MessageHistory(
        turns=(
            Turn(role="tool", parts=(TextPart(text=LONG),)),
            Turn.text("assistant", "ok", at=at(0)),
        )
    )
    request = RequestPipeline(host=PluginHost(allow=[]), cold_start_filter=ColdStartFilter()).build(
        stored, now=at(10**6)
    )
    assert request.turns == stored.turns
