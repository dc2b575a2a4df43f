"""The OOXML package guard: members held to their declared sizes, XML pre-scanned.

Every hostile package here is small and parsed in-process under small limits; the
probe-sized ones, measured in a child process, are in ``test_bombs.py``.
"""

from __future__ import annotations

import io
import random
import struct
import zipfile

import pytest
from taskctx_documents import DocumentLimits, DocxHandler, PptxHandler, XlsxHandler

from taskctx.errors import MediaError
from tests.plugins.documents.bombs import (
    DOCX_BODY,
    SHEET,
    ZipMember,
    deflated,
    docx_with_body,
    repack,
    repeated,
    stored,
    write_zip,
    xlsx_with,
)
from tests.plugins.documents.builders import make_docx, make_pptx, make_xlsx

Handler = DocxHandler | XlsxHandler | PptxHandler
OOXML: list[tuple[type[Handler], bytes, str]] = [
    (DocxHandler, make_docx(), "docx"),
    (XlsxHandler, make_xlsx(), "xlsx"),
    (PptxHandler, make_pptx(), "pptx"),
]
OOXML_IDS = [suffix for _, _, suffix in OOXML]
WORKSHEET = "xl/worksheets/sheet1.xml"
RELAXED = 1e9
RELAXED_RATIO = DocumentLimits(zip_max_ratio=RELAXED)
"""For a test of another limit: repetitive XML compresses past the ratio limit first."""


def _refused(handler: Handler, data: bytes, name: str = "hostile") -> MediaError:
    with pytest.raises(MediaError) as caught:
        handler.parse(data, name)
    return caught.value


def _member(package: bytes, name: str) -> bytes:
    with zipfile.ZipFile(io.BytesIO(package)) as archive:
        return archive.read(name)


def _document(body: bytes) -> bytes:
    head, tail = DOCX_BODY
    return head + body + tail


# -- members held to their declared sizes ---------------------------------------------------


@pytest.mark.parametrize(("handler_type", "package", "suffix"), OOXML, ids=OOXML_IDS)
@pytest.mark.parametrize("member", ["[Content_Types].xml", "_rels/.rels", "docProps/core.xml"])
def test_member_inflating_past_its_declared_size_is_refused(
    handler_type: type[Handler], package: bytes, suffix: str, member: str
) -> None:
    """A member (manifest, relationships, core properties) that inflates past its claim
    stops one chunk past the claim, never inflated whole."""
    real = _member(package, member)
    lying = repeated(member, b"<!-- padding -->" * 4096, 64, prefix=real, declared=len(real))
    error = _refused(handler_type(), repack(package, [lying]), f"lying.{suffix}")
    assert error.code == "too_large"
    assert f"member {member!r} inflates past its declared size of {len(real):,} bytes" in str(error)


def test_stored_member_longer_than_declared_is_refused() -> None:
    """A stored (uncompressed) member that holds more than it declares is refused too."""
    real = _member(make_docx(), "word/document.xml")
    data = repack(
        make_docx(), [stored("word/document.xml", real + b" " * 9000, declared=len(real))]
    )
    error = _refused(DocxHandler(), data)
    assert error.code == "too_large"
    assert "inflates past its declared size" in str(error)


@pytest.mark.parametrize(
    ("member", "found"),
    [
        (lambda real: deflated("word/document.xml", real, declared=len(real) + 10), "bytes"),
        (
            lambda real: ZipMember("word/document.xml", deflated("x", real).raw, 12345, len(real)),
            "a wrong CRC-32",
        ),
    ],
    ids=["shorter", "crc"],
)
def test_member_not_matching_its_header_is_parse_failed(member: object, found: str) -> None:
    """A member shorter than it declares, or with a wrong CRC, is a broken package."""
    real = _member(make_docx(), "word/document.xml")
    data = repack(make_docx(), [member(real)])  # type: ignore[operator]
    error = _refused(DocxHandler(), data)
    assert error.code == "parse_failed"
    assert "ZIP member 'word/document.xml' inflates to" in str(error)
    assert found in str(error)


