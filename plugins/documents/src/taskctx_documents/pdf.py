"""PDF: one section per page (``page:N``), text from pypdf's text extraction.

An encrypted PDF is opened with the empty password (many are encrypted only to carry
permissions); if that fails it is ``encrypted``. A page whose text cannot be extracted
fails the whole document (``parse_failed`` naming the page): delivering the other pages
would let an agent take the missing one for empty. Pages without a text layer
(scans) are empty sections, and a document of only such pages is ``no_text``:
taskctx does no OCR.

What pypdf may cost (see :mod:`taskctx_documents._pdfcost`): pypdf runs under a
configuration that holds every decoded stream to ``pdf_max_stream_bytes`` and the page
tree to what ``max_pages`` needs; before a page is extracted, the streams extraction
reads (contents, forms, fonts) are decoded once and held to ``pdf_max_decoded_bytes``
for the document (pypdf keeps decoded streams); while a page is extracted, the clock is
checked and the text charged at every content operator, so one page (or a form drawn
five thousand times on it) cannot run past the limits. A limit pypdf itself reaches is
``too_large`` too.
"""

from __future__ import annotations

import io
from typing import Any

import pypdf
from pypdf import PasswordType
from pypdf.errors import LimitReachedError

from taskctx.codes import ProblemCode
from taskctx.errors import MediaError
from taskctx.protocols import ParsedDocument
from taskctx_documents._boundary import ParseLog, describe
from taskctx_documents._handler import HandlerBase
from taskctx_documents._pdfcost import PageWatch, StreamCharges, pypdf_configuration
from taskctx_documents._text import TextBudget, TextBuilder
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

    def _parse(self, data: bytes, path: str, log: ParseLog, deadline: Deadline) -> ParsedDocument:
        try:
            with pypdf.apply_configuration(pypdf_configuration(self.limits)):
                return self._extract(data, path, log, deadline)
        except LimitReachedError as exc:
            raise MediaError(
                f"{path}: refused: pypdf reached one of its limits ({describe(exc)}; "
                f"limits pdf_max_stream_bytes={self.limits.pdf_max_stream_bytes:,}, "
                f"max_pages={self.limits.max_pages:,})",
                code=ProblemCode.TOO_LARGE,
            ) from None

    def _extract(self, data: bytes, path: str, log: ParseLog, deadline: Deadline) -> ParsedDocument:
        reader = pypdf.PdfReader(io.BytesIO(data), strict=False)
        metadata: dict[str, Any] = {"encrypted": reader.is_encrypted}
        if reader.is_encrypted:
            opened = reader.decrypt("")
            if opened == PasswordType.NOT_DECRYPTED:
                raise MediaError(
                    f"{path}: encrypted PDF: the empty password does not open it",
                    code=ProblemCode.ENCRYPTED,
                )
            metadata["opened_with"] = (
                "empty owner password"
                if opened == PasswordType.OWNER_PASSWORD
                else "empty user password"
            )
        charges = StreamCharges(self.limits, path, deadline)
        charges.object_streams(reader)
        count = len(reader.pages)
        if count > self.limits.max_pages:
            raise MediaError(
                f"{path}: {count:,} pages exceed the limit of {self.limits.max_pages:,} "
                "(limit max_pages)",
                code=ProblemCode.TOO_LARGE,
            )
        builder = TextBuilder()
        watch = PageWatch(deadline, TextBudget(self.limits.max_text_chars, path))
        for number, page in enumerate(reader.pages, start=1):
            where = f"page {number} of {count}"
            deadline.check(where)
            charges.page(page, where)
            text = watch.extract(page, where, path)
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
