"""A handler that imports its parser library on first use (what the plugin registers)."""

from __future__ import annotations

import importlib
from typing import Any

from taskctx.protocols import FileIOHandler, ParsedDocument
from taskctx_documents.formats import Format
from taskctx_documents.limits import DocumentLimits

__all__ = ["DeferredHandler"]


class DeferredHandler:
    """Names, suffixes and media types at once; the real handler on the first parse."""

    def __init__(self, fmt: Format, limits: DocumentLimits | None = None) -> None:
        self.format = fmt
        self.name = fmt.name
        self.suffixes = fmt.suffixes
        self.media_types = fmt.media_types
        self._limits = limits
        self._handler: FileIOHandler | None = None

    def _real(self) -> FileIOHandler:
        if self._handler is None:
            module = importlib.import_module(self.format.module)
            factory: Any = getattr(module, self.format.handler)
            self._handler = factory(self._limits)
        return self._handler

    @property
    def version(self) -> str:
        """The real handler's parse-cache version (imports its library)."""
        return str(getattr(self._real(), "version", "1"))

    def parse(self, data: bytes, path: str) -> ParsedDocument:
        """Parse with the real handler."""
        return self._real().parse(data, path)