def test_cut_deflate_stream_is_parse_failed() -> None:
    """A deflate stream that ends before its final block is refused, naming the member."""
    real = _member(make_docx(), "word/document.xml")
    whole = deflated("word/document.xml", real)
    cut = ZipMember(whole.name, whole.raw[: len(whole.raw) // 2], whole.crc, whole.size)
    error = _refused(DocxHandler(), repack(make_docx(), [cut]))
    assert error.code == "parse_failed"
    assert "is cut short" in str(error) or "not a valid deflate stream" in str(error)


@pytest.mark.parametrize(
    ("change", "code", "message"),
    [
        (
            lambda m: ZipMember(m.name, m.raw, m.crc, m.size, zipfile.ZIP_BZIP2),
            "parse_failed",
            "uses compression method 12",
        ),
        (
            lambda m: ZipMember(m.name, m.raw, m.crc, m.size, zipfile.ZIP_LZMA),
            "parse_failed",
            "uses compression method 14",
        ),
        (
            lambda m: ZipMember(m.name, m.raw, m.crc, m.size, flags=1),
            "encrypted",
            "ZIP member 'word/document.xml' is encrypted",
        ),
    ],
    ids=["bzip2", "lzma", "zip-encrypted"],
)
def test_member_methods_outside_ooxml_are_refused(change: object, code: str, message: str) -> None:
    """Only stored and deflate members, never encrypted ones (bzip2 and LZMA inflate
    without any bound in ``zipfile``)."""
    member = deflated("word/document.xml", _member(make_docx(), "word/document.xml"))
    error = _refused(DocxHandler(), repack(make_docx(), [change(member)]))  # type: ignore[operator]
    assert error.code == code
    assert message in str(error)


def test_two_members_of_one_name_are_refused() -> None:
    """A package naming two members alike (which one a library reads is a guess) is refused."""
    extra = deflated("word/document.xml", _document(b"<w:p/>"))
    with zipfile.ZipFile(io.BytesIO(make_docx())) as archive:
        members = [deflated(info.filename, archive.read(info)) for info in archive.infolist()]
    error = _refused(DocxHandler(), write_zip([*members, extra]))
    assert error.code == "parse_failed"
    assert "two ZIP members are named 'word/document.xml'" in str(error)


def test_local_header_naming_another_member_is_refused() -> None:
    """The local header must name the member the central directory names."""
    data = bytearray(make_docx())
    at = data.find(b"PK\x03\x04")
    length = struct.unpack_from("<H", data, at + 26)[0]
    data[at + 30 : at + 30 + length] = b"X" * length
    error = _refused(DocxHandler(), bytes(data))
    assert error.code == "parse_failed"
    assert "named differently in its local header" in str(error)


# -- XML: entities, encodings, depth ----------------------------------------------------------

LAUGHS = (
    b'<!DOCTYPE lolz [<!ENTITY a "aaaaaaaaaa">'
    + b"".join(
        b'<!ENTITY %s "%s">' % (bytes([98 + i]), (b"&%s;" % bytes([97 + i])) * 10) for i in range(9)
    )
    + b"]>"
)


@pytest.mark.parametrize(
    ("handler_type", "package", "member", "body"),
    [
        (
            DocxHandler,
            make_docx(),
            "word/document.xml",
            b'<?xml version="1.0"?>'
            + LAUGHS.replace(b"lolz", b"w:document")
            + _document(b"<w:p><w:r><w:t>&j;</w:t></w:r></w:p>").split(b"?>", 1)[1],
        ),
        (
            XlsxHandler,
            make_xlsx(),
            WORKSHEET,
            LAUGHS.replace(b"lolz", b"worksheet")
            + SHEET[0].split(b"?>", 1)[1]
            + b'<row r="1"><c t="inlineStr"><is><t>&j;</t></is></c></row>'
            + SHEET[1],
        ),
        (
            PptxHandler,
            make_pptx(),
            "[Content_Types].xml",
            b'<!DOCTYPE Types [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
            + _member(make_pptx(), "[Content_Types].xml").split(b"?>", 1)[-1],
        ),
        (
            DocxHandler,
            make_docx(),
            "docProps/core.xml",
            b"<!DOCTYPE x [<!ENTITY % p \"<!ENTITY q 'boom'>\"> %p;]>"
            + _member(make_docx(), "docProps/core.xml").split(b"?>", 1)[-1],
        ),
    ],
    ids=["billion-laughs-docx", "billion-laughs-worksheet", "external-entity", "parameter-entity"],
)
def test_entity_declarations_are_refused(
    handler_type: type[Handler], package: bytes, member: str, body: bytes
) -> None:
    """Any entity declaration in any part is refused before a library expands it."""
    error = _refused(handler_type(), repack(package, [deflated(member, body)]))
    assert error.code == "parse_failed"
    assert f"XML part {member!r} declares the entity" in str(error)
    assert "entity expansion is refused" in str(error)


def test_doctype_without_entities_is_accepted() -> None:
    """A document type declaration alone (an SVG image carries one) is harmless."""
    svg = b'<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "http://www.w3.org/svg11.dtd"><svg/>'
    data = repack(make_docx(), [deflated("word/media/image9.svg", svg)])
    assert "First body paragraph." in DocxHandler().parse(data, "svg.docx").text


@pytest.mark.parametrize(
    "body",
    [
        b'<?xml version="1.0" encoding="Shift_JIS"?>' + _document(b"<w:p/>").split(b"?>", 1)[1],
        b'<?xml version="1.0" encoding="UTF-7"?><w:document/>',
        b"\x4c\x6f\xa7\x94\x93\x40",  # "<?xml " in EBCDIC
    ],
    ids=["shift-jis", "utf-7", "ebcdic"],
)
def test_xml_the_scan_cannot_read_is_refused(body: bytes) -> None:
    """What expat cannot count (multi-byte encodings, UTF-7 where ``<`` is ``+ADw-``,
    EBCDIC) never reaches a library that might read it."""
    error = _refused(DocxHandler(), repack(make_docx(), [deflated("word/document.xml", body)]))
    assert error.code == "parse_failed"
    assert "XML part 'word/document.xml' cannot be read as XML" in str(error)


def test_utf16_and_leading_whitespace_are_read() -> None:
    """UTF-16 parts (OPC allows them) and whitespace before the root are scanned and parsed."""
    document = _member(make_docx(), "word/document.xml").decode()
    body = document.split("?>", 1)[1]
    utf16 = ('<?xml version="1.0" encoding="UTF-16"?>' + body).encode("utf-16")
    data = repack(make_docx(), [deflated("word/document.xml", utf16)])
    assert "First body paragraph." in DocxHandler().parse(data, "utf16.docx").text
    core = _member(make_docx(), "docProps/core.xml").split(b"?>", 1)[1]
    padded = repack(make_docx(), [deflated("docProps/core.xml", b" \n" * 200_000 + core)])
    assert "First body paragraph." in DocxHandler().parse(padded, "padded.docx").text


SST = b'<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'


@pytest.mark.parametrize(
    ("member", "body"),
    [
        (WORKSHEET, SHEET[0] + b"<a>" * 300 + b"</a>" * 300 + SHEET[1]),
        ("xl/sharedStrings.xml", SST + b"<si>" + b"<r>" * 300 + b"</r>" * 300 + b"</si></sst>"),
    ],
    ids=["worksheet", "shared-strings"],
)
def test_nesting_deeper_than_the_limit_is_refused_where_expat_reads(
    member: str, body: bytes
) -> None:
    """openpyxl reads worksheets and shared strings with expat, which nests without end:
    past ``xml_max_depth`` (256, libxml2's own default) the pre-scan refuses them."""
    data = xlsx_with(make_xlsx(), [deflated(member, body)], shared_strings=True)
    error = _refused(XlsxHandler(), data)
    assert error.code == "too_large"
    assert f"XML part {member!r} nests elements deeper than 256 levels" in str(error)
    assert "(limit xml_max_depth=256)" in str(error)


@pytest.mark.parametrize(
    ("handler_type", "package", "member", "body"),
    [
        (
            DocxHandler,
            make_docx(),
            "word/document.xml",
            _document(b"<w:sdt>" * 300 + b"</w:sdt>" * 300),
        ),
        (XlsxHandler, make_xlsx(), "xl/styles.xml", b"<a>" * 300 + b"</a>" * 300),
    ],
    ids=["docx-body", "xlsx-styles"],
)
def test_nesting_deeper_than_libxml2_reads_is_parse_failed(
    handler_type: type[Handler], package: bytes, member: str, body: bytes
) -> None:
    """Parts a library parses with libxml2 are held to its 256 levels by libxml2 itself."""
    error = _refused(handler_type(), repack(package, [deflated(member, body)]))
    assert error.code == "parse_failed"
    assert "Excessive depth in document: 256" in str(error)


# -- XML: elements and bytes the library keeps --------------------------------------------------


@pytest.mark.parametrize(
    ("handler_type", "package", "member", "body"),
    [
        (DocxHandler, make_docx(), "word/document.xml", _document(b"<w:p/>" * 9000)),
        (
            XlsxHandler,
            make_xlsx(),
            "xl/styles.xml",
            b'<styleSheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
            + b"<numFmts/>" * 9000
            + b"</styleSheet>",
        ),
        (
            PptxHandler,
            make_pptx(),
            "ppt/slides/slide2.xml",
            _member(make_pptx(), "ppt/slides/slide2.xml").replace(
                b"</p:spTree>", b"<p:sp/>" * 9000 + b"</p:spTree>"
            ),
        ),
    ],
    ids=["docx-paragraphs", "xlsx-styles", "pptx-shapes"],
)
def test_elements_past_the_limit_are_refused_before_the_library(
    handler_type: type[Handler], package: bytes, member: str, body: bytes
) -> None:
    """More elements than ``xml_max_elements`` stop the scan, naming the part."""
    limits = DocumentLimits(xml_max_elements=8000)
    error = _refused(handler_type(limits), repack(package, [deflated(member, body)]))
    assert error.code == "too_large"
    assert f"more than 8,000 XML elements to parse (stopped in part {member!r})" in str(error)
    assert "(limit xml_max_elements=8,000)" in str(error)


def test_comments_are_not_held_against_a_part() -> None:
    """The fast bound counts every ``<``; a part it puts over the limit is counted again
    exactly, and a part of comments and few elements parses."""
    comments = deflated("customXml/item9.xml", b"<a>" + b"<!-- <b/> -->" * 9000 + b"</a>")
    limits = DocumentLimits(xml_max_elements=20_000)  # the DOCX itself has 18,753
    parsed = DocxHandler(limits).parse(repack(make_docx(), [comments]), "comments.docx")
    assert "First body paragraph." in parsed.text


def test_elements_are_counted_across_parts() -> None:
    """Many parts each under the limit add up: the budget is the document's."""
    parts = [
        deflated(f"customXml/item{i}.xml", b"<a>" + b"<b/>" * 400 + b"</a>") for i in range(10)
    ]
    limits = DocumentLimits(xml_max_elements=3000)
    error = _refused(DocxHandler(limits), repack(make_docx(), parts))
    assert error.code == "too_large"
    assert "(limit xml_max_elements=3,000)" in str(error)


def test_xml_bytes_past_the_limit_are_refused() -> None:
    """One huge text node (few elements) is bounded by ``xml_max_bytes``."""
    body = b"<w:p><w:r><w:t>" + b"lorem ipsum " * 100_000 + b"</w:t></w:r></w:p>"
    limits = DocumentLimits(xml_max_bytes=1_000_000, zip_max_ratio=RELAXED)
    error = _refused(DocxHandler(limits), docx_with_body(make_docx(), body))
    assert error.code == "too_large"
    assert "bytes of XML to parse" in str(error)
    assert "(limit xml_max_bytes=1,000,000)" in str(error)


@pytest.mark.parametrize(("handler_type", "package", "suffix"), OOXML, ids=OOXML_IDS)
def test_media_past_the_loaded_limit_is_refused(
    handler_type: type[Handler], package: bytes, suffix: str
) -> None:
    """Members the library holds whole (media too: python-pptx reads every member) are
    bounded by ``zip_max_loaded_bytes``."""
    media = deflated(f"media/blob.{suffix}.bin", random.Random(1).randbytes(2_000_000))
    limits = DocumentLimits(zip_max_loaded_bytes=1_500_000)
    error = _refused(handler_type(limits), repack(package, [media]))
    assert error.code == "too_large"
    assert "inflated bytes to hold in memory" in str(error)
    assert "(limit zip_max_loaded_bytes=1,500,000)" in str(error)


# -- worksheets: rows are streamed, everything else counts --------------------------------------


def _rows(count: int, cells: int = 10) -> bytes:
    return b"".join(
        b'<row r="%d">' % r + b"<c><v>%d</v></c>" % r * cells + b"</row>"
        for r in range(1, count + 1)
    )


def test_worksheet_rows_are_streamed_not_counted() -> None:
    """A worksheet far over ``xml_max_elements`` parses: openpyxl streams its rows."""
    sheet = deflated(WORKSHEET, SHEET[0] + _rows(300) + SHEET[1])
    parsed = XlsxHandler(DocumentLimits(xml_max_elements=1000)).parse(
        xlsx_with(make_xlsx(), [sheet]), "rows.xlsx"
    )
    assert parsed.text.startswith("1\t1\t1\t1\t1\t1\t1\t1\t1\t1\n2\t2")


def _styles_as_worksheet() -> list[ZipMember]:
    return [deflated("xl/styles.xml", SHEET[0] + _rows(300) + SHEET[1])]


def _strings_as_worksheet() -> list[ZipMember]:
    return [deflated("xl/sharedStrings.xml", SHEET[0] + _rows(300) + SHEET[1])]


def _retyped_worksheet() -> list[ZipMember]:
    types = _member(make_xlsx(), "[Content_Types].xml").replace(
        b"spreadsheetml.worksheet+xml", b"spreadsheetml.sharedStrings+xml", 1
    )
    return [
        deflated(WORKSHEET, SHEET[0] + _rows(300) + SHEET[1]),
        deflated("[Content_Types].xml", types),
    ]


def _chartsheet_target() -> list[ZipMember]:
    rels = _member(make_xlsx(), "xl/_rels/workbook.xml.rels").replace(
        b"</Relationships>",
        b'<Relationship Id="rX" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
        b'relationships/chartsheet" Target="worksheets/sheet1.xml"/></Relationships>',
    )
    return [
        deflated(WORKSHEET, SHEET[0] + _rows(300) + SHEET[1]),
        deflated("xl/_rels/workbook.xml.rels", rels),
    ]


def _orphan_worksheet() -> list[ZipMember]:
    return [deflated("xl/worksheets/orphan.xml", SHEET[0] + _rows(300) + SHEET[1])]


@pytest.mark.parametrize(
    "members",
    [
        _styles_as_worksheet,
        _strings_as_worksheet,
        _retyped_worksheet,
        _chartsheet_target,
        _orphan_worksheet,
    ],
    ids=[
        "styles-fixed-name",
        "shared-strings-fixed-name",
        "content-type",
        "chartsheet-rel",
        "no-relationship",
    ],
)
def test_rows_of_a_part_openpyxl_may_keep_whole_are_counted(members: object) -> None:
    """A part dressed up as a worksheet is streamed only if every way openpyxl reaches it
    makes it a worksheet; otherwise its rows count as elements kept in memory."""
    data = xlsx_with(make_xlsx(), members())  # type: ignore[operator]
    error = _refused(XlsxHandler(DocumentLimits(xml_max_elements=1000)), data)
    assert error.code == "too_large"
    assert "(limit xml_max_elements=1,000)" in str(error)


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (b'<row r="1">' + b"<c><v>1</v></c>" * 16_385 + b"</row>", "more than 16,384 cells"),
        (
            b'<row r="1"><c t="inlineStr"><is>' + b"<r><t>x</t></r>" * 140_000 + b"</is></c></row>",
            "more than 262,144 elements",
        ),
        (
            b'<row r="1"><c t="inlineStr"><is><t>'
            + b"x" * (33 * 1024 * 1024)
            + b"</t></is></c></row>",
            "more than 33,554,432 bytes",
        ),
    ],
    ids=["cells", "elements", "bytes"],
)
def test_a_row_openpyxl_would_hold_whole_is_bounded(rows: bytes, message: str) -> None:
    """openpyxl builds one row at a time: a row is held to a full Excel row's size."""
    member = repeated(WORKSHEET, rows, 1, prefix=SHEET[0], suffix=SHEET[1])
    error = _refused(XlsxHandler(RELAXED_RATIO), xlsx_with(make_xlsx(), [member]))
    assert error.code == "too_large"
    assert f"row 1 of worksheet '{WORKSHEET}' holds {message}" in str(error)


