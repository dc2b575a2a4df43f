"""DOCX: body order, heading sections, tables, headers and footers, odd markup."""

from __future__ import annotations

import io
import zipfile

import docx
import pytest
from docx.oxml import parse_xml
from taskctx_documents import DocxHandler

from taskctx.errors import MediaError
from tests.plugins.documents.builders import make_docx, replace_zip_member
from tests.plugins.documents.helpers import section_texts

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def _docx_with_body(body_xml: str) -> bytes:
    """A python-docx document whose body is replaced by ``body_xml`` (w: prefixed)."""
    document = docx.Document()
    body = document.element.body
    for child in list(body):
        if not child.tag.endswith("sectPr"):
            body.remove(child)
    fragment = parse_xml(
        f'<w:body xmlns:w="{W}" '
        'xmlns:m="http://schemas.openxmlformats.org/officeDocument/2006/math" '
        'xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006" '
        'xmlns:wps="http://schemas.microsoft.com/office/word/2010/wordprocessingShape" '
        'xmlns:v="urn:schemas-microsoft-com:vml">'
        f"{body_xml}</w:body>"
    )
    for index, child in enumerate(fragment):
        body.insert(index, child)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def test_sections_follow_headings() -> None:
    """Preamble, one section per heading with its level, repeats made unique, margins last."""
    parsed = DocxHandler().parse(make_docx(), "report.docx")
    assert [(s.scope, s.title, s.level) for s in parsed.sections] == [
        ("section:(preamble)", "(preamble)", 1),
        ("section:Overview", "Overview", 1),
        ("section:Details", "Details", 2),
        ("section:Overview (2)", "Overview (2)", 1),
        ("section:(headers and footers)", "(headers and footers)", 1),
    ]
    texts = section_texts(parsed)
    assert texts["section:(preamble)"] == "Intro before any heading.\n"
    assert texts["section:Details"] == "Details\nDetail text.\twith a tab\n"
    assert texts["section:(headers and footers)"] == "Header text\nFooter text\n"
    assert parsed.metadata["headings"] == 3


def test_table_stays_between_its_paragraphs() -> None:
    """A table's rows (tab-separated cells) sit where the table is in the body."""
    parsed = DocxHandler().parse(make_docx(), "report.docx")
    assert section_texts(parsed)["section:Overview"] == (
        "Overview\nFirst body paragraph.\nr0c0\tr0c1\tr0c2\nr1c0\tr1c1\tr1c2\nAfter the table.\n"
    )


def test_document_without_headings_is_one_preamble() -> None:
    """With no heading at all, the whole body is the preamble section."""
    document = docx.Document()
    document.add_paragraph("Only a paragraph.")
    out = io.BytesIO()
    document.save(out)
    parsed = DocxHandler().parse(out.getvalue(), "plain.docx")
    assert [s.scope for s in parsed.sections] == ["section:(preamble)"]
    assert parsed.text == "Only a paragraph.\n"


def test_document_starting_with_a_heading_has_no_preamble() -> None:
    """No empty preamble section is made when the first block is a heading."""
    document = docx.Document()
    document.add_heading("Start", level=1)
    document.add_paragraph("Body.")
    out = io.BytesIO()
    document.save(out)
    parsed = DocxHandler().parse(out.getvalue(), "start.docx")
    assert [s.scope for s in parsed.sections] == ["section:Start"]


def test_inline_markup_is_read() -> None:
    """Hyperlinks, insertions, content controls, breaks and equations count; deletions do not."""
    body = (
        "<w:p>"
        "<w:r><w:t>Visit </w:t></w:r>"
        '<w:hyperlink><w:r><w:t xml:space="preserve">the site</w:t></w:r></w:hyperlink>'
        "<w:ins><w:r><w:t> now</w:t></w:r></w:ins>"
        "<w:del><w:r><w:delText> never</w:delText></w:r></w:del>"
        "<w:r><w:br/><w:t>next line</w:t><w:tab/><w:t>tabbed</w:t></w:r>"
        "</w:p>"
        "<w:sdt><w:sdtContent><w:p><w:r><w:t>In a content control</w:t></w:r></w:p>"
        "</w:sdtContent></w:sdt>"
        "<w:p><w:r><w:t>Area: </w:t></w:r>"
        "<m:oMath><m:r><m:t>A=πr</m:t></m:r></m:oMath></w:p>"
        '<w:p><w:r><w:fldChar w:fldCharType="begin"/></w:r>'
        '<w:r><w:instrText xml:space="preserve"> PAGE </w:instrText></w:r>'
        '<w:r><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:t>7</w:t></w:r>'
        '<w:r><w:fldChar w:fldCharType="end"/></w:r></w:p>'
    )
    parsed = DocxHandler().parse(_docx_with_body(body), "markup.docx")
    assert parsed.text == (
        "Visit the site now\nnext line\ttabbed\nIn a content control\nArea: A=πr\n7\n"
    )


