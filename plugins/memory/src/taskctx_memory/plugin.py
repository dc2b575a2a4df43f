"""Registers the ``session_memory`` source kind through the ordinary hook."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from taskctx import SourceFactory
from taskctx.hookspecs import hookimpl

if TYPE_CHECKING:
    from taskctx_memory.source import SessionMemorySource

__all__ = ["make_source", "register_source_kinds"]

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _flag(value: bool | str) -> bool:
    if isinstance(value, bool):
        return value
    lowered = value.strip().lower()
    if lowered in _TRUE | _FALSE:
        return lowered in _TRUE
    raise ValueError(f"include_global must be true or false, not {value!r}")


def make_source(
    root: str | Path, session_id: str, include_global: bool | str = True
) -> SessionMemorySource:
    """The factory behind ``host.source("session_memory", root=..., session_id=...)``.

    Opens the record store of ``root`` read-only. From the CLI options arrive as strings:
    ``include_global`` may be ``true``/``false`` (also ``1``/``0``, ``yes``/``no``).
    """
    from taskctx_records import RecordStore

    from taskctx_memory.source import SessionMemorySource

    store = RecordStore(root, mode="read_only")
    return SessionMemorySource(store, session_id, include_global=_flag(include_global))


@hookimpl
def register_source_kinds(register: Callable[[str, SourceFactory], None]) -> None:
    """Source kind ``session_memory``."""
    register("session_memory", make_source)
