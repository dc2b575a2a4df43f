"""Registers ``taskctx mcp`` through the ordinary ``register_commands`` hook."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from taskctx.hookspecs import hookimpl

if TYPE_CHECKING:
    import click

__all__ = ["register_commands"]


@hookimpl
def register_commands(register: Callable[[click.Command], None]) -> None:
    """``taskctx mcp serve``."""
    from taskctx_mcp.cli import mcp_group

    register(mcp_group)
