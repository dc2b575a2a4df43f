"""The request pipeline: which filters run, in what order, and what they may not do."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import attrs
import pytest
from taskctx_conversation.coldstart import ColdStartFilter
from taskctx_conversation.errors import RequestFilterError
from taskctx_conversation.history import MessageHistory, Turn, TurnKind
from taskctx_conversation.parts import ImagePart, TextPart, ToolCallPart
from taskctx_conversation.pipeline import RequestPipeline
from taskctx_conversation.request import (
    FilterContext,
    ModelRequest,
    RequestChange,
    ToolDefinition,
)

from taskctx import PluginHost, hookimpl
from tests.plugins.conversation.helpers import PNG_1X1, at


@attrs.frozen
class Shout:
    """A third-party filter: upper-cases user text in the request."""

    name: ClassVar[str] = "shout"
    order: ClassVar[int] = 50
    automatic: ClassVar[bool] = True
    suffix: str = ""

    async def async_apply(self, request: ModelRequest, context: FilterContext) -> ModelRequest:
        turns = [
            t.model_copy(update={"parts": (TextPart(text=t.parts[0].text.upper() + self.suffix),)})
            if t.role == "user" and isinstance(t.parts[0], TextPart)
            else t
            for t in request.turns
        ]
        change = RequestChange(filter=self.name, turn=0, action="replaced", detail="shouted")
        return request.with_turns(turns, [change])


class ShoutPlugin:
    @hookimpl
    def register_request_filters(self, register: Callable[[Any], None]) -> None:
        register(Shout())


def host_with_shout() -> PluginHost:
    host = PluginHost(allow=[])
    host.register(ShoutPlugin(), name="shout-plugin")
    return host


HISTORY = MessageHistory(turns=(Turn.text("user", "hello", kind=TurnKind.INITIAL_INPUT, at=at(0)),))


def test_a_registered_automatic_filter_runs_and_the_history_stays() -> None:
    request = RequestPipeline(host=host_with_shout()).build(HISTORY)
    assert request.turns[0].parts[0] == TextPart(text="HELLO")
    assert HISTORY.turns[0].parts[0] == TextPart(text="hello")
    assert [c.filter for c in request.changes] == ["shout"]


def test_an_explicit_filter_keeps_its_policy_and_stops_the_automatic_one() -> None:
    pipeline = RequestPipeline(host=host_with_shout(), filters=[Shout(suffix="!")])
    assert [f.name for f in pipeline.active_filters] == ["shout", "message_integrity"]
    assert pipeline.build(HISTORY).turns[0].parts[0] == TextPart(text="HELLO!")


def test_filters_run_by_order_and_integrity_is_always_last() -> None:
    pipeline = RequestPipeline(host=host_with_shout(), cold_start_filter=ColdStartFilter())
    assert [f.name for f in pipeline.active_filters] == ["shout", "cold_start", "message_integrity"]


def test_integrity_cannot_be_turned_off() -> None:
    with pytest.raises(ValueError, match="always on"):
        RequestPipeline(host=PluginHost(allow=[]), disable=["message_integrity"])


def test_disabling_an_unknown_filter_names_it() -> None:
    with pytest.raises(ValueError, match="no request filter 'nope'"):
        RequestPipeline(host=PluginHost(allow=[]), disable=["nope"])


def test_a_filter_composed_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="composed twice"):
        RequestPipeline(host=PluginHost(allow=[]), filters=[Shout(), Shout()])


def test_a_switch_and_an_explicit_filter_of_one_name_conflict() -> None:
    with pytest.raises(ValueError, match="cold_start_filter= and filters"):
        RequestPipeline(
            host=PluginHost(allow=[]), filters=[ColdStartFilter()], cold_start_filter=None
        )


def test_something_that_is_not_a_filter_is_refused() -> None:
    with pytest.raises(TypeError, match="lacks"):
        RequestPipeline(host=PluginHost(allow=[]), filters=[object()])  # type: ignore[list-item]


def test_a_failing_filter_is_named() -> None:
    @attrs.frozen
    class Broken:
        name: ClassVar[str] = "broken"
        order: ClassVar[int] = 1
        automatic: ClassVar[bool] = False

        async def async_apply(self, request: ModelRequest, context: FilterContext) -> Any:
            raise KeyError("x")

    with pytest.raises(RequestFilterError, match="'broken' failed: KeyError"):
        RequestPipeline(host=PluginHost(allow=[]), filters=[Broken()]).build(HISTORY)


def test_a_filter_that_returns_something_else_is_named() -> None:
    @attrs.frozen
    class Wrong:
        name: ClassVar[str] = "wrong"
        order: ClassVar[int] = 1
        automatic: ClassVar[bool] = False

        async def async_apply(self, request: ModelRequest, context: FilterContext) -> Any:
            return request.turns

    with pytest.raises(RequestFilterError, match="'wrong' returned tuple"):
        RequestPipeline(host=PluginHost(allow=[]), filters=[Wrong()]).build(HISTORY)


def test_tools_tool_choice_and_system_travel_with_the_request() -> None:
    tool = ToolDefinition(name="read_file", description="Read a file.")
    request = RequestPipeline(host=PluginHost(allow=[])).build(
        HISTORY, tools=[tool], tool_choice={"type": "auto"}, system="Be brief."
    )
    assert request.tools == (tool,)
    assert request.tool_choice == {"type": "auto"}
    assert request.system == "Be brief."


def test_the_history_round_trips_through_json_with_media() -> None:
    stored = HISTORY.append(
        Turn(
            role="assistant",
            parts=(ToolCallPart(call_id="c", name="shot", arguments={"path": "a.png"}),),
            at=at(5),
        ),
        Turn(role="user", parts=(ImagePart(data=PNG_1X1, media_type="image/png"),)),
    )
    assert MessageHistory.model_validate_json(stored.model_dump_json()) == stored


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"data": PNG_1X1, "url": "https://example.com/a.png"}, "exactly one"),
        ({}, "exactly one"),
        ({"data": b""}, "empty"),
    ],
)
def test_a_media_part_holds_data_or_a_url(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ImagePart(**fields)


def test_a_turn_time_needs_a_time_zone() -> None:
    from datetime import datetime

    with pytest.raises(ValueError, match="time zone"):
        Turn.text("user", "x", at=datetime(2026, 1, 1))


def test_deeply_nested_tool_arguments_are_refused() -> None:
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(200):
        node["a"] = {}
        node = node["a"]
    with pytest.raises(ValueError, match="tool call arguments"):
        ToolCallPart(call_id="c", name="n", arguments=deep)
