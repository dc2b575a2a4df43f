"""The content filter: a provider's multimodal limits, applied to one request.

A provider takes some media types and not others, and at most so many media items in a
request. :class:`ContentFilter` (optional: it runs only where a pipeline composes it)
replaces every media part whose type is not accepted, then every media item beyond
``max_media_items`` (the latest are kept), by a short text saying what was left out and
why. Media parts are image, document and video parts and tool results' top-level
images; the stored history never changes.

The helpers here are shared by the other media filters: :func:`media_type_of` (the
declared type, else a guess from a URL's suffix or sniffed from inline bytes) and
:func:`removal_note` (the bounded text a removed part becomes).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import ClassVar
from urllib.parse import unquote, urlsplit

import attrs

from taskctx.media import OCTET_STREAM, classify_bytes, guess_media_type, normalize_media_type
from taskctx_conversation.parts import DocumentPart, ImagePart, MediaPart, Part, TextPart, VideoPart
from taskctx_conversation.request import FilterContext, ModelRequest, RequestChange
from taskctx_conversation.rewrite import PartLocation, iter_parts, replace_parts

__all__ = [
    "ContentFilter",
    "accepts_media_type",
    "format_size",
    "media_name",
    "media_type_of",
    "removal_note",
    "replaced",
]

_MEDIA_PARTS = (ImagePart, DocumentPart, VideoPart)
_TOKEN = r"[a-z0-9][a-z0-9!#$&^_.+-]*"
_MEDIA_RANGE = re.compile(rf"(?:\*/\*|{_TOKEN}/(?:\*|{_TOKEN}))")
_MAX_NAME_CHARS = 80
_MAX_NOTE_CHARS = 400
_MAX_LISTED_TYPES = 8
_UNITS = ((1024 * 1024 * 1024, "GiB"), (1024 * 1024, "MiB"), (1024, "KiB"))


def format_size(n_bytes: int) -> str:
    """A byte count as a person reads it: ``14.2 MiB``, ``10 MiB``, ``300 KiB``, ``90 bytes``."""
    for size, unit in _UNITS:
        if n_bytes >= size:
            whole, rest = divmod(n_bytes, size)
            return f"{whole} {unit}" if not rest else f"{n_bytes / size:.1f} {unit}"
    return f"{n_bytes} bytes"


def _shortened(text: str, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters (an ellipsis marks a cut)."""
    flat = "".join(c if c.isprintable() else " " for c in text).replace("]", ")")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def media_type_of(part: MediaPart) -> str | None:
    """The part's media type: declared, else guessed from a URL's suffix, else sniffed
    from inline bytes; None when nothing says."""
    if part.media_type:
        return normalize_media_type(part.media_type)
    if part.url is not None:
        try:
            path = unquote(urlsplit(part.url).path)
        except ValueError:
            return None
        return guess_media_type(path) if path else None
    assert part.data is not None  # a media part holds data or a url
    sniffed = classify_bytes(None, part.data).media_type
    return None if sniffed == OCTET_STREAM else sniffed


def media_name(part: MediaPart) -> str:
    """A short name for a media part in explanations: kind, label or URL, and size."""
    extras: list[str] = []
    if part.label:
        base = f"{part.type} {_shortened(part.label, _MAX_NAME_CHARS)}"
    elif part.url is not None:
        base = f"{part.type} {_shortened(part.url, _MAX_NAME_CHARS)}"
    else:
        base = f"an inline {part.type}"
        if part.media_type:
            extras.append(_shortened(part.media_type, _MAX_NAME_CHARS))
    if part.data is not None:
        extras.append(format_size(len(part.data)))
    return f"{base} ({', '.join(extras)})" if extras else base


def removal_note(part: MediaPart, reason: str) -> TextPart:
    """The text a removed media part becomes: what it was and why it is not in the
    request, on one line of bounded length (never the bytes)."""
    head = f"[{media_name(part)} is not in this request: "
    room = max(_MAX_NOTE_CHARS - len(head) - 1, 40)
    return TextPart(text=f"{head}{_shortened(reason, room)}]")


