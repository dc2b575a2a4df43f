"""taskctx-mcp: an MCP server over a taskctx TaskContext, on the official ``mcp`` SDK.

``ContextService`` holds the TaskContext a ``ServerConfig`` describes; ``build_server``
makes the low-level MCP server over it. ``taskctx mcp serve`` runs it on stdio or
streamable HTTP.
"""

from __future__ import annotations

from taskctx_mcp.config import BindingConfig, ConfigError, ServerConfig, load_config
from taskctx_mcp.errors import ErrorReason
from taskctx_mcp.outputs import PackageOutput
from taskctx_mcp.server import build_server, initialization_options
from taskctx_mcp.service import ContextService
from taskctx_mcp.uris import ref_to_uri, uri_to_ref

__all__ = [
    "BindingConfig",
    "ConfigError",
    "ContextService",
    "ErrorReason",
    "PackageOutput",
    "ServerConfig",
    "build_server",
    "initialization_options",
    "load_config",
    "ref_to_uri",
    "uri_to_ref",
]