@pytest.mark.parametrize(
    "root",
    [b"<sheet", b"<x:worksheet xmlns:x='urn:not-spreadsheetml'"],
    ids=["other-root", "other-namespace"],
)
def test_a_row_is_bounded_whatever_the_root(root: bytes) -> None:
    """openpyxl finds rows wherever they are: a worksheet in disguise is no escape from
    the row limits (the fast count hands any part with a ``row`` to the full scan)."""
    head = SHEET[0].replace(b"<worksheet", root)
    tail = b"</sheetData></sheet>" if root == b"<sheet" else b"</sheetData></x:worksheet>"
    member = repeated(
        WORKSHEET,
        b"<c><v>1</v></c>" * 16_385,
        1,
        prefix=head + b'<row r="1">',
        suffix=b"</row>" + tail,
    )
    error = _refused(XlsxHandler(RELAXED_RATIO), xlsx_with(make_xlsx(), [member]))
    assert error.code == "too_large"
    assert f"row 1 of worksheet '{WORKSHEET}' holds more than 16,384 cells" in str(error)


def test_more_rows_than_a_worksheet_holds_are_refused() -> None:
    """More than 1,048,576 rows (empty ``<row/>``, which openpyxl keeps) is refused."""
    member = repeated(WORKSHEET, b"<row/>" * 4096, 257, prefix=SHEET[0], suffix=SHEET[1])
    error = _refused(XlsxHandler(RELAXED_RATIO), xlsx_with(make_xlsx(), [member]))
    assert error.code == "too_large"
    assert "has more than 1,048,576 rows" in str(error)