def accepts_media_type(accepted: frozenset[str] | None, media_type: str | None) -> bool:
    """Whether ``media_type`` matches ``accepted`` (exact types, ``image/*``, ``*/*``);
    None accepts everything, and an unknown type matches nothing else."""
    if accepted is None:
        return True
    if media_type is None:
        return False
    major = media_type.split("/", 1)[0]
    return media_type in accepted or f"{major}/*" in accepted or "*/*" in accepted


def _accepted_media(value: frozenset[str] | Iterable[str] | None) -> frozenset[str] | None:
    """The accepted media ranges, normalised; ValueError naming an entry that is not one."""
    if value is None:
        return None
    if isinstance(value, (str, bytes)):
        raise TypeError("accepted_media takes an iterable of media types, not one string")
    out: set[str] = set()
    for entry in value:
        if not isinstance(entry, str):
            raise TypeError(f"accepted_media entry {entry!r} is not a string")
        normal = normalize_media_type(entry)
        if not _MEDIA_RANGE.fullmatch(normal):
            raise ValueError(
                f"accepted_media entry {entry!r} is not a media type such as "
                "'image/png' or 'image/*'"
            )
        out.add(normal)
    return frozenset(out)


def _check_max_items(
    instance: object, attribute: attrs.Attribute[int | None], value: object
) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"max_media_items must be an int or None, not {value!r}")
    if value < 0:
        raise ValueError(f"max_media_items must be 0 or more, got {value}")


def _listed(types: frozenset[str]) -> str:
    """The accepted types in words, at most a few of them."""
    if not types:
        return "no media type is accepted"
    shown = sorted(types)
    more = len(shown) - _MAX_LISTED_TYPES
    words = ", ".join(shown[:_MAX_LISTED_TYPES]) + (f" and {more} more" if more > 0 else "")
    return f"accepted: {words}"


Located = tuple[PartLocation, MediaPart]
"""A media part and where it is in the request."""


def _media(request: ModelRequest) -> list[Located]:
    """Every media item of the request, in order (tool results' images included)."""
    return [
        (loc, part) for loc, part in iter_parts(request.turns) if isinstance(part, _MEDIA_PARTS)
    ]


@attrs.frozen
class ContentFilter:
    """A provider's multimodal limits: the media types it takes and how many items.

    ``accepted_media`` holds media types and ranges (``image/png``, ``image/*``); None
    accepts every type. ``max_media_items`` (None: no limit) keeps the latest items.
    """

    name: ClassVar[str] = "content"
    order: ClassVar[int] = 200
    automatic: ClassVar[bool] = False

    accepted_media: frozenset[str] | None = attrs.field(default=None, converter=_accepted_media)
    max_media_items: int | None = attrs.field(default=None, validator=_check_max_items)

    async def async_apply(self, request: ModelRequest, context: FilterContext) -> ModelRequest:
        """The request with media it cannot take replaced by text saying why."""
        return self.apply(request)

    def apply(self, request: ModelRequest) -> ModelRequest:
        """Sync form of :meth:`async_apply` (the filter does no I/O)."""
        media = _media(request)
        reasons: dict[PartLocation, str] = {}
        kept: list[Located] = []
        for location, part in media:
            media_type = media_type_of(part)
            if accepts_media_type(self.accepted_media, media_type):
                kept.append((location, part))
            else:
                assert self.accepted_media is not None  # None accepts every type
                reasons[location] = (
                    f"its media type {media_type or '(unknown)'} is not accepted "
                    f"({_listed(self.accepted_media)})"
                )
        limit = self.max_media_items
        if limit is not None and len(kept) > limit:
            for location, _ in kept[: len(kept) - limit]:
                reasons[location] = (
                    f"over the limit of {limit} media items per request (the latest are kept)"
                )
        if not reasons:
            return request
        replacements: dict[PartLocation, Sequence[Part]] = {}
        changes: list[RequestChange] = []
        for location, part in media:
            if location in reasons:
                replacements[location] = (removal_note(part, reasons[location]),)
                changes.append(replaced(self.name, location, part, reasons[location]))
        return request.with_turns(replace_parts(request.turns, replacements), changes)


def replaced(
    filter_name: str, location: PartLocation, part: MediaPart, reason: str
) -> RequestChange:
    """The record of one media part replaced by its removal note."""
    return RequestChange(
        filter=filter_name,
        turn=location.turn,
        action="replaced",
        detail=f"{media_name(part)}: {reason}",
    )
