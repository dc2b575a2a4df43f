"""taskctx-documents: FileIOHandlers for PDF, DOCX, XLSX and PPTX.

Each handler turns a document's bytes into parsed text with exact sections (pages,
headings, sheets, slides), within :class:`DocumentLimits`, and reports every failure
as :class:`taskctx.errors.MediaError` with a code (``encrypted``, ``parse_failed``,
``no_text``, ``too_large``, ``timeout``). An OOXML package is inflated and its XML
pre-scanned before any library sees it (``ziputil``, ``_inflate``, ``_xmlscan``,
``_roles``); pypdf runs under the checks of ``_pdfcost``. The plugin module registers
one of each.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from taskctx.protocols import FileIOHandler
from taskctx_documents.limits import DocumentLimits

if TYPE_CHECKING:
    from taskctx_documents.docx import DocxHandler
    from taskctx_documents.pdf import PdfHandler
    from taskctx_documents.pptx import PptxHandler
    from taskctx_documents.xlsx import XlsxHandler

_LAZY = {
    "DocxHandler": "taskctx_documents.docx",
    "PdfHandler": "taskctx_documents.pdf",
    "PptxHandler": "taskctx_documents.pptx",
    "XlsxHandler": "taskctx_documents.xlsx",
}


def __getattr__(name: str) -> Any:
    """Handler classes import their parser library only when first asked for."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'taskctx_documents' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "DocumentLimits",
    "DocxHandler",
    "PdfHandler",
    "PptxHandler",
    "XlsxHandler",
    "default_handlers",
]


def default_handlers(limits: DocumentLimits | None = None) -> tuple[FileIOHandler, ...]:
    """One handler per format, sharing ``limits`` (the defaults when None)."""
    from taskctx_documents.docx import DocxHandler
    from taskctx_documents.pdf import PdfHandler
    from taskctx_documents.pptx import PptxHandler
    from taskctx_documents.xlsx import XlsxHandler

    return (PdfHandler(limits), DocxHandler(limits), XlsxHandler(limits), PptxHandler(limits))
