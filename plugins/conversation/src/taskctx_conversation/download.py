"""A bounded HTTP(S) reader for filters that must fetch what a URL points at.

:func:`fetch_bounded` uses only the standard library (``http.client``), in a worker
thread. Every URL it connects to, the first and each redirect hop, passes the run's
``configuration.authorize_url`` before the connection is made, so a redirect cannot
lead it to a host outside ``allowed_hosts``. It speaks only ``http`` and ``https``,
follows at most ``max_redirects`` redirects, reads at most ``max_bytes`` (one more byte
tells it the body is over) and gives up after ``timeout`` seconds in all. Failures are
:class:`DownloadError` (or :class:`~taskctx.errors.PolicyError` for a refused host),
naming the URL.
"""

from __future__ import annotations

import asyncio
import http.client
import socket
import ssl
import time
from collections.abc import Sequence
from urllib.parse import SplitResult, urljoin, urlsplit

import attrs

from taskctx.codes import StrChoice
from taskctx.errors import PolicyError
from taskctx.media import normalize_media_type
from taskctx.policy import RunConfiguration
from taskctx_conversation.content import format_size
from taskctx_conversation.errors import ConversationError

__all__ = ["DownloadError", "DownloadFailure", "Downloaded", "fetch_bounded"]

_SCHEMES = frozenset({"http", "https"})
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_CHUNK = 64 * 1024
_MAX_SHOWN_URL = 200
_USER_AGENT = "taskctx-conversation"


class DownloadFailure(StrChoice):
    """Why a bounded download failed (the message says it for a person)."""

    INVALID_URL = "invalid_url"
    SCHEME = "scheme"
    STATUS = "status"
    TOO_LARGE = "too_large"
    REDIRECTS = "redirects"
    TIMEOUT = "timeout"
    CONNECTION = "connection"


class DownloadError(ConversationError):
    """A bounded download failed: a refused scheme, an HTTP error, a body over its
    limit, too many redirects, a connection error or the time running out; ``reason``
    says which."""

    def __init__(self, message: str, reason: DownloadFailure) -> None:
        super().__init__(message)
        self.reason = reason


@attrs.frozen
class Downloaded:
    """What a bounded download read: the URL asked for, the URL that answered (after
    redirects), the response's media type (None when it gave none) and the body."""

    url: str
    final_url: str
    media_type: str | None
    data: bytes = attrs.field(repr=lambda data: f"<{len(data)} bytes>")


@attrs.frozen
class _Exchange:
    """One request on the wire: its connection, the response and the socket under both
    (kept: the connection lets go of it once the response carries a close)."""

    connection: http.client.HTTPConnection
    response: http.client.HTTPResponse
    sock: socket.socket | None

    def close(self) -> None:
        """Close the response and the connection."""
        self.response.close()
        self.connection.close()


@attrs.frozen
class _Limits:
    """The bounds of one download."""

    max_bytes: int
    timeout: float
    max_redirects: int
    accept: tuple[str, ...]


def _shown(url: str) -> str:
    """A URL for a message, at most a couple of hundred characters."""
    return url if len(url) <= _MAX_SHOWN_URL else url[: _MAX_SHOWN_URL - 3] + "..."


def _limits(max_bytes: int, timeout: float, max_redirects: int, accept: Sequence[str]) -> _Limits:
    """The bounds, checked: positive sizes and times, header-safe media types."""
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
        raise ValueError(f"max_bytes must be a positive int, got {max_bytes!r}")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    if isinstance(max_redirects, bool) or not isinstance(max_redirects, int) or max_redirects < 0:
        raise ValueError(f"max_redirects must be an int of 0 or more, got {max_redirects!r}")
    if isinstance(accept, (str, bytes)):
        raise TypeError("accept takes a sequence of media types, not one string")
    for entry in accept:
        if not isinstance(entry, str) or not entry or not entry.isprintable() or "," in entry:
            raise ValueError(f"accept entry {entry!r} is not a media type")
    return _Limits(max_bytes, float(timeout), max_redirects, tuple(accept))


async def fetch_bounded(
    url: str,
    configuration: RunConfiguration,
    *,
    max_bytes: int,
    timeout: float = 30.0,
    max_redirects: int = 5,
    accept: Sequence[str] = (),
) -> Downloaded:
    """GET ``url`` under ``configuration``'s host policy, reading at most ``max_bytes``.

    ``accept`` becomes the ``Accept`` header (the response's type is reported, not
    checked). Raises PolicyError when the URL or a redirect hop names a host outside
    ``allowed_hosts`` (before connecting to it), DownloadError for everything else that
    goes wrong, ValueError for bad bounds. The work runs in a worker thread, which a
    cancelled call leaves to end by itself, within ``timeout``.
    """
    limits = _limits(max_bytes, timeout, max_redirects, accept)
    return await asyncio.to_thread(_fetch, url, configuration, limits)


def _fetch(url: str, configuration: RunConfiguration, limits: _Limits) -> Downloaded:
    """The download itself, in a worker thread: hop by hop, each one authorised first."""
    deadline = time.monotonic() + limits.timeout
    current, previous = url, None
    seen = {url}
    for _ in range(limits.max_redirects + 1):
        parts = _authorized(current, previous, configuration)
        exchange = _request(current, parts, limits, deadline)
        try:
            if exchange.response.status not in _REDIRECTS:
                return _answer(url, current, exchange, limits, deadline)
            location = exchange.response.getheader("Location")
            if not location:
                raise DownloadError(
                    f"{_shown(current)} redirects without a Location", DownloadFailure.STATUS
                )
            current, previous = urljoin(current, location.strip()), current
        finally:
            exchange.close()
        if current in seen:
            raise DownloadError(
                f"redirect loop: {_shown(previous)} leads back to {_shown(current)}",
                DownloadFailure.REDIRECTS,
            )
        seen.add(current)
    raise DownloadError(
        f"{_shown(url)}: more than {limits.max_redirects} redirects "
        f"(the last to {_shown(current)})",
        DownloadFailure.REDIRECTS,
    )


