"""Video input: what of a request's video the model can take, within size limits.

:class:`VideoInputFilter` (automatic) applies seed 003's rules to every video part of
a request, the latest first, and replaces what cannot go by a short text saying why:

- a model with no video input gets no video at all, and nothing is fetched for it;
- an inline video must be of a type the model takes, at most ``max_inline_bytes``, and
  fit what is left of ``max_total_inline_bytes`` (the latest videos that fit are kept);
- a YouTube URL is passed as it is only to a model that takes YouTube URLs, and is
  never downloaded;
- another video URL is passed as it is to a model that takes video URLs; otherwise it
  is downloaded with :func:`~taskctx_conversation.download.fetch_bounded` (every hop
  under the run's ``allowed_hosts``, at most ``max_download_bytes``, counting toward
  the total) and inlined, or replaced by a text naming why the download was refused.

The stored history never changes; every change is recorded on the request.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar
from urllib.parse import parse_qs, urlsplit

import attrs

from taskctx.errors import PolicyError
from taskctx.media import OCTET_STREAM
from taskctx.policy import RunConfiguration
from taskctx_conversation.content import format_size, media_name, media_type_of, removal_note
from taskctx_conversation.download import DownloadError, DownloadFailure, fetch_bounded
from taskctx_conversation.parts import Part, VideoPart
from taskctx_conversation.request import (
    FilterContext,
    ModelCharacteristics,
    ModelRequest,
    RequestChange,
)
from taskctx_conversation.rewrite import PartLocation, iter_parts, replace_parts

__all__ = ["VideoInputFilter", "is_youtube_url", "on_youtube"]

_MIB = 1024 * 1024
_YOUTUBE_HOSTS = frozenset(
    {
        "youtube.com",
        "www.youtube.com",
        "m.youtube.com",
        "music.youtube.com",
        "youtu.be",
        "youtube-nocookie.com",
        "www.youtube-nocookie.com",
    }
)
"""Hosts whose URLs are YouTube's: passed only where the model takes them, never fetched."""
_YOUTUBE_PATHS = ("/shorts/", "/embed/", "/live/")
"""Path prefixes of a YouTube video besides ``/watch?v=`` (and ``youtu.be/<id>``)."""


