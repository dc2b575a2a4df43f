"""Registers the four document handlers through the ordinary hook."""

from __future__ import annotations

from collections.abc import Callable

from taskctx import FileIOHandler
from taskctx.hookspecs import hookimpl
from taskctx_documents.deferred import DeferredHandler
from taskctx_documents.formats import FORMATS

__all__ = ["register_file_io_handlers"]


@hookimpl
def register_file_io_handlers(register: Callable[[FileIOHandler], None]) -> None:
    """Handlers ``pdf``, ``docx``, ``xlsx`` (and xlsm) and ``pptx`` (and pptm).

    Deferred: a parser library is imported when its first document is parsed, not when
    the plugin loads (every ``taskctx`` command and host would pay for it otherwise).
    """
    for fmt in FORMATS:
        register(DeferredHandler(fmt))
