"""Probe-sized hostile documents, each parsed by the real handler in a child process.

Every document here passed the size checks of the old guard (or lied to them) and took
gigabytes or minutes. Each is built at run time (a few megabytes from repeated deflate
blocks), written to a temporary file and parsed in a fresh interpreter, which reports
its own peak resident set size; the parent measures the wall time (interpreter start
included). Each must end in a diagnostic that names the limit, within 30 s and under
512 MiB. A child is capped at 3 GiB of address space so a regression fails the test
instead of the machine.
"""

from __future__ import annotations

import io
import random
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.plugins.documents.bombs import (
    MIB,
    SHEET,
    deflated,
    docx_with_body,
    flate,
    noisy,
    parse_in_child,
    pdf_file,
    pdf_file_with_object_streams,
    pdf_pages,
    pdf_stream,
    repack,
    repeated,
    xlsx_with,
)
from tests.plugins.documents.builders import make_docx, make_pptx, make_xlsx

pytestmark = pytest.mark.slow

MAX_SECONDS = 30.0
MAX_PEAK_MIB = 512.0
WORKSHEET = "xl/worksheets/sheet1.xml"
TEXT = b"BT /F1 12 Tf 72 720 Td "
"""The start of a PDF text object (Helvetica, font resource F1)."""
FORM = b"/Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >>"


