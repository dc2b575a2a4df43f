"""pretty_json: the text json.dumps(indent=2, sort_keys=True, ensure_ascii=False) gives."""

from __future__ import annotations

import json
import math
from enum import IntEnum
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from taskctx_records.content import pretty_json


def dumps(value: Any) -> str:
    """What a record's JSON looked like before pretty_json: the pure-Python encoder."""
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


KEYS = st.one_of(
    st.text(),
    st.sampled_from(['"', "\\", "\n", "\t", "\x00", "\x1f", "\u2028", "é", "日本", "\U0001f600"]),
)
LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(10**300), max_value=10**300),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1e-320, 1e308, 5e-324, 0.1, 1 / 3, 2.0**63]),
    st.text(),
)
JSON = st.recursive(
    LEAVES,
    lambda children: st.one_of(
        st.lists(children, max_size=6), st.dictionaries(KEYS, children, max_size=6)
    ),
    max_leaves=40,
)


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_pretty_json_is_json_dumps(value: Any) -> None:
    """Any nested JSON value (unicode, escapes in keys and strings, floats incl. NaN and
    infinities, big ints, empty containers, bools, null) renders to the same text."""
    assert pretty_json(value) == dumps(value)


@given(JSON)
def test_pretty_json_of_decoded_json_is_json_dumps(value: Any) -> None:
    """A value as the store gives it back (json.loads of its canonical text) renders the same."""
    decoded = json.loads(json.dumps(value))
    assert pretty_json(decoded) == dumps(decoded)


class Level(IntEnum):
    """An int subclass: json.dumps writes it with int.__repr__."""

    HIGH = 3


class Named(str):
    """A str subclass."""


@pytest.mark.parametrize(
    "value",
    [
        {},
        [],
        [[]],
        {"a": {}},
        "",
        0,
        -(10**40),
        math.nan,
        -math.inf,
        None,
        True,
        (1, [2, (3,)]),
        {"t": (1, 2)},
        {2: "int key", 1: "int key"},
        {2.5: "float key", -1e300: "float key"},
        {None: "null key"},
        {True: "bool key"},
        {"k": Level.HIGH},
        {Named("k"): Named("v")},
        [{"b": 1, "a": [True, None, {"é": "\u2028"}]}, "x"],
    ],
    ids=repr,
)
def test_pretty_json_outside_plain_json_is_json_dumps(value: Any) -> None:
    """Tuples, subclasses, non-str keys and bare scalars render as json.dumps renders them."""
    assert pretty_json(value) == dumps(value)


@pytest.mark.parametrize(
    "value",
    [
        {"a": 1, 2: "mixed keys cannot be sorted"},
        {"s": {1, 2}},
        [object()],
        {"b": b"bytes"},
        [10**5000],
    ],
    ids=["mixed-keys", "set", "object", "bytes", "int-over-the-digit-limit"],
)
def test_pretty_json_refuses_what_json_dumps_refuses(value: Any) -> None:
    """What json.dumps refuses, pretty_json refuses with the same error type and message."""
    try:
        dumps(value)
    except (TypeError, ValueError) as exc:
        expected = exc
    else:
        pytest.fail("json.dumps accepted the value")
    with pytest.raises(type(expected)) as got:
        pretty_json(value)
    assert str(got.value) == str(expected)


def test_pretty_json_refuses_a_circular_value_as_json_dumps_does() -> None:
    """A list that contains itself is the ValueError json.dumps raises, not a RecursionError."""
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular reference"):
        pretty_json(loop)
