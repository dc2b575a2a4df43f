"""Limits: sizes, decompression bombs, wall clock; legacy and encrypted Office files."""

from __future__ import annotations

import io
import zipfile

import pytest
import taskctx_documents.limits
from taskctx_documents import (
    DocumentLimits,
    DocxHandler,
    PdfHandler,
    PptxHandler,
    XlsxHandler,
)
from taskctx_documents._inflate import CHUNK_BYTES
from taskctx_documents.limits import GIB, MIB, Deadline
from taskctx_documents.ziputil import ENCRYPTION_INFO, OLE_MAGIC

from taskctx.errors import MediaError
from taskctx.protocols import FileIOHandler
from tests.plugins.documents.builders import (
    add_zip_member,
    forge_declared_size,
    make_docx,
    make_pdf,
    make_pptx,
    make_xlsx,
)

OOXML: list[tuple[type[DocxHandler | XlsxHandler | PptxHandler], bytes, str]] = [
    (DocxHandler, make_docx(), "docx"),
    (XlsxHandler, make_xlsx(), "xlsx"),
    (PptxHandler, make_pptx(), "pptx"),
]
OOXML_IDS = [suffix for _, _, suffix in OOXML]


def test_default_limits() -> None:
    """The defaults are the documented ones."""
    limits = DocumentLimits()
    assert (limits.max_bytes, limits.max_pages, limits.max_cells, limits.max_slides) == (
        100 * MIB,
        5_000,
        5_000_000,
        5_000,
    )
    assert (limits.max_seconds, limits.zip_max_total_bytes) == (30.0, GIB)
    assert (limits.zip_max_ratio, limits.zip_max_members) == (200.0, 100_000)


def test_limits_are_frozen_and_validated() -> None:
    """Limits cannot change after construction and must be positive."""
    limits = DocumentLimits()
    with pytest.raises(ValueError, match="frozen"):
        limits.max_pages = 1  # type: ignore[misc]
    with pytest.raises(ValueError, match="greater than 0"):
        DocumentLimits(max_seconds=0)


@pytest.mark.parametrize("handler_type", [PdfHandler, DocxHandler, XlsxHandler, PptxHandler])
def test_over_max_bytes_is_too_large(handler_type: type[FileIOHandler]) -> None:
    """Input longer than ``max_bytes`` is refused before parsing."""
    handler = handler_type(DocumentLimits(max_bytes=10))  # type: ignore[call-arg]
    with pytest.raises(MediaError) as caught:
        handler.parse(b"x" * 11, "big.bin")
    assert caught.value.code == "too_large"
    assert "big.bin" in str(caught.value)


@pytest.mark.parametrize(("handler_type", "data", "suffix"), OOXML, ids=OOXML_IDS)
def test_high_ratio_member_is_refused(
    handler_type: type[DocxHandler], data: bytes, suffix: str
) -> None:
    """A member inflating ~1000x (2 MiB of zeros) is ``too_large`` before the library runs."""
    bomb = add_zip_member(data, "docProps/bomb.bin", bytes(2 * MIB))
    with pytest.raises(MediaError) as caught:
        handler_type().parse(bomb, f"bomb.{suffix}")
    assert caught.value.code == "too_large"
    assert "'docProps/bomb.bin' inflates" in str(caught.value)


def test_small_repetitive_member_is_not_a_bomb() -> None:
    """Members under the grace size are not ratio-checked."""
    data = add_zip_member(make_docx(), "docProps/blank.bin", bytes(64 * 1024))
    assert DocxHandler().parse(data, "fine.docx").text


def test_overall_ratio_is_checked() -> None:
    """Many small members that together inflate too much are refused as a whole."""
    data = make_docx()
    for index in range(3):
        data = add_zip_member(data, f"docProps/part{index}.bin", bytes(512 * 1024))
    handler = DocxHandler(DocumentLimits(zip_max_ratio=20))  # each member is under the grace
    with pytest.raises(MediaError) as caught:
        handler.parse(data, "spread.docx")
    assert caught.value.code == "too_large"
    assert "the archive inflates" in str(caught.value)


def test_declared_size_over_total_is_refused() -> None:
    """A central directory declaring 2 GiB uncompressed is refused without inflating."""
    data = forge_declared_size(make_docx(), "word/document.xml", 2 * GIB)
    with pytest.raises(MediaError) as caught:
        DocxHandler().parse(data, "huge.docx")
    assert caught.value.code == "too_large"
    assert "uncompressed bytes declared" in str(caught.value)


def test_lower_total_limit_applies() -> None:
    """``zip_max_total_bytes`` bounds the declared uncompressed total."""
    handler = XlsxHandler(DocumentLimits(zip_max_total_bytes=1000))
    with pytest.raises(MediaError) as caught:
        handler.parse(make_xlsx(), "book.xlsx")
    assert caught.value.code == "too_large"


def test_too_many_members_is_refused() -> None:
    """More members than ``zip_max_members`` is ``too_large``."""
    handler = PptxHandler(DocumentLimits(zip_max_members=5))
    with pytest.raises(MediaError) as caught:
        handler.parse(make_pptx(), "deck.pptx")
    assert caught.value.code == "too_large"
    assert "members" in str(caught.value)