def _authorized(url: str, previous: str | None, configuration: RunConfiguration) -> SplitResult:
    """``url``'s parts once its scheme and host may be fetched; raises otherwise."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - validates the port
    except ValueError as exc:
        raise DownloadError(
            f"{_shown(url)} is not a valid URL: {exc}", DownloadFailure.INVALID_URL
        ) from None
    hop = f" (redirected from {_shown(previous)})" if previous is not None else ""
    if parts.scheme.lower() not in _SCHEMES:
        raise DownloadError(
            f"{_shown(url)}{hop}: only http and https URLs are fetched", DownloadFailure.SCHEME
        )
    if not parts.hostname:
        raise DownloadError(f"{_shown(url)}{hop} names no host", DownloadFailure.INVALID_URL)
    try:
        configuration.authorize_url(url)
    except PolicyError as exc:
        if previous is None:
            raise
        raise PolicyError(f"redirect from {_shown(previous)} refused: {exc}") from exc
    return parts


def _timed_out(url: str, limits: _Limits) -> DownloadError:
    """The error of a download that ran out of time."""
    return DownloadError(
        f"{_shown(url)}: timed out after {limits.timeout:g} s", DownloadFailure.TIMEOUT
    )


def _remaining(url: str, limits: _Limits, deadline: float) -> float:
    """Seconds left before the deadline; DownloadError once there are none."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise _timed_out(url, limits)
    return left


def _request(url: str, parts: SplitResult, limits: _Limits, deadline: float) -> _Exchange:
    """Connect to ``url``'s host, send the GET and read the response's head."""
    https = parts.scheme.lower() == "https"
    host = parts.hostname
    assert host is not None  # checked by _authorized
    port = parts.port or (443 if https else 80)
    timeout = _remaining(url, limits, deadline)
    connection: http.client.HTTPConnection
    if https:
        connection = http.client.HTTPSConnection(
            host, port, timeout=timeout, context=ssl.create_default_context()
        )
    else:
        connection = http.client.HTTPConnection(host, port, timeout=timeout)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    headers = {
        "Accept": ", ".join(limits.accept) or "*/*",
        "Accept-Encoding": "identity",
        "Connection": "close",
        "User-Agent": _USER_AGENT,
    }
    try:
        connection.request("GET", target, headers=headers)
        sock = connection.sock
        return _Exchange(connection, connection.getresponse(), sock)
    except BaseException as exc:
        connection.close()
        raise _failure(url, limits, exc) from exc


def _failure(url: str, limits: _Limits, exc: BaseException) -> BaseException:
    """The DownloadError for an error of the connection, or ``exc`` itself if it is
    not one (a bug, a cancellation)."""
    if isinstance(exc, (TimeoutError, socket.timeout)):
        return _timed_out(url, limits)
    if isinstance(exc, (OSError, http.client.HTTPException, ValueError)):
        return DownloadError(
            f"{_shown(url)}: {type(exc).__name__}: {exc}", DownloadFailure.CONNECTION
        )
    return exc


def _answer(
    url: str,
    current: str,
    exchange: _Exchange,
    limits: _Limits,
    deadline: float,
) -> Downloaded:
    """The Downloaded of a final (non-redirect) response; DownloadError if it failed."""
    response = exchange.response
    if not 200 <= response.status < 300:
        raise DownloadError(
            f"{_shown(current)}: HTTP {response.status} {response.reason}",
            DownloadFailure.STATUS,
        )
    declared = _declared_length(response)
    if declared is not None and declared > limits.max_bytes:
        raise DownloadError(
            f"{_shown(current)}: its Content-Length {declared} is over {_limit(limits)}",
            DownloadFailure.TOO_LARGE,
        )
    data = _body(current, exchange, limits, deadline)
    content_type = response.getheader("Content-Type")
    media_type = normalize_media_type(content_type) if content_type else None
    return Downloaded(url=url, final_url=current, media_type=media_type or None, data=data)


def _declared_length(response: http.client.HTTPResponse) -> int | None:
    """The Content-Length the response declares, when it declares a plain number."""
    value = (response.getheader("Content-Length") or "").strip()
    return int(value) if value.isascii() and value.isdigit() else None


def _limit(limits: _Limits) -> str:
    """The size limit in words."""
    return f"the limit of {limits.max_bytes} bytes ({format_size(limits.max_bytes)})"


def _body(url: str, exchange: _Exchange, limits: _Limits, deadline: float) -> bytes:
    """Read the body, at most ``max_bytes`` (+1 to detect more), before the deadline."""
    chunks: list[bytes] = []
    total = 0
    while True:
        left = _remaining(url, limits, deadline)
        if exchange.sock is not None:
            exchange.sock.settimeout(left)
        try:
            chunk = exchange.response.read1(min(_CHUNK, limits.max_bytes + 1 - total))
        except BaseException as exc:
            raise _failure(url, limits, exc) from exc
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        if total > limits.max_bytes:
            raise DownloadError(
                f"{_shown(url)}: the body is over {_limit(limits)}", DownloadFailure.TOO_LARGE
            )
        chunks.append(chunk)