def test_declared_dimension_of_a_whole_sheet_costs_nothing() -> None:
    """``A1:XFD1048576`` declared, two cells stored: read quickly, the text holds both."""
    body = (
        SHEET[0].replace(b"<sheetData>", b'<dimension ref="A1:XFD1048576"/><sheetData>')
        + b'<row r="1"><c r="A1" t="inlineStr"><is><t>first</t></is></c></row>'
        + b'<row r="1048576"><c r="XFD1048576" t="inlineStr"><is><t>last</t></is></c></row>'
        + SHEET[1]
    )
    parsed = XlsxHandler().parse(xlsx_with(make_xlsx(), [deflated(WORKSHEET, body)]), "wide.xlsx")
    text = parsed.text
    assert text.startswith("first\n")
    assert "\t" * 16_383 + "last" in text


# -- text that repeats ----------------------------------------------------------------------------


def test_one_shared_string_in_every_cell_stops_at_the_text_limit() -> None:
    """A 30 KB shared string referenced by a row of cells stops before the row is built."""
    strings = deflated(
        "xl/sharedStrings.xml",
        b'<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><si><t>'
        + b"y" * 30_000
        + b"</t></si></sst>",
    )
    row = b'<row r="1">' + b'<c t="s"><v>0</v></c>' * 16_000 + b"</row>"
    sheet = deflated(WORKSHEET, SHEET[0] + row + SHEET[1])
    limits = DocumentLimits(max_text_chars=1_000_000)
    data = xlsx_with(make_xlsx(), [strings, sheet], shared_strings=True)
    error = _refused(XlsxHandler(limits), data)
    assert error.code == "too_large"
    assert "more than 1,000,000 characters of text (stopped at row 1 of sheet 'Data')" in str(error)
    assert "(limit max_text_chars=1,000,000)" in str(error)