@pytest.mark.parametrize(("handler_type", "data", "suffix"), OOXML, ids=OOXML_IDS)
def test_ole_container_with_encryption_info_is_encrypted(
    handler_type: type[DocxHandler], data: bytes, suffix: str
) -> None:
    """An OLE container holding an EncryptionInfo stream is an encrypted Office file."""
    blob = OLE_MAGIC + bytes(512) + ENCRYPTION_INFO + bytes(64)
    with pytest.raises(MediaError) as caught:
        handler_type().parse(blob, f"locked.{suffix}")
    assert caught.value.code == "encrypted"
    assert f"locked.{suffix}" in str(caught.value)


@pytest.mark.parametrize(("handler_type", "data", "suffix"), OOXML, ids=OOXML_IDS)
def test_plain_ole_container_is_legacy(
    handler_type: type[DocxHandler], data: bytes, suffix: str
) -> None:
    """An OLE container without encryption is a legacy binary file, not OOXML."""
    with pytest.raises(MediaError) as caught:
        handler_type().parse(OLE_MAGIC + bytes(1024), f"old.{suffix}")
    assert caught.value.code == "parse_failed"
    assert "legacy binary format" in str(caught.value)


def test_zip_without_content_types_is_not_ooxml() -> None:
    """A ZIP that is not an OOXML package is ``parse_failed`` saying so."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("readme.txt", "hello")
    with pytest.raises(MediaError) as caught:
        XlsxHandler().parse(buffer.getvalue(), "plain.xlsx")
    assert caught.value.code == "parse_failed"
    assert "[Content_Types].xml" in str(caught.value)


def test_many_page_pdf_times_out_on_a_tiny_budget() -> None:
    """With ``max_seconds`` far below the work, a long PDF stops with ``timeout``."""
    data = make_pdf([f"Page {n} text" for n in range(200)])
    with pytest.raises(MediaError) as caught:
        PdfHandler(DocumentLimits(max_seconds=1e-6)).parse(data, "long.pdf")
    assert caught.value.code == "timeout"
    assert "long.pdf" in str(caught.value)
    assert "page" in str(caught.value)


STEP = DocumentLimits(max_seconds=1.5)
"""With a clock that ticks 1 s per reading: the second unit of work is over budget."""


class _StepClock:
    """A clock that advances one second per reading."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def _past_the_guard(data: bytes) -> DocumentLimits:
    """Limits under which the package guard (one reading per inflated chunk) just passes."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        chunks = sum(-(-info.file_size // CHUNK_BYTES) for info in archive.infolist())
    return DocumentLimits(max_seconds=chunks + 1.5)


@pytest.mark.parametrize(
    ("handler", "data", "path", "where"),
    [
        # the page's content stream is decoded (and the clock read) before extraction
        (PdfHandler(STEP), make_pdf(["a"] * 5), "a.pdf", "page 1 of 5"),
        # the first row of every sheet is checked, then every CLOCK_EVERY_CELLS cells
        (
            XlsxHandler(_past_the_guard(make_xlsx())),
            make_xlsx(),
            "a.xlsx",
            "row 1 of sheet 'Secret'",
        ),
        (
            PptxHandler(_past_the_guard(make_pptx())),
            make_pptx(),
            "a.pptx",
            "shape 1 of slide 1 of 2",
        ),
        (
            DocxHandler(_past_the_guard(make_docx())),
            make_docx(),
            "a.docx",
            "paragraph or table row 2",
        ),
    ],
    ids=["pdf", "xlsx", "pptx", "docx"],
)
def test_deadline_is_checked_inside_the_loops(
    monkeypatch: pytest.MonkeyPatch, handler: FileIOHandler, data: bytes, path: str, where: str
) -> None:
    """Each handler checks the clock per unit of work and names where it stopped."""
    monkeypatch.setattr(taskctx_documents.limits, "_now", _StepClock())
    with pytest.raises(MediaError) as caught:
        handler.parse(data, path)
    assert caught.value.code == "timeout"
    assert f"stopped at {where}; limit max_seconds" in str(caught.value)


@pytest.mark.parametrize(("handler_type", "data", "suffix"), OOXML, ids=OOXML_IDS)
def test_deadline_runs_from_the_start_of_the_package_guard(
    monkeypatch: pytest.MonkeyPatch, handler_type: type[DocxHandler], data: bytes, suffix: str
) -> None:
    """One clock covers the whole parse: the guard checks it after every inflated chunk."""
    monkeypatch.setattr(taskctx_documents.limits, "_now", _StepClock())
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        second = archive.infolist()[1].filename
    with pytest.raises(MediaError) as caught:
        handler_type(STEP).parse(data, f"a.{suffix}")
    assert caught.value.code == "timeout"
    assert f"stopped at reading ZIP member {second!r}" in str(caught.value)


def test_deadline_with_explicit_clock() -> None:
    """A Deadline passes while within budget and raises once past it."""
    clock = _StepClock()
    deadline = Deadline(2.5, "x.pdf", clock)
    deadline.check("first")
    deadline.check("second")
    with pytest.raises(MediaError, match=r"x.pdf: parsing took longer than 2.5 s \(stopped at th"):
        deadline.check("third")
