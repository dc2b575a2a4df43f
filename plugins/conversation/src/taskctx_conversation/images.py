"""Image input: each request's images prepared to the model's limits (seed 003).

The filter walks the request's images from the latest back: user (and other turns')
image parts and tool results' top-level images; images inside a tool result's
structured JSON are the tool's data and stay as they are. Each inline image goes
through :func:`taskctx.imageprep.prepare_image` with the filter's
:class:`~taskctx.imageprep.ImageInputPolicy` (tall screenshots become ordered
segments, oversized images are scaled and re-encoded, animated ones pass untouched or
not at all); an image URL counts toward ``max_images`` but is never fetched or
changed. Once ``max_images`` image parts are in the request, every older image, like a
corrupt one or one that cannot meet the limits, becomes one line of text saying why,
in this request only.

Preparing the same bytes with the same policy gives the same result, so results are
kept in a small bounded cache keyed by the bytes' digest: a history's images are
decoded once, not once per request.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import OrderedDict
from collections.abc import Sequence
from typing import ClassVar

import attrs

from taskctx.imageprep import (
    ImageInputPolicy,
    ImagePreparationError,
    PreparedImage,
    explain_rejection,
    prepare_image,
)
from taskctx_conversation.parts import ImagePart, Part, TextPart
from taskctx_conversation.request import FilterContext, ModelRequest, RequestChange
from taskctx_conversation.rewrite import PartLocation, iter_parts, replace_parts

__all__ = ["ImageInputFilter", "PreparedImageCache"]

_CACHE_ENTRIES = 256
_CACHE_BYTES = 128 * 1024 * 1024


@attrs.define(slots=True, eq=False)
class PreparedImageCache:
    """Prepared images by (digest of the bytes, policy), least recently used out first."""

    max_entries: int = _CACHE_ENTRIES
    max_bytes: int = _CACHE_BYTES
    _entries: OrderedDict[tuple[str, str], PreparedImage | ImagePreparationError] = attrs.field(
        factory=OrderedDict
    )
    _bytes: int = 0

    def get(
        self, data: bytes, media_type: str | None, policy: ImageInputPolicy
    ) -> PreparedImage | ImagePreparationError:
        """The preparation of ``data`` under ``policy``: cached, or made now and cached."""
        key = (hashlib.sha256(data).hexdigest(), policy.model_dump_json())
        found = self._entries.get(key)
        if found is not None:
            self._entries.move_to_end(key)
            return found
        try:
            made: PreparedImage | ImagePreparationError = prepare_image(
                data, policy, media_type=media_type
            )
        except ImagePreparationError as exc:
            made = exc
        self._keep(key, made)
        return made

    def _keep(self, key: tuple[str, str], made: PreparedImage | ImagePreparationError) -> None:
        size = _size(made)
        if size > self.max_bytes:
            return
        self._entries[key] = made
        self._bytes += size
        while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
            _, dropped = self._entries.popitem(last=False)
            self._bytes -= _size(dropped)


def _size(made: PreparedImage | ImagePreparationError) -> int:
    if isinstance(made, ImagePreparationError):
        return 256
    return sum(len(s.data) for s in made.segments) if made.changed else 256


_SHARED_CACHE = PreparedImageCache()


def _as_parts(original: ImagePart, prepared: PreparedImage) -> tuple[ImagePart, ...]:
    """The image parts an image becomes: itself when untouched, else its segments."""
    if not prepared.changed:
        return (original,)
    return tuple(
        ImagePart(
            data=segment.data,
            media_type=segment.media_type,
            label=original.label,
            segment=segment.index + 1 if segment.count > 1 else None,
            segments=segment.count if segment.count > 1 else None,
            original_width=prepared.width,
            original_height=prepared.height,
        )
        for segment in prepared.segments
    )


def _note(text: str) -> TextPart:
    return TextPart(text=text)


@attrs.frozen
class ImageInputFilter:
    """Prepares the request's images under ``policy``; keeps the latest ``max_images``."""

    policy: ImageInputPolicy = attrs.field(factory=ImageInputPolicy)
    cache: PreparedImageCache = attrs.field(default=_SHARED_CACHE, eq=False, repr=False)

    name: ClassVar[str] = "image_input"
    order: ClassVar[int] = 400
    automatic: ClassVar[bool] = True

    async def async_apply(self, request: ModelRequest, context: FilterContext) -> ModelRequest:
        """The request with every image prepared, explained away, or as it was."""
        found = [(loc, p) for loc, p in iter_parts(request.turns) if isinstance(p, ImagePart)]
        if not found:
            return request
        replacements: dict[PartLocation, Sequence[Part]] = {}
        changes: list[RequestChange] = []
        room = self.policy.max_images or None
        for number, (location, image) in reversed(list(enumerate(found, start=1))):
            label = image.describe() if image.label or image.url else f"image {number}"
            if not request.model.image_input:
                text = f"[{label} is not in this request: {request.model.name} takes no images]"
                self._replace(replacements, changes, location, (_note(text),), "replaced", text)
                continue
            if room is not None and room <= 0:
                text = (
                    f"[{label} is not in this request: only the latest "
                    f"{self.policy.max_images} images are kept]"
                )
                self._replace(replacements, changes, location, (_note(text),), "removed", text)
                continue
            parts, action, detail = await self._prepared(image, label, room)
            if room is not None:  # an image whose segments do not fit ends the kept run
                room = (
                    0
                    if action == "removed"
                    else room - sum(isinstance(p, ImagePart) for p in parts)
                )
            if action:
                self._replace(replacements, changes, location, parts, action, detail)
        return request.with_turns(replace_parts(request.turns, replacements), changes)

    async def _prepared(
        self, image: ImagePart, label: str, room: int | None
    ) -> tuple[tuple[Part, ...], str, str]:
        """What one kept image becomes, the action taken ("" for none) and its detail."""
        if image.data is None:  # a URL: counted, never fetched
            return (image,), "", ""
        made = await asyncio.to_thread(self.cache.get, image.data, image.media_type, self.policy)
        if isinstance(made, ImagePreparationError):
            text = explain_rejection(made, label)
            return (_note(text),), "replaced", text
        parts = _as_parts(image, made)
        if room is not None and len(parts) > room:
            text = (
                f"[{label} is not in this request: its {len(parts)} segments do not fit in "
                f"the latest {self.policy.max_images} images kept]"
            )
            return (_note(text),), "removed", text
        if not made.changed:
            return parts, "", ""
        if len(parts) > 1:
            return parts, "split", f"{label} ({made.width}x{made.height}) in {len(parts)} segments"
        return parts, "resized", f"{label} ({made.width}x{made.height}) prepared to the limits"

    def _replace(
        self,
        replacements: dict[PartLocation, Sequence[Part]],
        changes: list[RequestChange],
        location: PartLocation,
        parts: Sequence[Part],
        action: str,
        detail: str,
    ) -> None:
        replacements[location] = parts
        changes.append(
            RequestChange(filter=self.name, turn=location.turn, action=action, detail=detail)
        )
