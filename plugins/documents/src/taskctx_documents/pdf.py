"""PDF: one section per page (``page:N``), text from pypdf's text extraction.

An encrypted PDF is opened with the empty password (many are encrypted only to carry
permissions); if that fails it is ``encrypted``. A page whose text cannot be extracted
fails the whole document (``parse_failed`` naming the page): delivering the other pages
would let an agent take the missing one for empty. Pages without a text layer
(scans) are empty sections, and a document of only such pages is ``no_text``:
taskctx does no OCR.
"""

from __future__ import annotations

import io
from typing import Any

import pypdf
from pypdf import PasswordType

from taskctx.errors import MediaError
from taskctx.protocols import ParsedDocument
from taskctx_documents._boundary import ParseLog, describe
from taskctx_documents._handler import HandlerBase
from taskctx_documents._text import TextBuilder
from taskctx_documents.formats import by_name
from taskctx_documents.limits import Deadline

__all__ = ["PdfHandler"]

FORMAT_VERSION = "1"
"""Bumped whenever this module changes the text or sections it produces."""


class PdfHandler(HandlerBase):
    """FileIOHandler for PDF files, on pypdf.

    Text of every page, one ``page:N`` section each; ``MediaError`` on failure.
    """

    FORMAT = by_name("pdf")
    LABEL = "PDF"
    FORMAT_VERSION = FORMAT_VERSION
    LIBRARY = "pypdf"
    LIBRARY_VERSION = pypdf.__version__
    ZIP_PACKAGE = False

    def _parse(self, data: bytes, path: str, log: ParseLog) -> ParsedDocument:
        deadline = Deadline(self.limits.max_seconds, path)
        reader = pypdf.PdfReader(io.BytesIO(data), strict=False)
        metadata: dict[str, Any] = {"encrypted": reader.is_encrypted}
        if reader.is_encrypted:
            opened = reader.decrypt("")
            if opened == PasswordType.NOT_DECRYPTED:
                raise MediaError(
                    f"{path}: encrypted PDF: the empty password does not open it",
                    code="encrypted",
                )
            metadata["opened_with"] = (
                "empty owner password"
                if opened == PasswordType.OWNER_PASSWORD
                else "empty user password"
            )
        count = len(reader.pages)
        if count > self.limits.max_pages:
            raise MediaError(
                f"{path}: {count:,} pages exceed the limit of {self.limits.max_pages:,}",
                code="too_large",
            )
        builder = TextBuilder()
        for number, page in enumerate(reader.pages, start=1):
            deadline.check(f"page {number} of {count}")
            try:
                text = page.extract_text()
            except Exception as exc:
                raise MediaError(
                    f"{path}: cannot extract the text of page {number} of {count}: {describe(exc)}",
                    code="parse_failed",
                ) from exc
            builder.add(f"Page {number}", f"page:{number}", text)
        metadata["pages"] = count
        metadata["warnings"] = log.warnings()
        reason = (
            "the PDF has no pages"
            if count == 0
            else f"none of its {count} page(s) has a text layer (scanned images need OCR, "
            "which taskctx does not do)"
        )
        return builder.build(
            path=path, media_type=self.media_types[0], empty_reason=reason, metadata=metadata
        )
