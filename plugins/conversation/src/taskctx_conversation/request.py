"""What a request filter works on: the request being built and the context it runs in.

:class:`ModelRequest` is the provider request derived from the stored history: the
turns (a copy the filters may change), the model's characteristics, the tools and
``tool_choice``, and :class:`RequestChange` records of every change a filter made, so
an application can log or show what this request left out and why. The stored history
never changes. :class:`FilterContext` carries the stored history, the time, the run's
configuration (``allowed_hosts`` for any download) and the attempt number.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import attrs
from pydantic import Field

from taskctx.frozen import FrozenModel
from taskctx.policy import RunConfiguration
from taskctx_conversation.history import MessageHistory, Turn

__all__ = [
    "FilterContext",
    "ModelCharacteristics",
    "ModelRequest",
    "RequestChange",
    "ToolDefinition",
]

IMAGE_MEDIA_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
VIDEO_MEDIA_TYPES = frozenset({"video/mp4", "video/webm", "video/quicktime", "video/mpeg"})


class ModelCharacteristics(FrozenModel):
    """What the model a request goes to can take; filters derive the request from it."""

    name: str = "model"
    image_input: bool = True
    image_media_types: frozenset[str] = IMAGE_MEDIA_TYPES
    document_input: bool = False
    document_media_types: frozenset[str] = frozenset({"application/pdf"})
    video_input: bool = False
    video_media_types: frozenset[str] = VIDEO_MEDIA_TYPES
    video_urls: bool = False
    """Whether the provider takes a (non-YouTube) video URL as it is."""
    youtube_urls: bool = False
    """Whether the provider takes YouTube URLs; only then are they passed on."""


class ToolDefinition(FrozenModel):
    """A tool the model may call: its name, what it does and its JSON Schema input."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_-]{1,64}$")
    description: str
    input_schema: Mapping[str, Any] = Field(default_factory=lambda: {"type": "object"})


class RequestChange(FrozenModel):
    """One change a filter made to this request: where, what it did and why."""

    filter: str
    turn: int
    """Index of the turn in the request as the filter received it."""
    action: str
    """``replaced``, ``split``, ``resized``, ``shortened``, ``removed``, ``added`` or ``moved``."""
    detail: str


class ModelRequest(FrozenModel):
    """The request for one model call, derived from the history; filters return new ones."""

    turns: tuple[Turn, ...]
    model: ModelCharacteristics
    tools: tuple[ToolDefinition, ...] = ()
    tool_choice: str | Mapping[str, Any] | None = None
    system: str | None = None
    changes: tuple[RequestChange, ...] = ()
    attempt: int = Field(default=1, ge=1)

    def with_turns(self, turns: Sequence[Turn], changes: Sequence[RequestChange]) -> ModelRequest:
        """This request with ``turns`` in place of its own and ``changes`` recorded."""
        if not changes and tuple(turns) == self.turns:
            return self
        return self.model_copy(update={"turns": tuple(turns), "changes": (*self.changes, *changes)})

    def changes_by(self, filter_name: str) -> tuple[RequestChange, ...]:
        """The changes one filter made."""
        return tuple(c for c in self.changes if c.filter == filter_name)


@attrs.frozen
class FilterContext:
    """What a filter may consult besides the request: nothing in it is for changing."""

    history: MessageHistory
    now: datetime
    configuration: RunConfiguration = attrs.field(factory=RunConfiguration)
    last_response_at: datetime | None = None

    def idle_seconds(self) -> float | None:
        """Seconds since the model last responded, or None when it never has."""
        if self.last_response_at is None:
            return None
        return (self.now - self.last_response_at).total_seconds()