def _docx_lying_header() -> bytes:
    return docx_with_body(make_docx(), b"<w:p/>" * (MIB // 6), 1024, declared=2048, crc=False)


def _docx_paragraphs() -> bytes:
    return docx_with_body(make_docx(), noisy(b"<w:p/>", MIB, 12_000), 600)


def _docx_huge_text() -> bytes:
    text = noisy(b"lorem ipsum ", 9 * MIB, 60_000)
    return docx_with_body(make_docx(), b"<w:p><w:r><w:t>" + text + b"</w:t></w:r></w:p>", 40)


def _docx_billion_laughs() -> bytes:
    entities = b"".join(
        b'<!ENTITY %s "%s">' % (bytes([98 + i]), (b"&%s;" % bytes([97 + i])) * 10) for i in range(9)
    )
    document = (
        b'<?xml version="1.0"?><!DOCTYPE w:document [<!ENTITY a "aaaaaaaaaa">'
        + entities
        + b']><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/'
        b'main"><w:body><w:p><w:r><w:t>&j;</w:t></w:r></w:p></w:body></w:document>'
    )
    return repack(make_docx(), [deflated("word/document.xml", document)])


def _xlsx_empty_rows() -> bytes:
    rows = repeated(WORKSHEET, noisy(b"<row/>", MIB, 12_000), 600, prefix=SHEET[0], suffix=SHEET[1])
    return xlsx_with(make_xlsx(), [rows])


def _xlsx_wide_row() -> bytes:
    head = SHEET[0] + b'<row r="1">'
    cells = noisy(b"<c><v>1</v></c>", MIB, 10_000)
    row = repeated(WORKSHEET, cells, 400, prefix=head, suffix=b"</row>" + SHEET[1])
    return xlsx_with(make_xlsx(), [row])


def _xlsx_shared_strings() -> bytes:
    items = b"".join(b"<si><t>%d</t></si>" % i for i in range(200_000))
    head = b'<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
    strings = repeated("xl/sharedStrings.xml", items, 30, prefix=head, suffix=b"</sst>")
    return xlsx_with(make_xlsx(), [strings], shared_strings=True)


def _xlsx_repeated_shared_string() -> bytes:
    strings = deflated(
        "xl/sharedStrings.xml",
        b'<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><si><t>'
        + random.Random(2).randbytes(16_000).hex().encode()
        + b"</t></si></sst>",
    )
    row = b"<row>" + b'<c t="s"><v>0</v></c>' * 16_000 + b"</row>"  # 512 M characters
    sheet = deflated(WORKSHEET, SHEET[0] + row + SHEET[1])
    return xlsx_with(make_xlsx(), [strings, sheet], shared_strings=True)


def _xlsx_whole_sheet_dimension() -> bytes:
    body = (
        SHEET[0].replace(b"<sheetData>", b'<dimension ref="A1:XFD1048576"/><sheetData>')
        + b'<row r="1"><c r="A1" t="inlineStr"><is><t>first</t></is></c></row>'
        + b'<row r="1048576"><c r="XFD1048576" t="inlineStr"><is><t>last</t></is></c></row>'
        + SHEET[1]
    )
    return xlsx_with(make_xlsx(), [deflated(WORKSHEET, body)])


def _pptx_media() -> bytes:
    blob = noisy(b"\x00\x01\x02\x03", MIB, 12_000)
    return repack(make_pptx(), [repeated("ppt/media/image99.png", blob, 900)])


def _pptx_shapes() -> bytes:
    slide = "ppt/slides/slide2.xml"
    head, _, tail = make_slide(slide).partition(b"</p:spTree>")
    shape = (
        b'<p:sp><p:nvSpPr><p:cNvPr id="9" name="x"/><p:cNvSpPr/><p:nvPr/></p:nvSpPr><p:spPr/>'
        b"<p:txBody><a:bodyPr/><a:p><a:r><a:t>x</a:t></a:r></a:p></p:txBody></p:sp>"
    )
    shapes = repeated(
        slide, noisy(shape, MIB, 8000), 150, prefix=head, suffix=b"</p:spTree>" + tail
    )
    return repack(make_pptx(), [shapes])


def make_slide(name: str) -> bytes:
    """The XML of slide ``name`` of :func:`make_pptx`."""
    with zipfile.ZipFile(io.BytesIO(make_pptx())) as archive:
        return archive.read(name)


def _pptx_many_parts() -> bytes:
    parts = [deflated(f"ppt/custom/part{i}.xml", b"<a/>") for i in range(40_000)]
    return repack(make_pptx(), parts)


def _pdf_flate_bomb() -> bytes:
    return pdf_file(pdf_pages([pdf_stream(flate(b" " * MIB, 1024))]))


def _pdf_heavy_pages() -> bytes:
    # 30,000 operators a page, 200 pages: pypdf tokenises a page's whole content stream
    # before its first operator reaches the clock, so a page must be a fraction of the
    # limit for the stop to come within it on a loaded machine (see docs/documents.md)
    content = pdf_stream(flate(b"(abcdefgh) Tj\n" * 1_000, 30, prefix=TEXT, suffix=b"ET\n"))
    return pdf_file(pdf_pages([content] * 200))


def _pdf_form_drawn_5000_times() -> bytes:
    form = pdf_stream(flate(TEXT + b"(abcdefghij) Tj " * 50_000 + b"ET"), FORM)
    page = pdf_stream(flate(b"/X1 Do\n" * 5000))
    objects = pdf_pages([page], resources=b"/Font << /F1 3 0 R >> /XObject << /X1 6 0 R >>")
    return pdf_file([*objects, form])


def _pdf_object_streams() -> bytes:
    pages = 20
    first_page = 3 + pages + 1
    kids = b" ".join(b"%d 0 R" % (first_page + i) for i in range(pages))
    plain = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, pages),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        *(pdf_stream(flate(TEXT + b"(page %d) Tj ET" % i)) for i in range(pages)),
    ]
    packed = [
        [
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R"
            b" >> >> /Contents %d 0 R >>" % (4 + i)
        ]
        for i in range(pages)
    ]
    return pdf_file_with_object_streams(plain, packed)


def _pdf_decoded_pages() -> bytes:
    comment = b"%" + b" " * (MIB - 2) + b"\n"
    content = pdf_stream(flate(comment, 30, suffix=TEXT + b"(x) Tj ET"))
    return pdf_file(pdf_pages([content] * 40))


