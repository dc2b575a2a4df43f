"""XLSX/XLSM: one ``sheet:<name>`` section per sheet, rows as tab-separated values.

openpyxl reads in read-only mode with cached formula values (``data_only``). A sheet's
declared dimension is ignored (some writers declare ``A1:XFD1048576``): rows are
iterated as they are stored and each is cut after its last non-empty cell; blank rows
are left out. Hidden and very hidden sheets are included; a chartsheet has no cells
and is an empty section. Tabs and newlines inside a cell become spaces so that one
line is one row.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import openpyxl
from openpyxl.worksheet._read_only import ReadOnlyWorksheet

from taskctx.codes import ProblemCode
from taskctx.errors import MediaError
from taskctx.protocols import ParsedDocument
from taskctx_documents._boundary import ParseLog
from taskctx_documents._handler import HandlerBase
from taskctx_documents._inflate import Package
from taskctx_documents._roles import streamed_worksheets
from taskctx_documents._text import TextBudget, TextBuilder
from taskctx_documents.formats import by_name
from taskctx_documents.limits import Deadline, over_limit

__all__ = ["XlsxHandler"]

FORMAT_VERSION = "1"
"""Bumped whenever this module changes the text or sections it produces."""

STRICT_NAMESPACE = b"http://purl.oclc.org/ooxml/spreadsheetml/main"
"""The Strict Open XML namespace openpyxl does not read (it sees no sheets at all)."""


def format_value(value: object) -> str:
    """One cell's value as text: ``True``, ``12``, ``1.5``, ``2024-05-01 00:00:00``."""
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    text = str(value)  # numbers, booleans, dates, times, rich text, error values (#VALUE!)
    return " ".join(text.replace("\t", " ").splitlines())


def _row_text(row: Sequence[object], room: int) -> str | None:
    """The row as tab-separated values; None once its cells hold more than ``room``
    characters (one shared string may fill every cell: stop before the row is built).
    Cells are formatted :data:`ROW_SLICE` at a time, so the check costs little."""
    if len(row) <= ROW_SLICE:
        cells = [format_value(value) for value in row]
        if sum(map(len, cells)) + len(cells) > room:
            return None
    else:
        cells = []
        size = 0
        for start in range(0, len(row), ROW_SLICE):
            texts = [format_value(value) for value in row[start : start + ROW_SLICE]]
            size += sum(map(len, texts)) + len(texts)
            if size > room:
                return None
            cells.extend(texts)
    while cells and not cells[-1].strip():
        cells.pop()
    return "\t".join(cells)


ROW_SLICE = 1024
"""Cells formatted between two checks of the text budget (at most 32 MiB past it)."""


class XlsxHandler(HandlerBase):
    """FileIOHandler for Excel workbooks (OOXML, macro-enabled too), on openpyxl.

    Every sheet's rows, one ``sheet:<name>`` section each; ``MediaError`` on failure.
    """

    FORMAT = by_name("xlsx")
    LABEL = "XLSX"
    FORMAT_VERSION = FORMAT_VERSION
    LIBRARY = "openpyxl"
    LIBRARY_VERSION = openpyxl.__version__

    def _streamed_parts(self, package: Package) -> frozenset[str]:
        """The worksheets openpyxl streams row by row (see :mod:`taskctx_documents._roles`)."""
        return streamed_worksheets(package)

    def _parse(self, data: bytes, path: str, log: ParseLog, deadline: Deadline) -> ParsedDocument:
        budget = TextBudget(self.limits.max_text_chars, path)
        workbook = openpyxl.load_workbook(
            io.BytesIO(data), read_only=True, data_only=True, keep_links=False
        )
        try:
            names = list(workbook.sheetnames)
            if not names:
                raise MediaError(
                    f"{path}: cannot parse XLSX: {_why_no_sheets(data)}", ProblemCode.PARSE_FAILED
                )
            builder = TextBuilder()
            cells = 0
            hidden: list[str] = []
            charts: list[str] = []
            # workbook[name] rebuilds the name list on every lookup (quadratic in sheets);
            # the private list holds worksheets and chartsheets in workbook order
            every: list[object] = list(getattr(workbook, "_sheets", None) or [])
            if [getattr(sheet, "title", None) for sheet in every] != names:
                every = [workbook[name] for name in names]
            for name, sheet in zip(names, every, strict=True):
                if getattr(sheet, "sheet_state", "visible") != "visible":
                    hidden.append(name)
                lines: list[str] = []
                if isinstance(sheet, ReadOnlyWorksheet):
                    cells = self._rows(sheet, lines, cells, path, deadline, budget)
                else:
                    charts.append(name)  # a chartsheet: no cells
                builder.add(name, f"sheet:{name}", "\n".join(lines))
        finally:
            workbook.close()
        metadata: dict[str, Any] = {
            "sheets": len(names),
            "hidden_sheets": hidden,
            "chartsheets": charts,
            "cells_examined": cells,
            "warnings": log.warnings(),
        }
        return builder.build(
            path=path,
            media_type=self.media_types[1 if path.lower().endswith(".xlsm") else 0],
            empty_reason=f"none of its {len(names)} sheet(s) holds a cell value",
            metadata=metadata,
        )

    def _rows(
        self,
        sheet: ReadOnlyWorksheet,
        lines: list[str],
        cells: int,
        path: str,
        deadline: Deadline,
        budget: TextBudget,
    ) -> int:
        """Append ``sheet``'s non-blank rows to ``lines``; return the running cell count."""
        sheet.reset_dimensions()  # never trust the declared <dimension>
        limit = self.limits.max_cells
        next_check = cells
        for number, row in enumerate(sheet.values, start=1):
            if cells >= next_check:  # the clock and the message cost per row
                deadline.check(f"row {number} of sheet {sheet.title!r}")
                next_check = cells + CLOCK_EVERY_CELLS
            width = len(row)
            cells += width or 1
            if cells > limit:
                raise over_limit(
                    path,
                    f"more than {limit:,} cells to examine (stopped at row {number} of sheet "
                    f"{sheet.title!r})",
                    "max_cells",
                    limit,
                )
            if not width:  # openpyxl yields () for a row it read no cell of
                continue
            text = _row_text(row, budget.remaining)
            if text is None:
                budget.exhausted(f"row {number} of sheet {sheet.title!r}")
            elif text.strip():
                budget.charge(len(text) + 1, "a row")  # fits: _row_text measured it
                lines.append(text)
        return cells


CLOCK_EVERY_CELLS = 4096
"""Cells examined between two wall-clock checks (the first row of a sheet is checked)."""


def _why_no_sheets(data: bytes) -> str:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        try:
            workbook = archive.read("xl/workbook.xml")
        except KeyError:
            workbook = b""
    if STRICT_NAMESPACE in workbook:
        return (
            "Strict Open XML workbook (namespace purl.oclc.org/ooxml): openpyxl reads only "
            "Transitional OOXML and finds no sheets in it"
        )
    return "the workbook lists no sheets openpyxl can read"
