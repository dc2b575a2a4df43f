"""ContextBudget and ContextConsumer take their fields positionally, as the seed writes them."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from pydantic import ValidationError

from taskctx import ContextBudget, ContextConsumer


def test_budget_positional_is_the_keyword_form() -> None:
    """ContextBudget(6000, 12) equals ContextBudget(max_chars=6000, max_blocks=12)."""
    budget = ContextBudget(6000, 12)
    assert budget == ContextBudget(max_chars=6000, max_blocks=12)
    assert (budget.max_chars, budget.max_blocks) == (6000, 12)
    assert ContextBudget(6000) == ContextBudget(max_chars=6000)
    assert ContextBudget(6000).max_blocks == ContextBudget().max_blocks
    assert ContextBudget(6000, max_blocks=3).max_blocks == 3


def test_consumer_positional_is_the_keyword_form() -> None:
    """ContextConsumer("visual-reviewer", capabilities=...) works, as does a 2nd positional."""
    capabilities = {"attachments": {"image": True}}
    consumer = ContextConsumer("visual-reviewer", capabilities=capabilities)
    assert consumer == ContextConsumer(name="visual-reviewer", capabilities=capabilities)
    assert consumer.accepts_image_attachments()
    assert ContextConsumer("visual-reviewer", capabilities) == consumer
    assert ContextConsumer("plain").capabilities == {}


def test_positional_values_stay_frozen_and_round_trip() -> None:
    """Positional construction keeps the values frozen, JSON round-trippable and picklable."""
    budget = ContextBudget(6000, 12)
    consumer = ContextConsumer("visual-reviewer", {"attachments": {"image": True}})
    assert ContextBudget.model_validate_json(budget.model_dump_json()) == budget
    assert ContextConsumer.model_validate_json(consumer.model_dump_json()) == consumer
    assert ContextBudget(**budget.model_dump()) == budget
    assert pickle.loads(pickle.dumps(budget)) == budget
    assert budget.model_fields_set == {"max_chars", "max_blocks"}
    assert ContextBudget(6000).model_fields_set == {"max_chars"}
    with pytest.raises(ValidationError, match="frozen"):
        budget.max_chars = 1  # type: ignore[misc]
    with pytest.raises(ValidationError, match="frozen"):
        consumer.name = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((1, 2, 3), {}, "positional"),
        ((6000,), {"max_chars": 5000}, "'max_chars' both positionally and by keyword"),
        ((6000, 12), {"max_blocks": 5}, "'max_blocks' both positionally and by keyword"),
    ],
)
def test_budget_bad_call_shapes_are_type_errors(
    args: tuple[Any, ...], kwargs: dict[str, Any], message: str
) -> None:
    """Too many positionals, or a field given twice, is a TypeError naming the problem."""
    with pytest.raises(TypeError, match=message):
        ContextBudget(*args, **kwargs)


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        (("a", {}, 1), {}, "positional"),
        (("a",), {"name": "b"}, "'name' both positionally and by keyword"),
        (("a", {}), {"capabilities": {}}, "'capabilities' both positionally and by keyword"),
    ],
)
def test_consumer_bad_call_shapes_are_type_errors(
    args: tuple[Any, ...], kwargs: dict[str, Any], message: str
) -> None:
    """Too many positionals, or a field given twice, is a TypeError naming the problem."""
    with pytest.raises(TypeError, match=message):
        ContextConsumer(*args, **kwargs)


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ((0,), "max_chars"),
        (("many",), "max_chars"),
        ((10, -1), "max_blocks"),
        ((None,), "max_chars"),
    ],
)
def test_budget_positional_values_are_validated(args: tuple[Any, ...], field: str) -> None:
    """Positional values are validated like keywords: the error names the field."""
    with pytest.raises(ValidationError, match=field):
        ContextBudget(*args)


@pytest.mark.parametrize(
    ("args", "field"),
    [((), "name"), ((None,), "name"), (("a", "not a mapping"), "capabilities"), ((3,), "name")],
)
def test_consumer_positional_values_are_validated(args: tuple[Any, ...], field: str) -> None:
    """A missing or mistyped name or capabilities raises a ValidationError naming the field."""
    with pytest.raises(ValidationError, match=field):
        ContextConsumer(*args)


def test_unknown_keywords_are_still_refused() -> None:
    """The positional form does not open the door to unknown fields."""
    with pytest.raises(ValidationError, match="extra"):
        ContextBudget(6000, colour="red")
    with pytest.raises(ValidationError, match="extra"):
        ContextConsumer("a", colour="red")