def _host(url: str) -> str | None:
    """The lower-case host of an http(s) URL, or None."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not host:
        return None
    return host.rstrip(".")


def on_youtube(url: str) -> bool:
    """Whether ``url`` is on a YouTube host (such URLs are never downloaded)."""
    return _host(url) in _YOUTUBE_HOSTS


def is_youtube_url(url: str) -> bool:
    """Whether ``url`` is a YouTube video: ``youtube.com/watch?v=``, ``/shorts/``,
    ``/embed/``, ``/live/``, on ``www.``, ``m.`` or ``music.``, or ``youtu.be/<id>``."""
    host = _host(url)
    if host not in _YOUTUBE_HOSTS:
        return False
    parts = urlsplit(url)
    path = parts.path
    if host == "youtu.be":
        return len(path.strip("/")) > 0
    if path.rstrip("/") == "/watch":
        return bool(parse_qs(parts.query).get("v"))
    return any(path.startswith(p) and len(path) > len(p) for p in _YOUTUBE_PATHS)


def _check_size(instance: object, attribute: attrs.Attribute[int], value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{attribute.name} must be an int, not {value!r}")
    if value < 1:
        raise ValueError(f"{attribute.name} must be at least 1 byte, got {value}")


@attrs.frozen
class _Outcome:
    """What became of one video: None to keep it, else its replacement and why."""

    part: Part | None = None
    detail: str = ""
    inline_bytes: int = 0


_KEEP = _Outcome()


def _types(model: ModelCharacteristics) -> str:
    """The video media types the model takes, in words."""
    return ", ".join(sorted(model.video_media_types)) or "no video media type"


@attrs.frozen
class VideoInputFilter:
    """Seed 003's video rules for one request (see the module's description).

    Sizes are bytes: ``max_inline_bytes`` for each inline video,
    ``max_total_inline_bytes`` for all of them (downloads included),
    ``max_download_bytes`` for each download; ``download_urls`` False never fetches.
    """

    name: ClassVar[str] = "video_input"
    order: ClassVar[int] = 300
    automatic: ClassVar[bool] = True

    max_inline_bytes: int = attrs.field(default=10 * _MIB, validator=_check_size)
    max_total_inline_bytes: int = attrs.field(default=10 * _MIB, validator=_check_size)
    download_urls: bool = True
    max_download_bytes: int = attrs.field(default=10 * _MIB, validator=_check_size)

    async def async_apply(self, request: ModelRequest, context: FilterContext) -> ModelRequest:
        """The request with every video the model cannot take replaced, URLs it cannot
        take downloaded where allowed, and each change recorded."""
        videos = [(loc, p) for loc, p in iter_parts(request.turns) if isinstance(p, VideoPart)]
        if not videos:
            return request
        outcomes: dict[PartLocation, _Outcome] = {}
        remaining = self.max_total_inline_bytes
        for location, part in reversed(videos):
            outcome = await self._decide(part, request.model, context.configuration, remaining)
            remaining -= outcome.inline_bytes
            if outcome.part is not None:
                outcomes[location] = outcome
        if not outcomes:
            return request
        replacements: dict[PartLocation, Sequence[Part]] = {}
        changes: list[RequestChange] = []
        for location, _ in videos:
            if location in outcomes:
                outcome = outcomes[location]
                assert outcome.part is not None
                replacements[location] = (outcome.part,)
                changes.append(
                    RequestChange(
                        filter=self.name,
                        turn=location.turn,
                        action="replaced",
                        detail=outcome.detail,
                    )
                )
        return request.with_turns(replace_parts(request.turns, replacements), changes)

    async def _decide(
        self,
        part: VideoPart,
        model: ModelCharacteristics,
        configuration: RunConfiguration,
        remaining: int,
    ) -> _Outcome:
        """What becomes of one video, given what is left of the total inline budget."""
        if not model.video_input:
            return _replaced(part, f"the model {model.name} takes no video input")
        if part.data is not None:
            return self._inline(part, model, remaining)
        assert part.url is not None  # a media part holds data or a url
        if on_youtube(part.url):
            if not model.youtube_urls:
                return _replaced(part, f"the model {model.name} takes no YouTube URLs")
            if not is_youtube_url(part.url):
                return _replaced(part, "it is not the URL of a YouTube video")
            return _KEEP
        if model.video_urls:
            return _KEEP
        if not self.download_urls:
            return _replaced(
                part, f"the model {model.name} takes no video URLs and downloading is off"
            )
        return await self._download(part, part.url, model, configuration, remaining)

    def _inline(self, part: VideoPart, model: ModelCharacteristics, remaining: int) -> _Outcome:
        """An inline video: kept when its type is taken and it fits both limits."""
        assert part.data is not None
        media_type = media_type_of(part)
        if media_type not in model.video_media_types:
            return _replaced(
                part,
                f"the model takes {_types(model)}, not {media_type or 'an unknown media type'}",
            )
        size = len(part.data)
        if size > self.max_inline_bytes:
            return _replaced(
                part, f"over the {format_size(self.max_inline_bytes)} limit for an inline video"
            )
        if size > remaining:
            return _replaced(part, self._over_total(remaining))
        return _Outcome(inline_bytes=size)

    def _over_total(self, remaining: int) -> str:
        """Why a video that would pass the total inline budget is left out."""
        return (
            f"over the {format_size(self.max_total_inline_bytes)} total for inline video in "
            f"one request ({format_size(max(remaining, 0))} left after later videos)"
        )

    async def _download(
        self,
        part: VideoPart,
        url: str,
        model: ModelCharacteristics,
        configuration: RunConfiguration,
        remaining: int,
    ) -> _Outcome:
        """A video URL the model cannot take: downloaded within the limits and inlined."""
        if part.media_type and media_type_of(part) not in model.video_media_types:
            return _replaced(part, f"the model takes {_types(model)}, not {part.media_type}")
        limit = min(self.max_download_bytes, self.max_inline_bytes)
        if remaining < 1:
            return _replaced(part, self._over_total(remaining))
        try:
            got = await fetch_bounded(
                url,
                configuration,
                max_bytes=min(limit, remaining),
                accept=sorted(model.video_media_types),
            )
        except PolicyError as exc:
            return _replaced(part, f"its download was refused: {exc}")
        except DownloadError as exc:
            if remaining < limit and exc.reason is DownloadFailure.TOO_LARGE:
                return _replaced(part, f"{self._over_total(remaining)}: {exc}")
            return _replaced(part, f"its download failed: {exc}")
        media_type = got.media_type
        if media_type in (None, OCTET_STREAM):
            media_type = media_type_of(part)
        if media_type not in model.video_media_types:
            return _replaced(
                part, f"the download is {media_type or 'of no media type'}, not {_types(model)}"
            )
        if not got.data:
            return _replaced(part, "the download is empty")
        inlined = VideoPart(data=got.data, media_type=media_type, label=url)
        return _Outcome(
            part=inlined,
            detail=f"{media_name(part)}: downloaded ({format_size(len(got.data))}) and inlined",
            inline_bytes=len(got.data),
        )


def _replaced(part: VideoPart, reason: str) -> _Outcome:
    """The outcome of a video left out of the request for ``reason``."""
    return _Outcome(part=removal_note(part, reason), detail=f"{media_name(part)}: {reason}")
