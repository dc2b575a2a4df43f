"""The formats this plugin parses: one table, read without importing any parser library.

The handler classes take their name, suffixes and media types from here, and the plugin
registers deferred handlers built from it, so loading the plugin costs no import of
pypdf, python-docx, openpyxl or python-pptx until a document is parsed.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FORMATS", "Format", "by_name"]


@dataclass(frozen=True)
class Format:
    """One document format: handler name, suffixes, media types and where its class lives."""

    name: str
    suffixes: tuple[str, ...]
    media_types: tuple[str, ...]
    module: str
    handler: str


FORMATS: tuple[Format, ...] = (
    Format("pdf", ("pdf",), ("application/pdf",), "taskctx_documents.pdf", "PdfHandler"),
    Format(
        "docx",
        ("docx",),
        ("application/vnd.openxmlformats-officedocument.wordprocessingml.document",),
        "taskctx_documents.docx",
        "DocxHandler",
    ),
    Format(
        "xlsx",
        ("xlsx", "xlsm"),
        (
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            "application/vnd.ms-excel.sheet.macroenabled.12",
        ),
        "taskctx_documents.xlsx",
        "XlsxHandler",
    ),
    Format(
        "pptx",
        ("pptx", "pptm"),
        (
            "application/vnd.openxmlformats-officedocument.presentationml.presentation",
            "application/vnd.ms-powerpoint.presentation.macroenabled.12",
        ),
        "taskctx_documents.pptx",
        "PptxHandler",
    ),
)


def by_name(name: str) -> Format:
    """The format of handler ``name``."""
    for fmt in FORMATS:
        if fmt.name == name:
            return fmt
    raise KeyError(name)
