"""The bounded reader: host policy on every hop, size and redirect limits, timeouts.

Every test talks to a real HTTP server on 127.0.0.1 (``http.server`` in a thread);
:class:`LocalServer` is shared with the video and payload tests.
"""

from __future__ import annotations

import asyncio
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from taskctx_conversation.download import (
    Downloaded,
    DownloadError,
    DownloadFailure,
    fetch_bounded,
)

from taskctx.errors import PolicyError
from taskctx.policy import RunConfiguration
from tests.plugins.conversation.localserver import CLIP, LocalServer, body, chunked, redirect, send


def fetch(url: str, configuration: RunConfiguration | None = None, **bounds: Any) -> Downloaded:
    """Run :func:`fetch_bounded` to completion (``max_bytes`` 1000 unless given)."""
    bounds.setdefault("max_bytes", 1000)
    chosen = configuration if configuration is not None else RunConfiguration()
    return asyncio.run(fetch_bounded(url, chosen, **bounds))


LOCAL = RunConfiguration(allowed_hosts=["127.0.0.1"])


def test_fetch_from_an_allowed_host() -> None:
    """A URL on an allowed host comes back whole, with its media type and final URL."""
    with LocalServer({"/clip.mp4": body(CLIP, "video/mp4; charset=binary")}) as server:
        got = fetch(server.url("/clip.mp4"), LOCAL)
    assert got.data == CLIP
    assert got.media_type == "video/mp4"
    assert got.url == got.final_url == server.url("/clip.mp4")
    assert "bytes>" in repr(got)
    assert str(len(CLIP)) in repr(got)


def test_fetch_when_every_host_is_allowed() -> None:
    """With no allowed_hosts rule every host may be fetched; a query string is kept."""
    seen: list[str] = []

    def route(handler: BaseHTTPRequestHandler) -> None:
        seen.append(handler.path)
        send(handler, b"ok", "text/plain")

    with LocalServer({"/q": route}) as server:
        got = fetch(server.url("/q?a=1&b=2"))
    assert got.data == b"ok"
    assert seen == ["/q?a=1&b=2"]


def test_disallowed_first_host_is_refused_before_connecting() -> None:
    """A first URL outside allowed_hosts raises PolicyError naming the host; no request."""
    with LocalServer({"/clip.mp4": body(CLIP)}) as server:
        with pytest.raises(PolicyError, match=r"host '127\.0\.0\.1'.*not in allowed_hosts"):
            fetch(server.url("/clip.mp4"), RunConfiguration(allowed_hosts=["example.org"]))
        assert server.hits == []


def test_redirect_to_a_disallowed_host_is_refused_before_connecting() -> None:
    """A redirect from an allowed host to another one is refused before that host is
    contacted, with a PolicyError naming it."""
    with LocalServer() as first, LocalServer({"/clip.mp4": body(CLIP)}) as second:
        target = second.url("/clip.mp4", host="localhost")
        first.routes["/go"] = redirect(target)
        with pytest.raises(PolicyError, match=r"redirect from .*/go refused: host 'localhost'"):
            fetch(first.url("/go"), LOCAL)
        assert first.hits == ["/go"]
        assert second.hits == []


def test_redirect_to_an_allowed_second_host_is_followed() -> None:
    """A redirect whose hop is allowed too is followed; final_url is the hop's URL."""
    both = RunConfiguration(allowed_hosts=["127.0.0.1", "localhost"])
    with LocalServer() as first, LocalServer({"/clip.mp4": body(CLIP)}) as second:
        target = second.url("/clip.mp4", host="localhost")
        first.routes["/go"] = redirect(target, status=301)
        got = fetch(first.url("/go"), both)
    assert got.data == CLIP
    assert got.url == first.url("/go")
    assert got.final_url == target


def test_relative_redirect_is_resolved_against_the_hop() -> None:
    """A relative Location is joined to the URL that sent it."""
    routes = {"/a/go": redirect("../b/clip.mp4", status=307), "/b/clip.mp4": body(CLIP)}
    with LocalServer(routes) as server:
        got = fetch(server.url("/a/go"), LOCAL)
        assert server.hits == ["/a/go", "/b/clip.mp4"]
    assert got.final_url == server.url("/b/clip.mp4")


def test_content_length_over_the_limit_is_refused() -> None:
    """A declared Content-Length over max_bytes fails naming the URL and the limit."""
    with LocalServer({"/big.mp4": body(b"x" * 2000)}) as server:
        url = server.url("/big.mp4")
        with pytest.raises(
            DownloadError, match=r"Content-Length 2000 is over the limit of 1000"
        ) as info:
            fetch(url, LOCAL, max_bytes=1000)
    assert url in str(info.value)
    assert info.value.reason is DownloadFailure.TOO_LARGE


def test_body_at_the_limit_is_read() -> None:
    """A body of exactly max_bytes is not over it."""
    with LocalServer({"/exact": chunked(b"y" * 1000, chunk=300)}) as server:
        assert fetch(server.url("/exact"), LOCAL, max_bytes=1000).data == b"y" * 1000


