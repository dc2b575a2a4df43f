"""What one plugin registration is: validation, origin, staging (for ``taskctx.plugins``).

``validate`` checks one ``register(...)`` call against what each registry needs;
``Origin`` says where a plugin comes from and how the ownership rules see it;
``Staged`` holds a plugin's registrations until the host settles who owns each name.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any, Literal, Protocol, get_args, get_origin

import attrs

from taskctx._ownership import FIRST_PARTY_DISTRIBUTIONS, Claimant, Tier, normalize_name
from taskctx.clisources import CliSource
from taskctx.protocols import (
    FileIOHandler,
    IndexProvider,
    ProtocolMember,
    RequestFilter,
    ScopedRead,
    Selector,
    missing_members,
    protocol_shape,
)

__all__ = [
    "REGISTRY_KINDS",
    "Entry",
    "Failure",
    "Origin",
    "Staged",
    "Staging",
    "accepts_keyword",
    "describe",
    "validate",
]


REGISTRY_KINDS = (
    "source_kinds",
    "scoped_readers",
    "file_io_handlers",
    "index_providers",
    "selectors",
    "commands",
    "cli_sources",
    "request_filters",
)
"""Registry names; each is filled by the hook ``register_<name>``."""


class _Command(Protocol):
    """What ``register_commands`` needs of a command (a ``click.Command`` has it)."""

    def invoke(self, ctx: Any) -> Any:
        """Run the command in a click context."""
        ...

    def main(self, *args: Any, **kwargs: Any) -> Any:
        """Run the command as a program."""
        ...


_PROTOCOLS: dict[str, type] = {
    "scoped_readers": ScopedRead,
    "file_io_handlers": FileIOHandler,
    "index_providers": IndexProvider,
    "selectors": Selector,
    "commands": _Command,
    "request_filters": RequestFilter,
}
"""The protocol each registry's values keep; every check of a registration is derived
from its members (``taskctx.protocols.protocol_shape``)."""
_LABELS = {"index_providers": "index provider", "request_filters": "request filter"}


def describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _check_strings(obj: object, attr: str) -> None:
    value = getattr(obj, attr)
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise TypeError(f"{attr} must be a tuple of str, not {type(value).__name__}")
    if not all(isinstance(v, str) and v for v in value):
        raise TypeError(f"{attr} must hold non-empty str only")


def validate(kind: str, args: tuple[Any, ...]) -> tuple[str, Any]:
    """Check one registration; return (name, value) or raise TypeError/ValueError."""
    expected = 2 if kind == "source_kinds" else 1
    if len(args) != expected:
        usage = "register(kind, factory)" if expected == 2 else "register(obj)"
        raise TypeError(f"{usage} takes {expected} argument(s), got {len(args)}")
    if kind == "cli_sources":
        if not isinstance(args[0], CliSource):
            raise TypeError(f"register() takes a taskctx.CliSource, not {type(args[0]).__name__}")
        return args[0].name, args[0]
    name, value = args if expected == 2 else (getattr(args[0], "name", None), args[0])
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty str, not {name!r}")
    if kind == "source_kinds":
        if not callable(value):
            raise TypeError(f"factory for {name!r} is not callable")
        return name, value
    protocol = _PROTOCOLS[kind]
    missing = missing_members(value, protocol)
    if missing:
        raise TypeError(f"{type(value).__name__} {name!r} lacks {', '.join(missing)}")
    for member in protocol_shape(protocol):
        if member.name != "name":  # checked above: a non-empty str
            _check_member(value, name, member, _LABELS.get(kind))
    return name, value


def _check_member(value: object, name: str, member: ProtocolMember, label: str | None) -> None:
    """Check one member of a registered value against the type its protocol declares."""
    attr = member.name
    if member.kind == "method":
        if not callable(getattr(value, attr)):
            raise TypeError(f"{attr} of {name!r} is not callable")
        return
    returns, where = member.returns, f"{label} {attr}" if label else f"{attr} of {name!r}"
    if returns == tuple[str, ...]:
        _check_strings(value, attr)
    elif returns is bool:
        if not isinstance(getattr(value, attr), bool):
            raise TypeError(f"{where} must be a bool")
    elif get_origin(returns) is Literal and getattr(value, attr) not in get_args(returns):
        raise ValueError(f"{where} must be one of {', '.join(map(str, get_args(returns)))}")


@attrs.frozen
class Origin:
    name: str
    version: str | None
    module: str | None
    entry_point: str | None
    plugin_name: str
    builtin: bool

    @property
    def label(self) -> str:
        if self.entry_point is None and not self.builtin:
            return f"{self.name!r} (in-process)"
        return f"{self.name!r} {self.version or '(no version)'}"

    @property
    def claimant(self) -> Claimant:
        identity = normalize_name(self.name)
        if self.builtin:
            tier = Tier.BUILTIN
        elif self.entry_point is None:
            tier = Tier.EXPLICIT
        else:
            tier = Tier.FIRST_PARTY if identity in FIRST_PARTY_DISTRIBUTIONS else Tier.THIRD_PARTY
        return Claimant(identity, self.label, tier)


@attrs.frozen
class Entry:
    value: Any
    origin: Origin

    @property
    def owner(self) -> str:
        return self.origin.label

    @property
    def builtin(self) -> bool:
        return self.origin.builtin


@attrs.frozen
class Staged:
    """A plugin whose hooks ran; its registrations wait for ownership to be settled."""

    origin: Origin
    plugin: object
    hooks: tuple[str, ...]
    entries: dict[str, dict[str, Any]]


@attrs.define
class Staging:
    kind: str
    entries: dict[str, Any] = attrs.field(factory=dict)
    errors: list[str] = attrs.field(factory=list)
    open: bool = True


class Failure(Exception):
    """Internal: one plugin failed; the message becomes its record's error."""


def accepts_keyword(factory: Callable[..., Any], name: str) -> bool:
    try:
        parameters = inspect.signature(factory).parameters
    except (TypeError, ValueError):  # builtins without a signature
        return False
    return name in parameters  # an explicit parameter: **kwargs may mean something else
