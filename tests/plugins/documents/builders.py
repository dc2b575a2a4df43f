"""Small documents built in memory with the libraries themselves, for the handler tests."""

from __future__ import annotations

import io
import struct
import zipfile
from functools import cache

import docx
import openpyxl
import pptx
from pptx.util import Inches
from pypdf import PdfReader, PdfWriter
from taskctx_documents.testing import minimal_pdf as make_pdf

__all__ = [
    "add_zip_member",
    "encrypt_pdf",
    "forge_declared_size",
    "make_docx",
    "make_pdf",
    "make_pptx",
    "make_xlsx",
    "replace_zip_member",
]


def encrypt_pdf(data: bytes, user_password: str, owner_password: str = "owner-secret") -> bytes:
    """``data`` encrypted with AES-128 by pypdf."""
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    writer.encrypt(user_password=user_password, owner_password=owner_password, algorithm="AES-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


@cache
def make_docx() -> bytes:
    """Preamble, headings (one repeated), a table between paragraphs, header and footer."""
    document = docx.Document()
    document.add_paragraph("Intro before any heading.")
    document.add_heading("Overview", level=1)
    document.add_paragraph("First body paragraph.")
    table = document.add_table(rows=2, cols=3)
    for r, row in enumerate(table.rows):
        for c, cell in enumerate(row.cells):
            cell.text = f"r{r}c{c}"
    document.add_paragraph("After the table.")
    document.add_heading("Details", level=2)
    document.add_paragraph("Detail text.\twith a tab")
    document.add_heading("Overview", level=1)
    document.add_paragraph("Second overview.")
    section = document.sections[0]
    section.header.paragraphs[0].text = "Header text"
    section.footer.paragraphs[0].text = "Footer text"
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


@cache
def make_xlsx(far_cell: str = "Z500") -> bytes:
    """Sheet ``Data`` (rows, a gap, a cell far away), hidden ``Secret``, empty ``Blank``."""
    workbook = openpyxl.Workbook()
    data = workbook.active
    assert data is not None
    data.title = "Data"
    data.append(["Name", "Qty", "Price"])
    data.append(["Apple", 3, 1.5])
    data.append(["Pear", None, 2])
    data["A10"] = "after a gap"
    data["C12"] = "multi\nline\tcell"
    data[far_cell] = "far away"
    secret = workbook.create_sheet("Secret")
    secret["B2"] = "hidden value"
    secret.sheet_state = "hidden"
    workbook.create_sheet("Blank")
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


@cache
def make_pptx(extra_slides: int = 0) -> bytes:
    """Slide 1: title, text box with a line break, table, group, notes; slide 2: one box."""
    presentation = pptx.Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[5])  # title only
    assert slide.shapes.title is not None
    slide.shapes.title.text = "Quarterly results"
    box = slide.shapes.add_textbox(Inches(1), Inches(1.5), Inches(4), Inches(1))
    box.text_frame.text = "Revenue grew\vin every region"
    frame = slide.shapes.add_table(2, 2, Inches(1), Inches(3), Inches(4), Inches(1))
    for r, row in enumerate(frame.table.rows):
        for c, cell in enumerate(row.cells):
            cell.text = f"t{r}{c}"
    group = slide.shapes.add_group_shape()
    inner = group.shapes.add_textbox(Inches(5), Inches(1), Inches(2), Inches(1))
    inner.text_frame.text = "Inside the group"
    nested = group.shapes.add_group_shape()
    deep = nested.shapes.add_textbox(Inches(5), Inches(2), Inches(2), Inches(1))
    deep.text_frame.text = "Deep in a nested group"
    assert slide.notes_slide.notes_text_frame is not None
    slide.notes_slide.notes_text_frame.text = "Speaker notes here"
    for number in range(2, 3 + extra_slides):
        other = presentation.slides.add_slide(presentation.slide_layouts[6])  # blank
        text = other.shapes.add_textbox(Inches(1), Inches(1), Inches(4), Inches(1))
        text.text_frame.text = f"Slide number {number}"
    out = io.BytesIO()
    presentation.save(out)
    return out.getvalue()


def add_zip_member(data: bytes, name: str, content: bytes) -> bytes:
    """``data`` (a ZIP) with one more deflated member."""
    buffer = io.BytesIO(data)
    with zipfile.ZipFile(buffer, "a", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(name, content)
    return buffer.getvalue()


def replace_zip_member(data: bytes, name: str, content: bytes) -> bytes:
    """``data`` (a ZIP) with member ``name`` replaced by ``content``."""
    source = zipfile.ZipFile(io.BytesIO(data))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            body = content if info.filename == name else source.read(info.filename)
            archive.writestr(info.filename, body)
    return buffer.getvalue()


def forge_declared_size(data: bytes, name: str, size: int) -> bytes:
    """``data`` (a ZIP) whose central directory claims ``size`` uncompressed bytes for ``name``."""
    out = bytearray(data)
    encoded = name.encode()
    position = out.find(b"PK\x01\x02")
    while position >= 0:
        name_length = struct.unpack_from("<H", out, position + 28)[0]
        if bytes(out[position + 46 : position + 46 + name_length]) == encoded:
            struct.pack_into("<I", out, position + 24, size)
            return bytes(out)
        position = out.find(b"PK\x01\x02", position + 4)
    raise KeyError(name)
