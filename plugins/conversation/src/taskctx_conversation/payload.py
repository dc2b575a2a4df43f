"""Payload-too-large replay: one more try without the inline media.

A provider may refuse a request as too large (HTTP 413, or its own payload-limit
error) even after the filters kept it within their limits. :func:`send_with_payload_replay`
(and its async twin) sends the request; when the provider says it is too large and the
request holds inline images or video, it sends it once more with each of those replaced
by a short text (:func:`without_inline_media`). Media given by URL stay. A second
failure is raised, chained from the first; a request with no inline media is not
replayed (the same bytes would be refused again), and the original error is raised.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from typing import TypeVar

from taskctx_conversation.content import removal_note, replaced
from taskctx_conversation.errors import PayloadTooLargeError
from taskctx_conversation.parts import ImagePart, Part, VideoPart
from taskctx_conversation.request import ModelRequest
from taskctx_conversation.rewrite import PartLocation, iter_parts, replace_parts

__all__ = [
    "FILTER_NAME",
    "TOO_LARGE_PHRASES",
    "async_send_with_payload_replay",
    "is_payload_too_large",
    "send_with_payload_replay",
    "without_inline_media",
]

T = TypeVar("T")

FILTER_NAME = "payload_too_large"
"""The name the replay's changes are recorded under."""

TOO_LARGE_PHRASES = (
    "request_too_large",
    "request is too large",
    "request entity too large",
    "payload too large",
    "payload_too_large",
    "payload is too large",
    "content too large",
    "exceeds the maximum request size",
    "exceeds the maximum allowed number of bytes",
)
"""What providers' errors say (lower case) when a request is over their size limit.

Not ``request too large``: OpenAI says "Request too large for <model> ... on tokens per
min" of a rate limit, which no replay without media is the answer to."""

_STATUS = 413
_STATUS_ATTRIBUTES = ("status_code", "status", "code")
_MAX_CAUSES = 8
_DROPPED = "dropped because the request was too large for the provider"


def _chain(error: BaseException) -> Iterator[BaseException]:
    """``error`` and the errors it was raised from, a few deep, each once."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen and len(seen) < _MAX_CAUSES:
        seen.add(id(current))
        yield current
        current = current.__cause__


def _attribute(value: object, name: str) -> object:
    """``value.name``, or None when it has none (or reading it fails)."""
    try:
        return getattr(value, name, None)
    except Exception:  # a property that fails says nothing
        return None


def _says_413(value: object) -> bool:
    """Whether ``value`` carries an HTTP status of 413 (``status_code``, ``status`` or
    ``code``, as an int)."""
    for attribute in _STATUS_ATTRIBUTES:
        status = _attribute(value, attribute)
        if isinstance(status, int) and not isinstance(status, bool) and status == _STATUS:
            return True
    return False


def _message(error: BaseException) -> str:
    """The error's message in lower case ("" when it cannot be had)."""
    try:
        return str(error).lower()
    except Exception:  # an error whose __str__ fails says nothing
        return ""


def is_payload_too_large(error: BaseException) -> bool:
    """Whether ``error`` (or an error it was raised from) is a provider's refusal of a
    request as too large: a :class:`PayloadTooLargeError`, a status of 413 on the error
    or its ``response``, or a message saying so (:data:`TOO_LARGE_PHRASES`)."""
    for candidate in _chain(error):
        if isinstance(candidate, PayloadTooLargeError):
            return True
        if _says_413(candidate) or _says_413(_attribute(candidate, "response")):
            return True
        message = _message(candidate)
        if any(phrase in message for phrase in TOO_LARGE_PHRASES):
            return True
    return False


def _inline_media(request: ModelRequest) -> list[tuple[PartLocation, ImagePart | VideoPart]]:
    """The inline images and videos of the request (tool results' images included)."""
    return [
        (location, part)
        for location, part in iter_parts(request.turns)
        if isinstance(part, (ImagePart, VideoPart)) and part.data is not None
    ]


def without_inline_media(request: ModelRequest) -> ModelRequest:
    """The request with every inline image and video replaced by a short text saying it
    was dropped as too large, URL media kept, changes recorded under
    :data:`FILTER_NAME` and ``attempt`` one higher."""
    replacements: dict[PartLocation, tuple[Part, ...]] = {}
    changes = []
    for location, part in _inline_media(request):
        replacements[location] = (removal_note(part, _DROPPED),)
        changes.append(replaced(FILTER_NAME, location, part, _DROPPED))
    stripped = request.with_turns(replace_parts(request.turns, replacements), changes)
    return stripped.model_copy(update={"attempt": request.attempt + 1})


def _replay_of(error: Exception, request: ModelRequest) -> ModelRequest | None:
    """The request to replay after ``error``, or None when there is nothing to replay."""
    if not is_payload_too_large(error) or not _inline_media(request):
        return None
    return without_inline_media(request)


def send_with_payload_replay(send: Callable[[ModelRequest], T], request: ModelRequest) -> T:
    """``send(request)``; if it is refused as too large, ``send`` once more without the
    inline media. The original error is raised when there is no inline media to drop;
    a second failure is raised chained from the first."""
    try:
        return send(request)
    except Exception as first:
        replay = _replay_of(first, request)
        if replay is None:
            raise
        try:
            return send(replay)
        except Exception as second:
            raise second from first


async def async_send_with_payload_replay(
    send: Callable[[ModelRequest], Awaitable[T]], request: ModelRequest
) -> T:
    """Async form of :func:`send_with_payload_replay`."""
    try:
        return await send(request)
    except Exception as first:
        replay = _replay_of(first, request)
        if replay is None:
            raise
        try:
            return await send(replay)
        except Exception as second:
            raise second from first
