"""The working-state projection as a request capability, always the last block.

Wraps any :class:`ProjectionSource` (an object with ``project(boundary) -> str | None``;
``WorkingState.project`` is one). The projection is bounded by ``max_chars``: a longer
projection fails closed with :class:`~taskctx_memory.request.CapabilityLimitError`.
"""

from __future__ import annotations

from typing import Protocol

from pydantic import Field

from taskctx_memory.config import DEFAULT_PROJECTION_CHARS
from taskctx_memory.request import (
    Boundary,
    CapabilityLimitError,
    CapabilityLimits,
    ContextSection,
    Placement,
    RequestTurn,
)

__all__ = ["ProjectionLimits", "ProjectionSource", "WorkingStateProjection", "bounded_projection"]


class ProjectionSource(Protocol):
    """Anything that projects a working state as text for a request boundary."""

    def project(self, boundary: str) -> str | None:
        """The projection for ``boundary`` (``user_input`` or ``tool_result``), or None."""
        ...


class ProjectionLimits(CapabilityLimits):
    """Limits of the working-state block: its characters (by default the projection's own
    default bound, 65,536, so a default working state never fails a default request)."""

    max_chars: int = Field(default=DEFAULT_PROJECTION_CHARS, ge=1)


def bounded_projection(
    source: ProjectionSource, boundary: Boundary, limits: ProjectionLimits, name: str
) -> str | None:
    """``source``'s projection for ``boundary``; None when empty; raise when over limit."""
    text = source.project(boundary)
    if text is None or text == "":
        return None
    if not isinstance(text, str):
        raise TypeError(f"{name}: project() returned {type(text).__name__}, not str or None")
    if len(text) > limits.max_chars:
        raise CapabilityLimitError(name, "max_chars", limits.max_chars, len(text))
    return text


class WorkingStateProjection:
    """The working state (notes, tasks) projected at the end of every request."""

    __slots__ = ("limits", "name", "source")
    placement: Placement = "end"

    def __init__(
        self,
        source: ProjectionSource,
        limits: ProjectionLimits | None = None,
        *,
        name: str = "working_state",
    ) -> None:
        self.source = source
        self.limits: ProjectionLimits = limits if limits is not None else ProjectionLimits()
        self.name = name

    def contribute(self, turn: RequestTurn) -> ContextSection | None:
        """The projection for ``turn.boundary``, unchanged, or None when it is empty."""
        text = bounded_projection(self.source, turn.boundary, self.limits, self.name)
        if text is None:
            return None
        return ContextSection.of(self.name, text, self.limits)
