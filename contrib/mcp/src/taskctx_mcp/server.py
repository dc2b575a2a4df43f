"""The MCP server: the low-level ``mcp.server.lowlevel.Server`` over a ContextService.

Handlers translate only: arguments are validated by the tool input models, the service
(the kernel) answers, and the answer becomes MCP content. Tool failures come back as
``isError`` results naming the reason (the spec's tool execution errors); resource
failures as JSON-RPC errors (``-32602`` for bad input, ``-32603`` for server trouble)
with ``data.reason``. No handler lets a traceback reach the wire.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import attrs
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import InMemorySubscriptionBus
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from pydantic import BaseModel

from taskctx import ContextBlock, ContextPackage, ContextRef, Representation, __version__
from taskctx_mcp.errors import ErrorReason, wire_error
from taskctx_mcp.service import ContextService
from taskctx_mcp.tools import Tool, tools_for
from taskctx_mcp.uris import SCOPE_PARAMETERS, ref_to_uri, uri_to_ref
from taskctx_mcp.watch import Watcher

__all__ = ["Handlers", "build_server", "initialization_options"]

Context = ServerRequestContext[Any, Any]
UNAVAILABLE_META = "taskctx/unavailable"
"""``_meta`` key of a resources/list page: bindings that did not answer (not listed)."""


def _mcp_error(exc: BaseException) -> MCPError:
    error = wire_error(exc)
    return MCPError(error.code, error.message, error.data)


def tool_result(output: BaseModel, package: ContextPackage | None = None) -> types.CallToolResult:
    """A tool's structured output, with its text (the view for a package) and images."""
    text = package.render() if package is not None else output.model_dump_json(indent=2)
    content: list[types.ContentBlock] = [types.TextContent(text=text)]
    if package is not None:
        content += [
            types.ImageContent(data=a.data_base64, mime_type=a.media_type)
            for a in package.attachments
        ]
    return types.CallToolResult(content=content, structured_content=output.model_dump(mode="json"))


def error_result(exc: BaseException) -> types.CallToolResult:
    """A tool execution error: ``isError`` with the reason and the message, no traceback."""
    error = wire_error(exc)
    return types.CallToolResult(
        content=[types.TextContent(text=f"error [{error.reason.value}]: {error.message}")],
        structured_content={"error": {"reason": error.reason.value, "message": error.message}},
        is_error=True,
    )


def _resource_contents(uri: str, package: ContextPackage) -> list[Any]:
    """What a read of ``uri`` delivered (checked by the service): text, or image blobs (one,
    or a prepared tall image's segments in order)."""
    if package.attachments:
        return [
            types.BlobResourceContents(uri=uri, mime_type=image.media_type, blob=image.data_base64)
            for image in package.attachments
        ]
    block = package.blocks[0]
    return [types.TextResourceContents(uri=uri, mime_type=_text_type(block), text=block.content)]


def _text_type(block: ContextBlock) -> str:
    if block.representation is Representation.PARSED_TEXT:
        return "text/plain"  # parsed text of a document, not the document's bytes
    return block.media_type


INSTRUCTIONS = (
    "Task context from taskctx. Call read_context(query) for a package; refs in it are "
    "aliases ([[ref:ref_N]]) that read_ref resolves; follow cursor with read_next while "
    "has_more. Coverage says what each source was searched for."
)