def _pdf_page_dag() -> bytes:
    levels = 40
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    for level in range(levels):
        child = 3 + level
        objects.append(
            b"<< /Type /Pages /Kids [%d 0 R %d 0 R] /Count %d >>"
            % (child, child, 2 ** (levels - level))
        )
    objects.append(b"<< /Type /Page /MediaBox [0 0 10 10] >>")
    return pdf_file(objects)


Case = tuple[str, Callable[[], bytes], dict[str, float], str, str]
CASES: list[Case] = [
    (
        "docx",
        _docx_lying_header,
        {},
        "too_large",
        "member 'word/document.xml' inflates past its declared size of 2,048 bytes",
    ),
    ("docx", _docx_paragraphs, {}, "too_large", "(limit xml_max_elements=2,000,000)"),
    ("docx", _docx_huge_text, {}, "too_large", "(limit xml_max_bytes=67,108,864)"),
    ("docx", _docx_billion_laughs, {}, "parse_failed", "declares the entity 'a'"),
    ("xlsx", _xlsx_empty_rows, {}, "too_large", "has more than 1,048,576 rows"),
    ("xlsx", _xlsx_wide_row, {}, "too_large", "holds more than 16,384 cells"),
    ("xlsx", _xlsx_shared_strings, {}, "too_large", "(limit xml_max_elements=2,000,000)"),
    ("xlsx", _xlsx_repeated_shared_string, {}, "too_large", "(limit max_text_chars=32,000,000)"),
    ("xlsx", _xlsx_whole_sheet_dimension, {}, "parsed", "16410 characters"),
    ("pptx", _pptx_media, {}, "too_large", "(limit zip_max_loaded_bytes=268,435,456)"),
    ("pptx", _pptx_shapes, {}, "too_large", "(limit xml_max_elements=2,000,000)"),
    ("pptx", _pptx_many_parts, {}, "parsed", "characters"),
    ("pdf", _pdf_flate_bomb, {}, "too_large", "pdf_max_stream_bytes=33,554,432"),
    ("pdf", _pdf_heavy_pages, {"max_seconds": 2}, "timeout", "content operator"),
    ("pdf", _pdf_form_drawn_5000_times, {"max_seconds": 2}, "timeout", "content operator"),
    ("pdf", _pdf_object_streams, {}, "too_large", "(limit pdf_max_decoded_bytes=268,435,456)"),
    (
        "pdf",
        _pdf_decoded_pages,
        {"pdf_max_decoded_bytes": 40 * MIB},
        "too_large",
        "stopped at page 2 of 40) (limit pdf_max_decoded_bytes=41,943,040)",
    ),
    ("pdf", _pdf_page_dag, {}, "too_large", "Maximum page tree entry limit reached"),
]


@pytest.mark.parametrize(
    ("kind", "build", "limits", "outcome", "message"),
    CASES,
    ids=[build.__name__.lstrip("_") for _, build, _, _, _ in CASES],
)
def test_probe_sized_bomb_ends_in_a_diagnostic_in_bounded_time_and_memory(
    tmp_path: Path,
    kind: str,
    build: Callable[[], bytes],
    limits: dict[str, float],
    outcome: str,
    message: str,
) -> None:
    """The real handler, in a child process, stops with the named limit, quickly and small."""
    result = parse_in_child(kind, build(), tmp_path / f"bomb.{kind}", limits)
    assert (result.outcome, message in result.message) == (outcome, True), result.message
    # max_seconds is a wall clock: a timeout stops at its (lowered) limit plus one operator;
    # any other stop is judged by the work done (CPU time), which another load cannot inflate
    if outcome == "timeout":
        spent, budget = result.parse_seconds, limits["max_seconds"] + 3
    else:
        spent, budget = result.cpu_seconds, MAX_SECONDS
    assert spent < budget, f"took {spent:.1f} s: {result.message}"
    assert result.peak_mib < MAX_PEAK_MIB, f"peak {result.peak_mib:.0f} MiB: {result.message}"
