"""Each of the four handlers keeps the FileIOHandler contract of ``taskctx.testing``."""

from __future__ import annotations

import pytest
from taskctx_documents import DocxHandler, PdfHandler, PptxHandler, XlsxHandler

from taskctx.protocols import FileIOHandler
from taskctx.testing import FileIOHandlerContract
from tests.plugins.documents.builders import make_docx, make_pdf, make_pptx, make_xlsx


class TestPdfContract(FileIOHandlerContract):
    """The PDF handler on a two-page PDF."""

    covers = "pdf"

    @pytest.fixture
    def handler(self) -> FileIOHandler:
        """The handler with default limits."""
        return PdfHandler()

    @pytest.fixture
    def sample(self) -> tuple[bytes, str]:
        """A two-page PDF."""
        return make_pdf(["First page text", "Second page text"]), "docs/sample.pdf"


class TestDocxContract(FileIOHandlerContract):
    """The DOCX handler on a document with headings, a table, header and footer."""

    covers = "docx"

    @pytest.fixture
    def handler(self) -> FileIOHandler:
        """The handler with default limits."""
        return DocxHandler()

    @pytest.fixture
    def sample(self) -> tuple[bytes, str]:
        """The builder's document."""
        return make_docx(), "docs/sample.docx"


class TestXlsxContract(FileIOHandlerContract):
    """The XLSX handler on a workbook with a hidden and an empty sheet."""

    covers = "xlsx"

    @pytest.fixture
    def handler(self) -> FileIOHandler:
        """The handler with default limits."""
        return XlsxHandler()

    @pytest.fixture
    def sample(self) -> tuple[bytes, str]:
        """The builder's workbook."""
        return make_xlsx(), "docs/sample.xlsx"


class TestPptxContract(FileIOHandlerContract):
    """The PPTX handler on a deck with a table, groups and notes."""

    covers = "pptx"

    @pytest.fixture
    def handler(self) -> FileIOHandler:
        """The handler with default limits."""
        return PptxHandler()

    @pytest.fixture
    def sample(self) -> tuple[bytes, str]:
        """The builder's deck."""
        return make_pptx(), "docs/sample.pptx"
