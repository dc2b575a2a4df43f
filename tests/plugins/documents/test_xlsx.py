"""XLSX: sheets as sections, real cell extent, hidden sheets, odd workbooks."""

from __future__ import annotations

import io
import re
import time
import zipfile

import openpyxl
import pytest
from openpyxl.chart import BarChart, Reference
from taskctx_documents import DocumentLimits, XlsxHandler
from taskctx_documents.xlsx import format_value

from taskctx.errors import MediaError
from tests.plugins.documents.builders import make_xlsx, replace_zip_member
from tests.plugins.documents.helpers import section_texts


def _workbook_bytes(workbook: openpyxl.Workbook) -> bytes:
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


def test_one_section_per_sheet_hidden_included() -> None:
    """Every sheet, hidden and empty ones too, is a ``sheet:<name>`` section in book order."""
    parsed = XlsxHandler().parse(make_xlsx(), "book.xlsx")
    assert [(s.scope, s.title) for s in parsed.sections] == [
        ("sheet:Data", "Data"),
        ("sheet:Secret", "Secret"),
        ("sheet:Blank", "Blank"),
    ]
    texts = section_texts(parsed)
    assert texts["sheet:Secret"] == "\thidden value\n"
    assert texts["sheet:Blank"] == ""
    assert parsed.metadata["hidden_sheets"] == ["Secret"]


def test_rows_are_tab_separated_and_blank_rows_dropped() -> None:
    """Rows keep their columns, end at their last value; blank rows and cell breaks vanish."""
    parsed = XlsxHandler().parse(make_xlsx(), "book.xlsx")
    data = section_texts(parsed)["sheet:Data"]
    lines = data.splitlines()
    assert lines[:5] == [
        "Name\tQty\tPrice",
        "Apple\t3\t1.5",
        "Pear\t\t2",
        "after a gap",
        "\t\tmulti line cell",
    ]
    assert lines[5] == "\t" * 25 + "far away"  # column Z, row 500
    assert len(lines) == 6


def test_far_away_cell_is_read_quickly() -> None:
    """A value in the last cell of the grid (XFD1048576) is found, within a few seconds."""
    data = make_xlsx(far_cell="XFD1048576")
    started = time.monotonic()
    parsed = XlsxHandler().parse(data, "far.xlsx")
    assert time.monotonic() - started < 10
    assert parsed.text.splitlines()[5] == "\t" * 16383 + "far away"


def test_declared_dimension_is_not_trusted() -> None:
    """A sheet declaring ``A1:XFD1048576`` around three cells parses to those cells, fast."""
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.append(["a", "b", "c"])
    data = _workbook_bytes(workbook)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        xml = archive.read("xl/worksheets/sheet1.xml").decode()
    xml, count = re.subn(r'<dimension ref="[^"]*"', '<dimension ref="A1:XFD1048576"', xml)
    assert count == 1
    data = replace_zip_member(data, "xl/worksheets/sheet1.xml", xml.encode())
    started = time.monotonic()
    parsed = XlsxHandler().parse(data, "dimension.xlsx")
    assert time.monotonic() - started < 5
    assert parsed.text == "a\tb\tc\n"


def test_cached_formula_values_not_formulas() -> None:
    """Formulas contribute their cached value; openpyxl-written ones have none."""
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.append([1, 2, "=A1+B1", "label"])
    parsed = XlsxHandler().parse(_workbook_bytes(workbook), "formula.xlsx")
    assert parsed.text == "1\t2\t\tlabel\n"


def test_chartsheet_is_an_empty_section() -> None:
    """A chartsheet has no cells: its section exists and is empty."""
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.append(["numbers", 1, 2, 3])
    chart = BarChart()
    chart.add_data(Reference(sheet, min_col=2, max_col=4, min_row=1), from_rows=True)
    workbook.create_chartsheet("Chart").add_chart(chart)
    parsed = XlsxHandler().parse(_workbook_bytes(workbook), "chart.xlsx")
    assert section_texts(parsed)["sheet:Chart"] == ""
    assert parsed.metadata["chartsheets"] == ["Chart"]


def test_empty_workbook_is_no_text() -> None:
    """A workbook with no cell values is ``no_text``."""
    with pytest.raises(MediaError) as caught:
        XlsxHandler().parse(_workbook_bytes(openpyxl.Workbook()), "empty.xlsx")
    assert caught.value.code == "no_text"
    assert "1 sheet(s)" in str(caught.value)


def test_too_many_cells_is_too_large() -> None:
    """More stored cells than ``max_cells`` is ``too_large`` before openpyxl runs."""
    handler = XlsxHandler(DocumentLimits(max_cells=5))
    with pytest.raises(MediaError) as caught:
        handler.parse(make_xlsx(), "big.xlsx")
    assert caught.value.code == "too_large"
    assert "row 2 of worksheet part 'xl/worksheets/sheet1.xml'" in str(caught.value)
    assert "(limit max_cells=5)" in str(caught.value)


def test_too_many_examined_cells_is_too_large() -> None:
    """Cells examined (blank rows, padding) past ``max_cells`` name the sheet and row."""
    handler = XlsxHandler(DocumentLimits(max_cells=20))
    with pytest.raises(MediaError) as caught:
        handler.parse(make_xlsx(), "big.xlsx")
    assert caught.value.code == "too_large"
    assert "stopped at row 13 of sheet 'Data'" in str(caught.value)
    assert "(limit max_cells=20)" in str(caught.value)


def test_xlsm_is_handled() -> None:
    """Macro-enabled workbooks share the handler and keep their own media type."""
    handler = XlsxHandler()
    assert "xlsm" in handler.suffixes
    parsed = handler.parse(make_xlsx(), "macros.XLSM")
    assert parsed.media_type == "application/vnd.ms-excel.sheet.macroenabled.12"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, ""),
        (True, "True"),
        (12, "12"),
        (1.5, "1.5"),
        ("two\nlines\tand tab", "two lines and tab"),
    ],
)
def test_format_value(value: object, text: str) -> None:
    """Cell values become one-line text."""
    assert format_value(value) == text


def test_datetime_value() -> None:
    """Dates are ISO with a space separator."""
    from datetime import datetime

    assert format_value(datetime(2024, 5, 1, 8, 30)) == "2024-05-01 08:30:00"
