"""What pypdf may cost: decoded streams, the page tree, one page's extraction, its text."""

from __future__ import annotations

import pypdf
import pytest
from taskctx_documents import DocumentLimits, PdfHandler
from taskctx_documents._pdfcost import pypdf_configuration

from taskctx.errors import MediaError
from tests.plugins.documents.bombs import (
    MIB,
    flate,
    pdf_file,
    pdf_file_with_object_streams,
    pdf_pages,
    pdf_stream,
)

TEXT = b"BT /F1 12 Tf 72 720 Td "
FORM = b"/Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >>"


def _refused(data: bytes, limits: DocumentLimits | None = None) -> MediaError:
    with pytest.raises(MediaError) as caught:
        PdfHandler(limits).parse(data, "hostile.pdf")
    return caught.value


def _with_form(form_text: bytes, page_content: bytes, pages: int = 1) -> bytes:
    """Pages drawing form ``/X1`` (object after the pages) with ``page_content``."""
    form_number = 4 + 2 * pages
    resources = b"/Font << /F1 3 0 R >> /XObject << /X1 %d 0 R >>" % form_number
    objects = pdf_pages([pdf_stream(flate(page_content))] * pages, resources=resources)
    return pdf_file([*objects, pdf_stream(flate(form_text), FORM)])


def test_a_stream_decoding_past_the_limit_is_too_large() -> None:
    """A flate bomb in a content stream stops at ``pdf_max_stream_bytes``, not at 75 MB."""
    data = pdf_file(pdf_pages([pdf_stream(flate(b" " * MIB, 4))]))
    error = _refused(data, DocumentLimits(pdf_max_stream_bytes=MIB))
    assert error.code == "too_large"
    assert "pypdf reached one of its limits" in str(error)
    assert "pdf_max_stream_bytes=1,048,576" in str(error)


def test_decoded_streams_are_bounded_across_pages() -> None:
    """pypdf keeps what it decodes: the document's decoded streams are bounded."""
    contents = [pdf_stream(flate(b"%" + b" " * (MIB - 2) + b"\n" + TEXT + b"(x) Tj ET"))] * 6
    error = _refused(pdf_file(pdf_pages(contents)), DocumentLimits(pdf_max_decoded_bytes=3 * MIB))
    assert error.code == "too_large"
    assert "bytes of decoded PDF streams (stopped at page 3 of 6)" in str(error)
    assert "(limit pdf_max_decoded_bytes=3,145,728)" in str(error)


def test_a_stream_shared_by_every_page_is_charged_once() -> None:
    """One content stream (or form) drawn on 50 pages costs its size once."""
    content = pdf_stream(flate(b"%" + b" " * 300_000 + b"\n" + TEXT + b"(shared) Tj ET"))
    objects = pdf_pages([content])
    kids = b" ".join(b"4 0 R" for _ in range(50))
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count 50 >>" % kids
    parsed = PdfHandler(DocumentLimits(pdf_max_decoded_bytes=MIB)).parse(
        pdf_file(objects), "shared.pdf"
    )
    assert parsed.text.count("shared") == 50


def test_fonts_and_forms_are_charged() -> None:
    """A form's stream and a font's ToUnicode map count as decoded bytes too."""
    form = _with_form(b"%" + b" " * (2 * MIB) + b"\n" + TEXT + b"(f) Tj ET", b"/X1 Do")
    error = _refused(form, DocumentLimits(pdf_max_decoded_bytes=MIB))
    assert "(limit pdf_max_decoded_bytes=1,048,576)" in str(error)
    objects = pdf_pages([pdf_stream(flate(TEXT + b"(x) Tj ET"))])
    objects[2] = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /ToUnicode 6 0 R >>"
    cmap = pdf_stream(flate(b"%" + b" " * (2 * MIB)))
    error = _refused(pdf_file([*objects, cmap]), DocumentLimits(pdf_max_decoded_bytes=MIB))
    assert "(limit pdf_max_decoded_bytes=1,048,576)" in str(error)


def test_object_streams_are_charged_before_the_page_tree_is_read() -> None:
    """Object streams (pypdf keeps each decoded once it reads an object of it) count."""
    pages = 3
    kids = b" ".join(b"%d 0 R" % (7 + i) for i in range(pages))
    plain = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, pages),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        *(pdf_stream(flate(TEXT + b"(p) Tj ET")) for _ in range(pages)),
    ]
    packed = [
        [
            b"<< /Type /Page /Parent 2 0 R /Resources << /Font << /F1 3 0 R >> >> "
            b"/Contents %d 0 R >>" % (4 + i)
        ]
        for i in range(pages)
    ]
    error = _refused(
        pdf_file_with_object_streams(plain, packed), DocumentLimits(pdf_max_decoded_bytes=50 * MIB)
    )
    assert "bytes of decoded PDF streams (stopped at the object streams)" in str(error)


