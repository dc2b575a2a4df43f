"""Run the server on a transport: stdio, or streamable HTTP on HOST:PORT."""

from __future__ import annotations

import anyio
from mcp.server.stdio import stdio_server

from taskctx_mcp.server import build_server, initialization_options
from taskctx_mcp.service import ContextService

__all__ = ["serve_http", "serve_stdio"]


def serve_stdio(service: ContextService) -> None:
    """Serve one client on stdin/stdout until it closes them."""

    async def run() -> None:
        server = build_server(service)
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, initialization_options(server))

    anyio.run(run)


def serve_http(service: ContextService, host: str, port: int) -> None:
    """Serve streamable HTTP at ``http://HOST:PORT/mcp`` until SIGINT or SIGTERM."""
    import uvicorn

    server = build_server(service)
    app = server.streamable_http_app(host=host)
    uvicorn.run(app, host=host, port=port, log_level="warning")
