"""``RequestContextComposer``: one coordinator for the request-time context blocks.

Each capability contributes at most one bounded block per request and never rewrites
another's: the coordinator hands each capability only the turn, checks every returned
section against that capability's declared limits (fail closed, never cut), rejects
duplicate names, and orders the blocks deterministically: declared order, then the
``end`` capabilities (the working-state projection) in declared order.

The rendered request context is one XML document whose frame only the coordinator
writes: each block inside ``<section capability="name">``, all of them inside
``<request-context>``. Every block is checked to be well-formed markup first, so no
block can close its section or open another's.
"""

from __future__ import annotations

from collections.abc import Iterable

from taskctx.markup import escape_attr
from taskctx.model import FrozenModel
from taskctx_memory.request import (
    ContextSection,
    DuplicateCapabilityError,
    RequestCapability,
    RequestTurn,
    check_section,
)

__all__ = ["BLOCK_SEPARATOR", "ComposedContext", "RequestContextComposer"]

BLOCK_SEPARATOR = "\n\n"
"""What :meth:`ComposedContext.render` puts between two sections."""

_OPEN, _CLOSE = "<request-context>\n", "\n</request-context>"


def _section_open(name: str) -> str:
    return f'<section capability="{escape_attr(name)}">\n'


_SECTION_CLOSE = "\n</section>"


def _frame_chars(names: list[str]) -> int:
    """Characters :meth:`ComposedContext.render` adds around blocks of ``names``."""
    if not names:
        return 0
    frames = sum(len(_section_open(name)) + len(_SECTION_CLOSE) for name in names)
    return len(_OPEN) + len(_CLOSE) + frames + len(BLOCK_SEPARATOR) * (len(names) - 1)


class ComposedContext(FrozenModel):
    """The blocks of one request, in order, each from exactly one capability."""

    turn: RequestTurn
    sections: tuple[ContextSection, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        """The capabilities that contributed, in block order."""
        return tuple(section.capability for section in self.sections)

    @property
    def chars(self) -> int:
        """Characters of :meth:`render`'s result."""
        return len(self.render())

    def section(self, name: str) -> ContextSection | None:
        """The block of capability ``name``, or None if it contributed nothing."""
        for section in self.sections:
            if section.capability == name:
                return section
        return None

    def render(self) -> str:
        """The request context: each block in its ``<section>``, in order; "" for none."""
        if not self.sections:
            return ""
        framed = (
            f"{_section_open(section.capability)}{section.text}{_SECTION_CLOSE}"
            for section in self.sections
        )
        return _OPEN + BLOCK_SEPARATOR.join(framed) + _CLOSE


class RequestContextComposer:
    """Compose the request context from capabilities, each checked against its limits.

    Raises :class:`~taskctx_memory.request.DuplicateCapabilityError` when two
    capabilities share a name, ValueError for an empty name or an unknown placement.
    """

    __slots__ = ("_capabilities",)

    def __init__(self, capabilities: Iterable[RequestCapability]) -> None:
        given = list(capabilities)
        seen: set[str] = set()
        for capability in given:
            name = capability.name
            if not isinstance(name, str) or not name:
                raise ValueError(f"a capability name must be a non-empty string, not {name!r}")
            if name in seen:
                raise DuplicateCapabilityError(f"two capabilities are named {name!r}")
            placement = capability.placement
            if placement not in ("in_order", "end"):
                raise ValueError(f"capability {name!r} has unknown placement {placement!r}")
            seen.add(name)
        in_order = [c for c in given if c.placement == "in_order"]
        at_end = [c for c in given if c.placement == "end"]
        self._capabilities: tuple[RequestCapability, ...] = (*in_order, *at_end)

    @property
    def capabilities(self) -> tuple[RequestCapability, ...]:
        """The capabilities in block order."""
        return self._capabilities

    @property
    def max_chars(self) -> int:
        """The most characters one composed context can render to."""
        blocks = sum(c.limits.max_chars for c in self._capabilities)
        return blocks + _frame_chars([c.name for c in self._capabilities])

    def compose(self, request: RequestTurn) -> ComposedContext:
        """Ask every capability for its block of ``request`` and check each one.

        Raises :class:`~taskctx_memory.request.CapabilityLimitError` naming the first
        capability over a limit, :class:`~taskctx_memory.request.CapabilityContractError`
        for a section that is not the capability's own.
        """
        if not isinstance(request, RequestTurn):
            raise TypeError(f"compose() takes a RequestTurn, not {type(request).__name__}")
        sections: list[ContextSection] = []
        for capability in self._capabilities:
            declared = capability.limits
            section = capability.contribute(request)
            if section is not None:
                sections.append(check_section(capability.name, declared, section))
        return ComposedContext(turn=request, sections=tuple(sections))