def test_docx_text_stops_at_the_text_limit() -> None:
    """DOCX text is charged paragraph by paragraph."""
    data = docx_with_body(make_docx(), b"<w:p><w:r><w:t>" + b"z" * 1000 + b"</w:t></w:r></w:p>", 50)
    error = _refused(DocxHandler(DocumentLimits(max_text_chars=20_000)), data)
    assert error.code == "too_large"
    assert "characters of text (stopped at paragraph or table row" in str(error)


def test_pptx_text_stops_at_the_text_limit() -> None:
    """PPTX text is charged slide by slide."""
    error = _refused(PptxHandler(DocumentLimits(max_text_chars=20)), make_pptx())
    assert error.code == "too_large"
    assert "characters of text (stopped at slide 1 of 2)" in str(error)


def test_a_huge_grid_span_pads_a_row_no_wider_than_a_table() -> None:
    """``gridSpan="999999999"`` pads at most Word's 63 columns (it once built a list of
    a billion empty cells)."""
    table = (
        b'<w:tbl><w:tr><w:tc><w:tcPr><w:gridSpan w:val="999999999"/></w:tcPr>'
        b"<w:p><w:r><w:t>wide</w:t></w:r></w:p></w:tc>"
        b"<w:tc><w:p><w:r><w:t>next</w:t></w:r></w:p></w:tc></w:tr></w:tbl>"
    )
    parsed = DocxHandler().parse(docx_with_body(make_docx(), table), "span.docx")
    assert "wide" + "\t" * 63 + "next" in parsed.text
