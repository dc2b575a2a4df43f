"""The values of a composed request context, the capability protocol and its errors.

A request capability contributes at most one bounded :class:`ContextSection` per
:class:`RequestTurn`. It declares its limits up front as a frozen
:class:`CapabilityLimits`; the coordinator (:mod:`taskctx_memory.compose`) checks every
section against them with :func:`check_section` and fails closed, never cutting.

The limit rule is generic: ``section.chars <= limits.max_chars``, and for every measured
amount ``used[k]`` that has a declared ``max_<k>`` limit, ``used[k] <= max_<k>``.

A section's text is markup: text and balanced elements, every value from outside escaped
with :mod:`taskctx.markup`. :func:`check_section` refuses a text that is not well-formed
or holds a raw ``[[``, so no value a capability forgot to escape can close the frame the
coordinator puts around its block or show the shape of a package alias.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, Protocol

from pydantic import Field, model_validator

from taskctx.errors import TaskCtxError
from taskctx.markup import check_fragment
from taskctx.model import FrozenModel

__all__ = [
    "Boundary",
    "CapabilityContractError",
    "CapabilityLimitError",
    "CapabilityLimits",
    "ContextSection",
    "DuplicateCapabilityError",
    "Placement",
    "RequestCapability",
    "RequestContextError",
    "RequestTurn",
    "check_section",
]

Boundary = Literal["user_input", "tool_result"]
"""What started a request: new user input, or the result of a tool call."""

Placement = Literal["in_order", "end"]
"""Where a capability's block goes: in declared order, or after all ``in_order`` blocks."""


class RequestContextError(TaskCtxError):
    """Base of the errors of the composed request context."""


class CapabilityLimitError(RequestContextError):
    """A capability's block (or its configuration) exceeds one of its declared limits.

    Raised instead of cutting: nothing is silently truncated. ``capability`` names the
    capability, ``limit`` the limit (``max_chars``, ``max_entries``, ...), ``allowed``
    its declared value and ``actual`` what was needed.
    """

    def __init__(
        self, capability: str, limit: str, allowed: int, actual: int, detail: str = ""
    ) -> None:
        self.capability = capability
        self.limit = limit
        self.allowed = allowed
        self.actual = actual
        suffix = f": {detail}" if detail else ""
        super().__init__(
            f"capability {capability!r} is over its limit {limit}={allowed} "
            f"(needs {actual}){suffix}; nothing was cut"
        )


class DuplicateCapabilityError(RequestContextError, ValueError):
    """Two capabilities given to one coordinator have the same name."""


class CapabilityContractError(RequestContextError):
    """A capability returned something other than its own honest section.

    For example a section under another capability's name, or limit facts that are not
    the limits the capability declared.
    """


class RequestTurn(FrozenModel):
    """One request of an agent loop: its boundary, its logical run and its number."""

    boundary: Boundary
    run_id: str = Field(min_length=1)
    request: int = Field(ge=1)


class CapabilityLimits(FrozenModel):
    """Base of every capability's limits: at least a bound on the block's characters."""

    max_chars: int = Field(default=4000, ge=1)


class ContextSection(FrozenModel):
    """One capability's block for one request, with the facts of what it holds.

    ``limits`` are the limits it was built under, ``used`` what it measured against them
    (``entries``, ``depth``, ``files``, ...), ``omitted`` how much it left out and of
    what, ``notes`` plain-language remarks (why something was left out).
    """

    capability: str = Field(min_length=1)
    text: str = Field(min_length=1)
    chars: int = Field(ge=1)
    limits: Mapping[str, int]
    used: Mapping[str, int] = Field(default_factory=dict)
    omitted: Mapping[str, int] = Field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _chars_is_length(self) -> ContextSection:
        if self.chars != len(self.text):
            raise ValueError(f"chars={self.chars} but the text has {len(self.text)} characters")
        return self

    @classmethod
    def of(
        cls,
        capability: str,
        text: str,
        limits: CapabilityLimits,
        *,
        used: Mapping[str, int] | None = None,
        omitted: Mapping[str, int] | None = None,
        notes: tuple[str, ...] = (),
    ) -> ContextSection:
        """A section of ``text`` built under ``limits`` (``chars`` is counted here)."""
        return cls(
            capability=capability,
            text=text,
            chars=len(text),
            limits=limits.model_dump(),
            used=dict(used or {}),
            omitted=dict(omitted or {}),
            notes=notes,
        )


class RequestCapability(Protocol):
    """Something that contributes at most one bounded block to each request.

    ``contribute`` sees only the turn, never another capability's block; it returns
    None when it has nothing for this request.
    """

    @property
    def name(self) -> str:
        """The capability's unique name within one coordinator."""
        ...

    @property
    def limits(self) -> CapabilityLimits:
        """The declared limits every section of this capability must keep."""
        ...

    @property
    def placement(self) -> Placement:
        """``in_order`` (declared order) or ``end`` (after every ``in_order`` block)."""
        ...

    def contribute(self, turn: RequestTurn) -> ContextSection | None:
        """This capability's block for ``turn``, or None."""
        ...


def check_section(name: str, limits: CapabilityLimits, section: object) -> ContextSection:
    """``section`` if it is ``name``'s honest section within ``limits``; else raise.

    Raises :class:`CapabilityContractError` for a wrong type, a wrong name, limit facts
    that differ from ``limits`` or a text that is not well-formed markup, and
    :class:`CapabilityLimitError` for any amount over its declared limit.
    """
    if not isinstance(section, ContextSection):
        raise CapabilityContractError(
            f"capability {name!r} returned {type(section).__name__}, not a ContextSection or None"
        )
    if section.capability != name:
        raise CapabilityContractError(
            f"capability {name!r} returned a section named {section.capability!r}; "
            "a capability contributes only its own block"
        )
    declared = limits.model_dump()
    if dict(section.limits) != declared:
        raise CapabilityContractError(
            f"capability {name!r} reports limits {dict(section.limits)} but declared {declared}"
        )
    if section.chars > limits.max_chars:
        raise CapabilityLimitError(name, "max_chars", limits.max_chars, section.chars)
    try:
        check_fragment(section.text)
    except ValueError as error:
        raise CapabilityContractError(
            f"capability {name!r} returned a block that is not safe markup ({error}); "
            "escape every value from outside with taskctx.markup"
        ) from None
    for amount, value in section.used.items():
        bound = declared.get(f"max_{amount}")
        if isinstance(bound, int) and value > bound:
            raise CapabilityLimitError(name, f"max_{amount}", bound, value)
    return section
