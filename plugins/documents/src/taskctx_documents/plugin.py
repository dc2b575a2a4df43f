"""Registers the four document handlers through the ordinary hook."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from taskctx.hookspecs import hookimpl
from taskctx_documents import default_handlers

__all__ = ["register_file_io_handlers"]


@hookimpl
def register_file_io_handlers(register: Callable[[Any], None]) -> None:
    """Handlers ``pdf``, ``docx``, ``xlsx`` (and xlsm) and ``pptx`` (and pptm)."""
    for handler in default_handlers():
        register(handler)
