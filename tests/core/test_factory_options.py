"""Options given to a source factory as text are converted to its parameter types, and a
value that does not convert is refused naming the option, before the factory runs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pytest

from taskctx._factoryoptions import prepare_options
from taskctx.errors import TaskCtxError

if TYPE_CHECKING:
    from taskctx.plugins import PluginHost


def factory(  # type: ignore[no-untyped-def]
    root: str | Path,
    mode: Literal["read_only", "read_write"] = "read_only",
    size: int = 10,
    create: bool | None = None,
    flag: bool | str = True,
    anything: Any = None,
    untyped=None,
    host: PluginHost | None = None,
) -> None:
    """A factory with the parameter types source factories use."""


def prepare(**options: Any) -> dict[str, Any]:
    """prepare_options for ``factory`` under the kind ``demo``."""
    return prepare_options("demo", "acme-demo", factory, options)


def test_text_is_converted_to_the_parameter_type() -> None:
    """'12' for an int, 'true' for a bool, a Literal's member: converted."""
    assert prepare(root="r", size="12", create="true", mode="read_write") == {
        "root": "r",
        "size": 12,
        "create": True,
        "mode": "read_write",
    }


def test_types_that_take_text_get_the_text() -> None:
    """str | Path, bool | str, Any and no annotation keep the string given."""
    given = {"root": "r", "flag": "true", "anything": "5", "untyped": "7"}
    assert prepare(**given) == given


def test_values_that_are_not_text_are_left_to_the_factory() -> None:
    """A Python caller's values pass through as given."""
    assert prepare(root=Path("r"), size=3) == {"root": Path("r"), "size": 3}


def test_an_unresolvable_annotation_is_not_checked() -> None:
    """A type imported only for type checking (PluginHost) is the factory's to check."""
    assert prepare(root="r", host="x") == {"root": "r", "host": "x"}


@pytest.mark.parametrize(
    ("option", "value", "reason"),
    [
        ("size", "abc", "valid integer"),
        ("size", "1.5", "valid integer"),
        ("create", "maybe", "valid boolean"),
        ("mode", "rw", "'read_only' or 'read_write'"),
    ],
)
def test_text_that_does_not_convert_is_refused_naming_the_option(
    option: str, value: str, reason: str
) -> None:
    """The error names the kind, its distribution, the option and the value."""
    with pytest.raises(TaskCtxError) as raised:
        prepare(root="r", **{option: value})
    message = str(raised.value)
    assert message.startswith(f"source kind 'demo' (acme-demo): option {option}={value!r}")
    assert reason in message
    assert "Value error" not in message


def test_an_unknown_option_names_the_ones_it_takes() -> None:
    """The signature check comes first."""
    with pytest.raises(TaskCtxError, match=r"it takes: root, mode, size, create"):
        prepare(root="r", colour="red")