@attrs.define(slots=True)
class Handlers:
    """The request handlers of one server: each translates one MCP request."""

    service: ContextService
    tools: dict[str, Tool]
    watcher: Watcher

    @asynccontextmanager
    async def lifespan(self, _: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        """Poll the bound revisions for notifications while the server runs."""
        interval = self.service.config.resources.poll_interval
        async with anyio.create_task_group() as group:
            if interval > 0:
                group.start_soon(self.watcher.run, interval)
            try:
                yield {"service": self.service}
            finally:
                group.cancel_scope.cancel()

    async def list_tools(
        self, ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        """``tools/list``: every tool with its input and output schema."""
        return types.ListToolsResult(tools=[tool.describe() for tool in self.tools.values()])

    async def call_tool(
        self, ctx: Context, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        """``tools/call``: the tool's structured output, or an ``isError`` result."""
        tool = self.tools.get(params.name)
        if tool is None:
            raise MCPError(
                INVALID_PARAMS,
                f"unknown tool {params.name!r}; tools: {', '.join(sorted(self.tools))}",
                {"reason": ErrorReason.UNKNOWN_TOOL.value},
            )
        try:
            output, package = await tool.call(params.arguments or {})
        except Exception as exc:  # every failure is reported as a tool error, never raised
            return error_result(exc)
        return tool_result(output, package)

    async def list_resources(
        self, ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        """``resources/list``: one page, its cursor, and the bindings that did not answer."""
        cursor = params.cursor if params is not None else None
        page = await _guarded(self.service.list_resources(cursor))
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=ref_to_uri(ContextRef(binding=binding_id, path=d.path, scope=d.scope)),
                    name=f"{binding_id}/{d.path}" + (f"#{d.scope}" if d.scope else ""),
                    title=d.title,
                    mime_type=d.media_type,
                    size=d.size,
                )
                for binding_id, d in page.items
            ],
            next_cursor=page.next_cursor,
            meta={UNAVAILABLE_META: list(page.unavailable)} if page.unavailable else None,
        )

    async def list_templates(
        self, ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        """``resources/templates/list``: one scoped-read template per scope kind."""
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template=f"taskctx://{{binding}}/{{+path}}{{?{kind.value}}}",
                    name=f"scoped-{kind.value}",
                    description=f"A scoped read of an item: {meaning}.",
                )
                for kind, meaning in SCOPE_PARAMETERS.items()
            ]
        )

    async def read_resource(
        self, ctx: Context, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        """``resources/read``: the text or image the kernel delivered, else an error."""
        package = await _guarded(self.service.read_resource(params.uri))
        return types.ReadResourceResult(contents=_resource_contents(params.uri, package))

    async def subscribe(
        self, ctx: Context, params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        """``resources/subscribe``: a bound URI only."""
        await _guarded(_check_uri(self.service, params.uri))
        await self.watcher.subscribe(params.uri, ctx.session)
        return types.EmptyResult()

    async def unsubscribe(
        self, ctx: Context, params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        """``resources/unsubscribe``."""
        self.watcher.unsubscribe(params.uri, ctx.session)
        return types.EmptyResult()


def build_server(service: ContextService) -> Server[Any]:
    """The low-level MCP server answering from ``service``."""
    watcher = Watcher(service, InMemorySubscriptionBus())
    handlers = Handlers(service, {tool.name: tool for tool in tools_for(service)}, watcher)
    return Server(
        service.config.name,
        version=__version__,
        instructions=INSTRUCTIONS,
        lifespan=handlers.lifespan,
        on_list_tools=handlers.list_tools,
        on_call_tool=handlers.call_tool,
        on_list_resources=handlers.list_resources,
        on_list_resource_templates=handlers.list_templates,
        on_read_resource=handlers.read_resource,
        on_subscribe_resource=handlers.subscribe,
        on_unsubscribe_resource=handlers.unsubscribe,
        on_subscriptions_listen=watcher.listener(),
    )


def initialization_options(server: Server[Any]) -> InitializationOptions:
    """Capabilities including resource subscriptions and list-change notifications."""
    return server.create_initialization_options(NotificationOptions(resources_changed=True))


async def _check_uri(service: ContextService, uri: str) -> None:
    service.bound(uri_to_ref(uri))


async def _guarded(call: Awaitable[Any]) -> Any:
    """Await ``call``; any failure becomes an MCPError with a reason, never a traceback."""
    try:
        return await call
    except MCPError:
        raise
    except Exception as exc:
        raise _mcp_error(exc) from None
