"""Message integrity: tool calls and results stay paired in every request."""

from __future__ import annotations

from taskctx_conversation.history import Turn
from taskctx_conversation.integrity import MISSING_RESULT, MessageIntegrityFilter
from taskctx_conversation.parts import ImagePart, TextPart, ToolCallPart, ToolResultPart
from taskctx_conversation.request import ModelCharacteristics, ModelRequest

from tests.plugins.conversation.helpers import PNG_1X1


def call(*ids: str) -> Turn:
    return Turn(
        role="assistant",
        parts=tuple(ToolCallPart(call_id=i, name="read_file", arguments={"path": i}) for i in ids),
    )


def result(call_id: str, content: str = "ok", role: str = "tool") -> Turn:
    return Turn(role=role, parts=(ToolResultPart(call_id=call_id, content=content),))


def apply(*turns: Turn) -> ModelRequest:
    request = ModelRequest(turns=turns, model=ModelCharacteristics())
    return MessageIntegrityFilter().apply(request)


def shape(request: ModelRequest) -> list[tuple[str, ...]]:
    """Each turn as its role followed by a word per part (text, call id, result id)."""
    out = []
    for turn in request.turns:
        words: list[str] = [turn.role]
        for part in turn.parts:
            if isinstance(part, ToolCallPart):
                words.append(f"call:{part.call_id}")
            elif isinstance(part, ToolResultPart):
                words.append(f"result:{part.call_id}")
            elif isinstance(part, TextPart):
                words.append(f"text:{part.text}")
            else:
                words.append(part.type)
        out.append(tuple(words))
    return out


def test_a_paired_request_comes_back_as_the_same_object() -> None:
    request = ModelRequest(
        turns=(
            Turn.text("user", "read a"),
            call("a", "b"),
            Turn(role="tool", parts=(ToolResultPart(call_id="a"), ToolResultPart(call_id="b"))),
            Turn.text("assistant", "done"),
        ),
        model=ModelCharacteristics(),
    )
    assert MessageIntegrityFilter().apply(request) is request


def test_a_call_without_a_result_gets_an_error_result_saying_so() -> None:
    request = apply(Turn.text("user", "go"), call("a"))
    assert shape(request) == [("user", "text:go"), ("assistant", "call:a"), ("tool", "result:a")]
    made = request.turns[2].parts[0]
    assert isinstance(made, ToolResultPart)
    assert made.is_error
    assert made.content == MISSING_RESULT
    assert [c.action for c in request.changes] == ["added"]
    assert "'a'" in request.changes[0].detail


def test_a_result_after_a_steering_input_moves_up_to_its_call() -> None:
    request = apply(call("a"), Turn.text("user", "also check b"), result("a"))
    assert shape(request) == [
        ("assistant", "call:a"),
        ("tool", "result:a"),
        ("user", "text:also check b"),
    ]
    assert [c.action for c in request.changes] == ["moved"]


def test_results_come_in_call_order_with_other_parts_after_them() -> None:
    mixed = Turn(
        role="user",
        parts=(TextPart(text="note"), ToolResultPart(call_id="b"), ToolResultPart(call_id="a")),
    )
    request = apply(call("a", "b"), mixed)
    assert shape(request) == [
        ("assistant", "call:a", "call:b"),
        ("user", "result:a", "result:b", "text:note"),
    ]
    assert request.changes  # the reordering is reported


def test_a_second_result_for_one_call_is_removed() -> None:
    request = apply(
        call("a"), result("a", "first"), Turn.text("assistant", "ok"), result("a", "again")
    )
    assert shape(request) == [
        ("assistant", "call:a"),
        ("tool", "result:a"),
        ("assistant", "text:ok"),
    ]
    kept = request.turns[1].parts[0]
    assert isinstance(kept, ToolResultPart)
    assert kept.content == "first"
    assert [c.action for c in request.changes] == ["removed"]


def test_a_result_whose_call_is_not_earlier_is_removed() -> None:
    request = apply(result("ghost"), Turn.text("user", "hello"), call("later"), result("later"))
    assert shape(request) == [
        ("user", "text:hello"),
        ("assistant", "call:later"),
        ("tool", "result:later"),
    ]
    assert [c.detail for c in request.changes] == ["tool result 'ghost' has no earlier tool call"]


def test_results_keep_their_top_level_images_and_role() -> None:
    image = ImagePart(data=PNG_1X1, media_type="image/png")
    moved = Turn(role="user", parts=(ToolResultPart(call_id="a", images=(image,)),))
    request = apply(call("a"), Turn.text("user", "wait"), moved)
    answer = request.turns[1]
    assert answer.role == "user"
    assert answer.parts[0] == moved.parts[0]


def test_every_call_of_a_long_history_is_answered_once_and_right_after_it() -> None:
    turns: list[Turn] = []
    for n in range(50):
        turns.append(call(f"c{n}", f"d{n}"))
        if n % 3:
            turns.append(result(f"d{n}"))
        if n % 5 == 0:
            turns.append(Turn.text("user", f"steer {n}"))
        if n % 7 == 0:
            turns.append(result(f"c{n}"))
    request = apply(*turns)
    for t, turn in enumerate(request.turns):
        calls = [c.call_id for c in turn.tool_calls()]
        if calls:
            assert [r.call_id for r in request.turns[t + 1].tool_results()] == calls
    answered = [r.call_id for turn in request.turns for r in turn.tool_results()]
    assert len(answered) == len(set(answered)) == 100
