"""A real HTTP/1.1 server on 127.0.0.1 for the download, video and payload tests."""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

__all__ = ["CLIP", "LocalServer", "Route", "body", "chunked", "redirect", "send"]

Route = Callable[[BaseHTTPRequestHandler], None]
"""Answers one request (reads the body if it wants, writes the whole response)."""


class _Quiet(ThreadingHTTPServer):
    """A threading server that keeps a client's hang-up off stderr."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that stops reading (over its limit) is expected here."""


class LocalServer:
    """A real HTTP/1.1 server on 127.0.0.1 in a thread, answering paths from ``routes``.

    ``hits`` lists the paths asked for, in order; routes may be added while it runs.
    """

    def __init__(self, routes: dict[str, Route] | None = None) -> None:
        self.routes: dict[str, Route] = dict(routes or {})
        self.hits: list[str] = []
        self.release = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                path = urlsplit(self.path).path
                server.hits.append(path)
                route = server.routes.get(path)
                if route is None:
                    send(self, b"not here", "text/plain", status=404)
                else:
                    route(self)

            do_POST = do_GET

            def log_message(self, format: str, *args: Any) -> None:
                """Keep the access log off stderr."""

        self._server = _Quiet(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def port(self) -> int:
        """The port the server listens on."""
        return int(self._server.server_address[1])

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        """The absolute URL of ``path`` on this server, under ``host``."""
        return f"http://{host}:{self.port}{path}"

    def __enter__(self) -> LocalServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


def send(
    handler: BaseHTTPRequestHandler,
    data: bytes,
    media_type: str = "video/mp4",
    *,
    status: int = 200,
    headers: dict[str, str] | None = None,
) -> None:
    """Write a whole response with a Content-Length."""
    handler.send_response(status)
    handler.send_header("Content-Type", media_type)
    handler.send_header("Content-Length", str(len(data)))
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(data)


def body(data: bytes, media_type: str = "video/mp4") -> Route:
    """A route answering ``data`` with a Content-Length."""
    return lambda handler: send(handler, data, media_type)


def chunked(data: bytes, media_type: str = "video/mp4", chunk: int = 1000) -> Route:
    """A route answering ``data`` in chunks, with no Content-Length."""

    def route(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", media_type)
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        for start in range(0, len(data), chunk):
            piece = data[start : start + chunk]
            handler.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
        handler.wfile.write(b"0\r\n\r\n")

    return route


def redirect(location: str, status: int = 302) -> Route:
    """A route redirecting to ``location``."""
    return lambda handler: send(
        handler, b"", "text/plain", status=status, headers={"Location": location}
    )


CLIP = b"\x00\x00\x00\x18ftypmp42" + bytes(range(256)) * 2
"""A few hundred bytes that start like an MP4 file."""