def test_chunked_body_over_the_limit_is_refused() -> None:
    """With no Content-Length the reader stops one byte past the limit and fails."""
    with LocalServer({"/stream": chunked(b"z" * 50_000)}) as server:
        url = server.url("/stream")
        with pytest.raises(
            DownloadError, match=r"the body is over the limit of 4096 bytes \(4 KiB\)"
        ) as info:
            fetch(url, LOCAL, max_bytes=4096)
    assert url in str(info.value)
    assert info.value.reason is DownloadFailure.TOO_LARGE


def test_redirect_loop_is_refused() -> None:
    """A redirect back to a URL already visited fails as a loop."""
    routes = {"/a": redirect("/b"), "/b": redirect("/a")}
    with LocalServer(routes) as server:
        with pytest.raises(DownloadError, match=r"redirect loop: .*/b leads back to .*/a") as info:
            fetch(server.url("/a"), LOCAL)
        assert info.value.reason is DownloadFailure.REDIRECTS
        assert server.hits == ["/a", "/b"]


def test_too_many_redirects_are_refused() -> None:
    """More redirects than max_redirects fail, after exactly max_redirects + 1 requests."""
    routes = {f"/r{i}": redirect(f"/r{i + 1}") for i in range(10)}
    routes["/r10"] = body(CLIP)
    with LocalServer(routes) as server:
        with pytest.raises(DownloadError, match=r"more than 2 redirects"):
            fetch(server.url("/r0"), LOCAL, max_redirects=2)
        assert server.hits == ["/r0", "/r1", "/r2"]
        assert fetch(server.url("/r8"), max_redirects=2).final_url.endswith("/r10")


@pytest.mark.parametrize("url", ["ftp://127.0.0.1/clip.mp4", "file:///etc/passwd", "data:,hi"])
def test_non_http_schemes_are_refused(url: str) -> None:
    """Only http and https URLs are fetched."""
    with pytest.raises(DownloadError, match="only http and https") as info:
        fetch(url)
    assert info.value.reason is DownloadFailure.SCHEME


def test_redirect_to_a_non_http_scheme_is_refused() -> None:
    """A hop to a file: URL is refused like a first URL would be."""
    hop = r"file:///etc/passwd \(redirected from .*/go\)"
    with (
        LocalServer({"/go": redirect("file:///etc/passwd")}) as server,
        pytest.raises(DownloadError, match=hop),
    ):
        fetch(server.url("/go"))


def test_a_stalled_server_times_out() -> None:
    """A server that does not answer in time fails with a timeout naming the URL."""

    def route(handler: BaseHTTPRequestHandler) -> None:
        server.release.wait(10)
        send(handler, b"late")

    with (
        LocalServer({"/slow": route}) as server,
        pytest.raises(DownloadError, match=r"/slow: timed out after 0.3 s") as info,
    ):
        fetch(server.url("/slow"), LOCAL, timeout=0.3)
    assert info.value.reason is DownloadFailure.TIMEOUT


def test_a_body_that_stalls_times_out() -> None:
    """The timeout bounds the whole download: a body that stops coming fails too."""

    def route(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "video/mp4")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        handler.wfile.write(b"4\r\nhead\r\n")
        handler.wfile.flush()
        server.release.wait(10)

    with (
        LocalServer({"/drip": route}) as server,
        pytest.raises(DownloadError, match=r"/drip: timed out after 0.3 s"),
    ):
        fetch(server.url("/drip"), LOCAL, timeout=0.3)


def test_http_error_status_is_a_download_error() -> None:
    """A 404 fails with the status and the URL."""
    with LocalServer() as server, pytest.raises(DownloadError, match=r"/missing: HTTP 404") as info:
        fetch(server.url("/missing"), LOCAL)
    assert info.value.reason is DownloadFailure.STATUS


def test_connection_refused_is_a_download_error() -> None:
    """Nobody listening is a DownloadError, not an OSError."""
    with LocalServer() as server:
        url = server.url("/gone")
    with pytest.raises(DownloadError, match="ConnectionRefusedError") as info:
        fetch(url)
    assert info.value.reason is DownloadFailure.CONNECTION


@pytest.mark.parametrize(
    ("bounds", "message"),
    [
        ({"max_bytes": 0}, "max_bytes must be a positive int"),
        ({"timeout": 0}, "timeout must be a positive number"),
        ({"max_redirects": -1}, "max_redirects must be an int of 0 or more"),
        ({"accept": ["video/mp4\r\nX-Evil: 1"]}, "is not a media type"),
    ],
)
def test_bad_bounds_are_refused(bounds: dict[str, Any], message: str) -> None:
    """Bounds are checked before anything is fetched."""
    with pytest.raises(ValueError, match=message):
        fetch("http://127.0.0.1:9/", **bounds)


def test_accept_becomes_the_accept_header() -> None:
    """The accept media types are sent as the Accept header."""
    seen: list[str | None] = []

    def route(handler: BaseHTTPRequestHandler) -> None:
        seen.append(handler.headers.get("Accept"))
        send(handler, CLIP)

    with LocalServer({"/clip": route}) as server:
        fetch(server.url("/clip"), accept=["video/mp4", "video/webm"])
        fetch(server.url("/clip"))
    assert seen == ["video/mp4, video/webm", "*/*"]
