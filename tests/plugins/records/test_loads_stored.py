"""loads_stored: the value (or the error) json.loads gives, for any text."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from taskctx_records.content import canonical_json, loads_stored

LEAVES = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text())
JSON = st.recursive(
    LEAVES,
    lambda children: st.one_of(
        st.lists(children, max_size=5), st.dictionaries(st.text(), children, max_size=5)
    ),
    max_leaves=30,
)


def same(left: Any, right: Any) -> bool:
    """Equal JSON values, with NaN equal to itself and 1 not equal to 1.0 or True."""
    return json.dumps(left, sort_keys=True) == json.dumps(right, sort_keys=True)


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_stored_json_loads_as_json_loads_it(value: Any) -> None:
    """The canonical text the store writes (and the same text indented) loads to what
    json.loads gives."""
    for text in (canonical_json(value), json.dumps(value, indent=2)):
        assert same(loads_stored(text), json.loads(text))


@pytest.mark.parametrize(
    "text",
    [' {"a": 1}', '{"a": 1} ', "\n[1]\n", "NaN", "-Infinity", '"\u2028"', "1e400", "0"],
)
def test_text_around_or_unusual_values_load_as_json_loads_them(text: str) -> None:
    """Whitespace around the value and the constants json.loads accepts give its value."""
    assert same(loads_stored(text), json.loads(text))


@pytest.mark.parametrize(
    "text", ["", " ", "{", '{"a": 1} x', "[1,]", "\ufeff{}", "tru", '"open', "{} {}", "01"]
)
def test_text_that_is_not_json_raises_what_json_loads_raises(text: str) -> None:
    """Text that is not one JSON value raises json.loads's JSONDecodeError, same message."""
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(text)
    with pytest.raises(json.JSONDecodeError) as got:
        loads_stored(text)
    assert str(got.value) == str(expected.value)