def test_the_clock_is_checked_inside_a_page() -> None:
    """One page of 200,000 text operators stops at the limit, naming the operator."""
    data = pdf_file(pdf_pages([pdf_stream(flate(TEXT + b"(abcdefgh) Tj\n" * 200_000 + b"ET"))]))
    error = _refused(data, DocumentLimits(max_seconds=0.5))
    assert error.code == "timeout"
    assert "(stopped at content operator" in str(error)
    assert "of page 1 of 1; limit max_seconds)" in str(error)


def test_the_clock_stops_a_form_drawn_thousands_of_times() -> None:
    """pypdf swallows errors inside a form; the timeout is raised again and ends the page."""
    data = _with_form(TEXT + b"(abcdefghij) Tj " * 20_000 + b"ET", b"/X1 Do\n" * 5000)
    error = _refused(data, DocumentLimits(max_seconds=0.5))
    assert error.code == "timeout"
    assert "of page 1 of 1; limit max_seconds)" in str(error)


def test_text_of_a_form_drawn_many_times_stops_at_the_text_limit() -> None:
    """A form's text repeated by every ``Do`` is charged as it is extracted."""
    data = _with_form(TEXT + b"(" + b"w" * 5000 + b") Tj ET", b"/X1 Do\n" * 2000)
    error = _refused(data, DocumentLimits(max_text_chars=100_000))
    assert error.code == "too_large"
    assert "more than 100,000 characters of text (stopped at page 1 of 1)" in str(error)


def test_page_text_counts_across_pages() -> None:
    """The text limit is the document's: pages add up."""
    data = pdf_file(pdf_pages([pdf_stream(flate(TEXT + b"(" + b"v" * 900 + b") Tj ET"))] * 5))
    error = _refused(data, DocumentLimits(max_text_chars=3000))
    assert "characters of text (stopped at page 4 of 5)" in str(error)


@pytest.mark.parametrize(
    ("objects", "code", "message"),
    [
        (
            [b"<< /Type /Catalog /Pages 2 0 R >>"]
            + [
                b"<< /Type /Pages /Kids [%d 0 R %d 0 R] /Count 1 >>" % (3 + i, 3 + i)
                for i in range(30)
            ]
            + [b"<< /Type /Page /MediaBox [0 0 10 10] >>"],
            "too_large",
            "Maximum page tree entry limit reached",
        ),
        (
            [
                b"<< /Type /Catalog /Pages 2 0 R >>",
                b"<< /Type /Pages /Kids [" + b"3 0 R " * 200_000 + b"] /Count 200000 >>",
                b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 10 10] >>",
            ],
            "too_large",
            "Reached maximum array element count",
        ),
        (
            [
                b"<< /Type /Catalog /Pages 2 0 R >>",
                b"<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 >>",
                b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 10 10] >>",
            ],
            "parse_failed",
            "cyclic page references",
        ),
    ],
    ids=["dag-of-2**30-leaves", "200000-kids", "loop"],
)
def test_hostile_page_trees_are_refused(objects: list[bytes], code: str, message: str) -> None:
    """Page trees that multiply, sprawl or loop end in a diagnostic, not a flattened list."""
    error = _refused(pdf_file(objects))
    assert error.code == code
    assert message in str(error)


def test_page_tree_entries_follow_max_pages() -> None:
    """pypdf's page-tree entry limit is derived from ``max_pages``."""
    limits = DocumentLimits(max_pages=10)
    with pypdf.apply_configuration(pypdf_configuration(limits)) as configuration:
        assert configuration.page_tree_maximum_entries == 1_020
        assert configuration.zlib_maximum_output_length == limits.pdf_max_stream_bytes


def test_a_tighter_pypdf_configuration_of_the_caller_stays() -> None:
    """The handler only lowers pypdf's limits: a caller's lower value is kept."""
    with pypdf.apply_configuration(zlib_maximum_output_length=1000):
        tightened = pypdf_configuration(DocumentLimits())
        error = _refused(pdf_file(pdf_pages([pdf_stream(flate(b" " * 5000))])))
    assert tightened.zlib_maximum_output_length == 1000
    assert error.code == "too_large"
    assert pypdf.get_configuration().zlib_maximum_output_length == 75_000_000
