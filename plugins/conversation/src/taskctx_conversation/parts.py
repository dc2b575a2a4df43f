"""The parts a turn is made of: text, thinking, tool call, tool result and media.

Every part is a frozen value tagged by ``type``, so a history round-trips through JSON
(bytes as base64). Media parts hold their bytes inline (``data``) or point at them
(``url``), never both; a URL is never fetched by the parts themselves.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator
from typing_extensions import Self

from taskctx.frozen import FrozenModel
from taskctx.jsonsafe import check_json_depth

__all__ = [
    "DocumentPart",
    "ImagePart",
    "MediaPart",
    "Part",
    "TextPart",
    "ThinkingPart",
    "ToolCallPart",
    "ToolResultPart",
    "VideoPart",
]


def _shallow(value: object, what: str) -> None:
    """Refuse JSON nested deeper than the kernel's limit, as a validation error."""
    try:
        check_json_depth(value, what)
    except TypeError as exc:
        raise ValueError(str(exc)) from None


class TextPart(FrozenModel):
    """Plain text from a user, the model or the harness."""

    type: Literal["text"] = "text"
    text: str


class ThinkingPart(FrozenModel):
    """The model's reasoning, kept as it came (with the provider's signature, if any)."""

    type: Literal["thinking"] = "thinking"
    text: str
    signature: str | None = None


class ToolCallPart(FrozenModel):
    """A tool call the model made; ``call_id`` pairs it with its result."""

    type: Literal["tool_call"] = "tool_call"
    call_id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    arguments: Mapping[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _arguments_depth(self) -> Self:
        _shallow(self.arguments, "tool call arguments")
        return self


class _Media(FrozenModel):
    """Inline bytes or a URL (exactly one), with the media type and an optional label."""

    data: bytes | None = None
    url: str | None = None
    media_type: str | None = None
    label: str | None = None

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if (self.data is None) == (self.url is None):
            raise ValueError(f"a {self.type} part holds either data or url, exactly one")  # type: ignore[attr-defined]
        if self.data is not None and not self.data:
            raise ValueError(f"a {self.type} part's data is empty")  # type: ignore[attr-defined]
        return self

    @property
    def inline(self) -> bool:
        """Whether the bytes travel with the part."""
        return self.data is not None

    def describe(self) -> str:
        """A short human name for explanations: the label, the URL or the media type."""
        if self.label:
            return self.label
        if self.url is not None:
            return self.url if len(self.url) <= 120 else self.url[:117] + "..."
        return f"an inline {self.media_type or self.type}"  # type: ignore[attr-defined]


class ImagePart(_Media):
    """An image; after preparation, possibly one ``segment`` (1-based) of ``segments``."""

    type: Literal["image"] = "image"
    segment: int | None = Field(default=None, ge=1)
    segments: int | None = Field(default=None, ge=1)
    original_width: int | None = None
    original_height: int | None = None


class DocumentPart(_Media):
    """A document passed natively (a PDF, say)."""

    type: Literal["document"] = "document"


class VideoPart(_Media):
    """A video, inline or by URL."""

    type: Literal["video"] = "video"


class ToolResultPart(FrozenModel):
    """The result of one tool call: a string or structured JSON, plus top-level images.

    Filters treat ``images`` like user images; images nested inside structured
    ``content`` are the tool's JSON and are left alone.
    """

    type: Literal["tool_result"] = "tool_result"
    call_id: str = Field(min_length=1)
    content: str | list[Any] | dict[str, Any] = ""
    images: tuple[ImagePart, ...] = ()
    is_error: bool = False

    @model_validator(mode="after")
    def _content_depth(self) -> Self:
        _shallow(self.content, "tool result content")
        return self


MediaPart = ImagePart | DocumentPart | VideoPart
"""A part that carries media rather than text."""

Part = Annotated[
    TextPart | ThinkingPart | ToolCallPart | ToolResultPart | ImagePart | DocumentPart | VideoPart,
    Field(discriminator="type"),
]
"""Any part of a turn."""
