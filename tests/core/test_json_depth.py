"""JSON nesting is bounded at every kernel entry point, checked without recursion.

A value nested past ``MAX_JSON_DEPTH`` (100) levels is refused with the documented
error naming the limit (TypeError for values, ValueError for JSON text, PolicyError for
run-configuration extensions), at 101, 995 and 100,000 levels alike, and never as a bare
RecursionError; 50 levels still work.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import pytest

from taskctx import ContextConsumer, PluginHost, TaskContext
from taskctx.cursor import CursorSigner
from taskctx.errors import PolicyError
from taskctx.jsonsafe import MAX_JSON_DEPTH, check_json_depth, check_json_text_depth, loads_json
from taskctx.model import ContextFilters, SourceDescriptor
from taskctx.policy import RunConfiguration
from taskctx.testing import MemorySource

LIMIT = MAX_JSON_DEPTH
TOO_DEEP = [LIMIT + 1, 995, 100_000]
KINDS = ["list", "dict", "mixed"]
DEEP_CASES = [  # (levels, kind): the limit + 1 of each kind, then far past it
    (LIMIT + 1, "list"),
    (LIMIT + 1, "dict"),
    (LIMIT + 1, "mixed"),
    (995, "list"),
    (995, "dict"),
    (100_000, "mixed"),
]
MESSAGE = f"more than {LIMIT} levels deep"


def nested(depth: int, kind: str, leaf: Any = 1) -> Any:
    """A value of ``depth`` levels of lists, dicts or both alternating (``[[1]]`` is 2)."""
    value = leaf
    for level in range(depth):
        as_dict = kind == "dict" or (kind == "mixed" and level % 2)
        value = {"k": value} if as_dict else [value]
    return value


def nested_text(depth: int, kind: str) -> str:
    """The JSON text of ``nested(depth, kind)``, built without recursion."""
    opens, closes = [], []
    for level in range(depth):
        as_dict = kind == "dict" or (kind == "mixed" and level % 2)
        opens.append('{"k":' if as_dict else "[")
        closes.append("}" if as_dict else "]")
    return "".join(reversed(opens)) + "1" + "".join(closes)


def test_limit_is_the_documented_one() -> None:
    """The limit is 100 levels, and a value exactly at it passes."""
    assert MAX_JSON_DEPTH == 100
    check_json_depth(nested(LIMIT, "mixed"), "value")
    check_json_text_depth(nested_text(LIMIT, "mixed"), "text")


@pytest.mark.parametrize(("depth", "kind"), DEEP_CASES)
def test_deep_values_are_refused_with_type_error(depth: int, kind: str) -> None:
    """check_json_depth refuses lists, dicts and tuples past the limit, naming it."""
    with pytest.raises(TypeError, match=f"payload nests arrays and objects {MESSAGE}"):
        check_json_depth(nested(depth, kind), "payload")


def test_tuples_and_wide_values_count_levels_not_items() -> None:
    """Tuples are levels too; 100,000 items at one level are one level."""
    with pytest.raises(TypeError, match=MESSAGE):
        check_json_depth((nested(LIMIT, "list"),), "value")
    check_json_depth({"items": list(range(100_000)), "more": [{"a": 1}] * 1000}, "value")


class _Scope(dict[str, Any]):
    """A dict subclass: a Mapping, but not exactly a dict."""


@pytest.mark.parametrize(
    "wrap",
    [MappingProxyType, _Scope, tuple],
    ids=["mapping-proxy", "dict-subclass", "tuple"],
)
def test_containers_other_than_dict_and_list_count_levels(wrap: Callable[[Any], Any]) -> None:
    """Any Mapping, list or tuple is a level, at the top and inside exact dicts and lists
    (the walk checks exact dicts and lists first, every other container after)."""
    inner = wrap({"k": 1}) if wrap is not tuple else (1,)
    check_json_depth({"a": [inner]}, "value")
    deep: Any = 1
    for _ in range(LIMIT):
        deep = wrap({"k": deep}) if wrap is not tuple else (deep,)
    check_json_depth(deep, "value")
    for too_deep in ([deep], {"a": deep}, wrap({"k": deep}) if wrap is not tuple else (deep,)):
        with pytest.raises(TypeError, match=MESSAGE):
            check_json_depth(too_deep, "value")


def test_a_value_that_contains_itself_is_refused() -> None:
    """A cyclic value is infinitely deep: refused cleanly, not a RecursionError."""
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(TypeError, match="value contains itself"):
        check_json_depth(loop, "value")
    table: dict[str, Any] = {}
    table["self"] = [1, {"deeper": [table]}]
    with pytest.raises(TypeError, match="value contains itself"):
        check_json_depth(table, "value")
    shared = [1, 2]
    check_json_depth({"a": shared, "b": [shared, shared]}, "value")  # shared, not cyclic


@pytest.mark.parametrize(("depth", "kind"), DEEP_CASES)
def test_deep_json_text_is_refused_before_parsing(depth: int, kind: str) -> None:
    """loads_json refuses text nested past the limit with ValueError naming it."""
    with pytest.raises(ValueError, match=f"state nests arrays and objects {MESSAGE}"):
        loads_json(nested_text(depth, kind), "state")


@pytest.mark.parametrize("kind", KINDS)
def test_json_text_within_the_limit_loads(kind: str) -> None:
    """Text 50 levels deep loads to the same value; brackets inside strings do not count."""
    assert loads_json(nested_text(50, kind), "state") == nested(50, kind)
    quoted = json.dumps(["[" * 5000, "{" * 5000, 'a "quoted" ] } [', '\\"[', "\\"])
    assert loads_json(quoted, "state") == json.loads(quoted)
    assert loads_json(quoted.encode(), "state") == json.loads(quoted)
    with pytest.raises(ValueError, match="state is not valid JSON"):
        loads_json("[1, 2", "state")


def entry_points() -> dict[str, Callable[[Any], object]]:
    """Kernel entry points taking a JSON value from a caller, a source or a plugin."""

    def reader_with(value: Any) -> object:
        ctx = TaskContext("depth", host=PluginHost(allow=[]))
        ctx.attach(MemorySource({"a.txt": "alpha"}), binding_id="notes")
        consumer = ContextConsumer(name="c", capabilities={"k": value})
        return ctx.reader(consumer=consumer).read("alpha").model_dump_json()

    def restore_with(value: Any) -> object:
        ctx = TaskContext("depth", host=PluginHost(allow=[]))
        ctx.attach(MemorySource({"a.txt": "alpha"}), binding_id="notes")
        reader = ctx.reader(consumer="c")
        reader.read("alpha")
        state = reader.export_state()
        state["consumer"]["capabilities"] = {"k": value}
        return ctx.restore_reader(state)

    return {
        "consumer capabilities": lambda v: ContextConsumer(name="c", capabilities={"k": v}),
        "reader consumer": reader_with,
        "restore_reader state": restore_with,
        "filters metadata": lambda v: ContextFilters(metadata={"k": v}),
        "descriptor metadata": lambda v: SourceDescriptor(
            path="a.txt", content_version="v1", metadata={"k": v}
        ),
        "cursor body": lambda v: CursorSigner(b"k" * 32, "reader").issue({"k": v}, 60),
    }


@pytest.mark.parametrize("name", sorted(entry_points()))
@pytest.mark.parametrize(("depth", "kind"), DEEP_CASES)
def test_kernel_entry_points_refuse_deep_values(name: str, kind: str, depth: int) -> None:
    """Consumer capabilities, filters and descriptor metadata, reader state and cursor
    bodies refuse a value nested past the limit with TypeError naming the limit."""
    with pytest.raises(TypeError, match=MESSAGE):
        entry_points()[name](nested(depth - 1, kind))  # inside {"k": ...}: one level more


@pytest.mark.parametrize("name", sorted(entry_points()))
@pytest.mark.parametrize("kind", KINDS)
def test_kernel_entry_points_take_values_within_the_limit(name: str, kind: str) -> None:
    """The same entry points take a value 50 levels deep."""
    entry_points()[name](nested(49, kind))


@pytest.mark.parametrize(("depth", "kind"), DEEP_CASES)
def test_run_configuration_extensions_refuse_deep_values(depth: int, kind: str) -> None:
    """RunConfiguration refuses a deep extension value with its PolicyError, naming it."""
    with pytest.raises(PolicyError, match=f"extension value at acme nests .*{MESSAGE}"):
        RunConfiguration(extensions={"acme": nested(depth, kind)})


@pytest.mark.parametrize("kind", KINDS)
def test_run_configuration_extensions_within_the_limit(kind: str) -> None:
    """An extension value 50 levels deep is kept and handed back equal."""
    configuration = RunConfiguration(extensions={"acme": nested(50, kind)})
    assert configuration.extension("acme") == json.loads(json.dumps(nested(50, kind)))


@pytest.mark.parametrize("depth", TOO_DEEP)
def test_restore_reader_refuses_deep_state_text(depth: int) -> None:
    """Reader state as JSON text nested too deep is refused with a ValueError."""
    ctx = TaskContext("depth", host=PluginHost(allow=[]))
    text = '{"task_id": "depth", "consumer": {"name": "c", "capabilities": {"k": '
    text += nested_text(depth, "list") + "}}}"
    with pytest.raises((ValueError, TypeError), match=r"recursion limit|levels deep"):
        ctx.restore_reader(text)