def test_text_box_is_read_once() -> None:
    """A text box (stored as a drawing and a VML fallback) follows its anchor, once."""
    box = "<w:txbxContent><w:p><w:r><w:t>Boxed text</w:t></w:r></w:p></w:txbxContent>"
    body = (
        "<w:p><w:r><w:t>Anchor</w:t></w:r><w:r><mc:AlternateContent>"
        f'<mc:Choice Requires="wps"><w:drawing><wps:txbx>{box}</wps:txbx></w:drawing></mc:Choice>'
        f"<mc:Fallback><w:pict><v:textbox>{box}</v:textbox></w:pict></mc:Fallback>"
        "</mc:AlternateContent></w:r></w:p>"
        "<w:p><w:r><w:t>After</w:t></w:r></w:p>"
    )
    parsed = DocxHandler().parse(_docx_with_body(body), "box.docx")
    assert parsed.text == "Anchor\nBoxed text\nAfter\n"


def test_merged_and_nested_cells() -> None:
    """A spanned cell keeps the columns aligned; a nested table is flattened into its cell."""
    body = (
        "<w:tbl>"
        "<w:tr><w:tc><w:tcPr><w:gridSpan w:val='2'/></w:tcPr><w:p><w:r><w:t>wide</w:t></w:r>"
        "</w:p></w:tc><w:tc><w:p><w:r><w:t>c</w:t></w:r></w:p></w:tc></w:tr>"
        "<w:tr><w:tc><w:p><w:r><w:t>a</w:t></w:r></w:p></w:tc>"
        "<w:tc><w:p><w:r><w:t>b</w:t></w:r></w:p></w:tc>"
        "<w:tc><w:tbl><w:tr><w:tc><w:p><w:r><w:t>in1</w:t></w:r></w:p></w:tc>"
        "<w:tc><w:p><w:r><w:t>in2</w:t></w:r></w:p></w:tc></w:tr></w:tbl>"
        "<w:p><w:r><w:t>after</w:t></w:r></w:p></w:tc></w:tr>"
        "</w:tbl>"
    )
    parsed = DocxHandler().parse(_docx_with_body(body), "cells.docx")
    assert parsed.text == "wide\t\tc\na\tb\tin1 in2 after\n"


def test_empty_document_is_no_text() -> None:
    """A document with no text anywhere is ``no_text``."""
    out = io.BytesIO()
    docx.Document().save(out)
    with pytest.raises(MediaError) as caught:
        DocxHandler().parse(out.getvalue(), "empty.docx")
    assert caught.value.code == "no_text"


def test_missing_main_part_is_parse_failed() -> None:
    """An OOXML package without its document part fails naming the exception type."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
    with pytest.raises(MediaError) as caught:
        DocxHandler().parse(buffer.getvalue(), "hollow.docx")
    assert caught.value.code == "parse_failed"
    assert "hollow.docx: cannot parse DOCX:" in str(caught.value)


def test_malformed_xml_is_parse_failed() -> None:
    """A document part that is not XML fails with the XML error named."""
    data = replace_zip_member(make_docx(), "word/document.xml", b"<w:document")
    with pytest.raises(MediaError) as caught:
        DocxHandler().parse(data, "bad.docx")
    assert caught.value.code == "parse_failed"
    assert "XMLSyntaxError" in str(caught.value)


def test_truncated_package_is_parse_failed() -> None:
    """A cut ZIP is ``parse_failed`` naming BadZipFile."""
    with pytest.raises(MediaError) as caught:
        DocxHandler().parse(make_docx()[:500], "cut.docx")
    assert caught.value.code == "parse_failed"
    assert "BadZipFile" in str(caught.value)
