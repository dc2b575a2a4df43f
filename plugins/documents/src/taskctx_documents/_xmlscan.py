"""The full streaming pre-scan of one XML part, fed chunk by chunk as it is inflated.

expat (``pyexpat``, in C) parses the chunks without building anything; two Python
callbacks count elements and depth. It scans the parts the fast count of
:mod:`taskctx_documents._xmlcount` cannot bound soundly. What it refuses, before any
library parses the part:

- more elements than ``xml_max_elements`` in the whole package (counted across parts
  by a shared :class:`XmlTally`), nesting deeper than ``xml_max_depth``;
- entity declarations (a DTD internal subset): OPC packages never carry them, and
  entities are how a few bytes expand into gigabytes (billion laughs);
- XML that expat cannot read (malformed, or an encoding other than UTF-8, UTF-16 and
  the single-byte ones): what the scan cannot count must not reach a library that can;
- in any part holding SpreadsheetML ``row`` elements (openpyxl finds rows wherever
  they are), more than :data:`XLSX_MAX_ROWS` rows, a row of more than
  :data:`XLSX_MAX_COLUMNS` cells, :data:`ROW_MAX_ELEMENTS` elements or
  :data:`ROW_MAX_BYTES` bytes (openpyxl holds one row at a time), and more cells in the
  package than ``max_cells``.

Elements inside worksheet rows are tallied apart (:attr:`PartScan.row_elements`): openpyxl
streams the rows of a worksheet it reads as one, and holds everything else as a tree.
"""

from __future__ import annotations

import pyexpat
from collections.abc import Callable
from typing import NoReturn

import attrs

from taskctx.codes import ProblemCode
from taskctx.errors import MediaError
from taskctx_documents.limits import MIB, DocumentLimits, over_limit

__all__ = [
    "ROW_MAX_BYTES",
    "ROW_MAX_ELEMENTS",
    "WORKSHEET",
    "XLSX_MAX_COLUMNS",
    "XLSX_MAX_ROWS",
    "PartScan",
    "XmlTally",
    "looks_like_xml",
]

SHEET_NS = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
WORKSHEET = f"{SHEET_NS} worksheet"
"""The root element of a worksheet part, as the scan names it (namespace, space, name)."""
_ROW = f"{SHEET_NS} row"
_CELL = f"{SHEET_NS} c"

XLSX_MAX_ROWS = 1_048_576
"""Rows of an Excel worksheet (a fact of the format, not a limit one may raise)."""
XLSX_MAX_COLUMNS = 16_384
"""Columns of an Excel worksheet: cells in one row."""
ROW_MAX_ELEMENTS = 16 * XLSX_MAX_COLUMNS
"""Elements in one row: every cell of a full row with rich text of a few runs."""
ROW_MAX_BYTES = 32 * MIB
"""Bytes of one row's XML."""

_XML_STARTS = (
    b"<",
    b"\xef\xbb\xbf",  # UTF-8 BOM
    b"\xfe\xff",  # UTF-16 BOMs
    b"\xff\xfe",
    b"\x00\x00\xfe\xff",  # UTF-32BE BOM
    b"\x00<",  # UTF-16BE or UCS-4 without BOM
    b"\x00\x00<",
    b"\x00\x00\x00<",
    b"Lo\xa7\x94",  # "<?xm" in EBCDIC
)
"""How a part may begin for libxml2 or expat to read it as XML (their encoding sniffing)."""
_WHITESPACE = b" \t\r\n"


def looks_like_xml(head: bytes) -> bool | None:
    """Whether a part beginning with ``head`` could be read as XML; None: only whitespace yet."""
    stripped = head.lstrip(_WHITESPACE)
    if not stripped:
        return None
    return head.startswith(_XML_STARTS) or stripped.startswith(_XML_STARTS)


@attrs.define(slots=True)
class XmlTally:
    """Counts shared by every part of one package."""

    elements: int = 0
    """Elements outside worksheet rows, in every part."""
    cells: int = 0
    """Cells (``c`` elements of worksheet rows), in every part."""


class _Stop(Exception):
    """Carries a MediaError out of an expat callback."""

    def __init__(self, error: MediaError) -> None:
        super().__init__(str(error))
        self.error = error


class PartScan:
    """The pre-scan of one XML part: :meth:`feed` its bytes in order, then :meth:`close`.

    The expat callbacks are closures over local state (the hot path: about a microsecond
    per element); inside a worksheet row the parser switches to a second pair of them.
    """

    __slots__ = ("_finish", "_parser", "_path", "_state", "_tally", "name")

    def __init__(self, name: str, path: str, limits: DocumentLimits, tally: XmlTally) -> None:
        self.name = name
        self._path = path
        self._state = _State()
        parser = pyexpat.ParserCreate(namespace_separator=" ")
        parser.SetParamEntityParsing(pyexpat.XML_PARAM_ENTITY_PARSING_NEVER)
        self._parser: pyexpat.XMLParserType | None = parser
        self._finish = self._count_elements(parser, limits, tally)
        parser.EntityDeclHandler = self._entity
        self._tally = tally

    def _count_elements(
        self, parser: pyexpat.XMLParserType, limits: DocumentLimits, tally: XmlTally
    ) -> Callable[[], None]:
        """Install the callbacks counting elements outside rows; return what stores the
        counts in the state. A ``row`` start hands over to :meth:`_count_rows`'s pair."""
        state = self._state
        max_depth = limits.xml_max_depth
        element_room = limits.xml_max_elements - tally.elements
        depth = 0
        elements = 0  # outside rows

        def start(tag: str, attributes: object) -> None:
            nonlocal depth, elements
            depth += 1
            if depth > max_depth:
                raise _Stop(self._too_deep(max_depth))
            elements += 1
            if elements > element_room:
                raise _Stop(self._too_many_elements(limits.xml_max_elements))
            if tag == _ROW:  # anywhere, as openpyxl finds rows: a root in disguise is no escape
                elements -= 1  # the row belongs to the row: openpyxl drops it with its cells
                begin_row(depth)
            elif depth == 1:
                state.root = tag

        def end(tag: str) -> None:
            nonlocal depth
            depth -= 1

        def resume() -> None:
            """The row's end tag: back to counting outside rows."""
            nonlocal depth
            depth -= 1
            parser.StartElementHandler = start
            parser.EndElementHandler = end

        def finish() -> None:
            state.elements = elements
            finish_rows()

        begin_row, finish_rows = self._count_rows(parser, limits, tally, resume)
        parser.StartElementHandler = start
        parser.EndElementHandler = end
        return finish

    def _count_rows(
        self,
        parser: pyexpat.XMLParserType,
        limits: DocumentLimits,
        tally: XmlTally,
        resume: Callable[[], None],
    ) -> tuple[Callable[[int], None], Callable[[], None]]:
        """The callbacks inside a worksheet row, installed by ``begin(depth)`` (returned with
        what stores the row counts in the state); ``resume()`` is called at its end tag."""
        state = self._state
        max_depth = limits.xml_max_depth
        cell_room = limits.max_cells - tally.cells
        row_elements = cells = 0
        in_row = False
        room = inner = 0  # levels left below the row element; the depth below it
        row_start = row_cells = 0  # the row's first element (numbered), its cells

        def begin(depth: int) -> None:
            nonlocal row_elements, in_row, room, inner, row_start, row_cells
            row_elements += 1
            state.rows += 1
            if state.rows > XLSX_MAX_ROWS:
                raise _Stop(self._too_many_rows())
            in_row, room, inner = True, max_depth - depth, 0
            row_start = row_elements
            row_cells = 0
            state.row_start_byte = parser.CurrentByteIndex
            parser.StartElementHandler = row_start_element
            parser.EndElementHandler = row_end_element

        def row_start_element(tag: str, attributes: object) -> None:
            nonlocal inner, row_elements, row_cells, cells
            inner += 1
            if inner > room:
                raise _Stop(self._too_deep(max_depth))
            row_elements += 1
            if row_elements - row_start > ROW_MAX_ELEMENTS:
                raise _Stop(self._row_too_large(f"more than {ROW_MAX_ELEMENTS:,} elements"))
            if inner == 1 and tag == _CELL:
                row_cells += 1
                if row_cells > XLSX_MAX_COLUMNS:
                    raise _Stop(self._row_too_large(f"more than {XLSX_MAX_COLUMNS:,} cells"))
                cells += 1
                if cells > cell_room:
                    raise _Stop(self._too_many_cells(limits.max_cells))

        def row_end_element(tag: str) -> None:
            nonlocal inner, in_row
            if inner == 0:
                in_row = False
                resume()
            else:
                inner -= 1

        def finish() -> None:
            state.row_elements = row_elements
            state.cells = cells
            state.in_row = in_row

        return begin, finish

    def _entity(self, entity_name: str, *_: object) -> None:
        raise _Stop(
            MediaError(
                f"{self._path}: XML part {self.name!r} declares the entity {entity_name!r}; "
                "OOXML parts never declare entities, and entity expansion is refused",
                code=ProblemCode.PARSE_FAILED,
            )
        )

    @property
    def root(self) -> str | None:
        """The root element (``namespace name``), once seen."""
        return self._state.root

    @property
    def rows(self) -> int:
        """Worksheet rows seen so far."""
        return self._state.rows

    @property
    def row_elements(self) -> int:
        """Elements inside worksheet rows (the ``row`` elements included), once closed."""
        return self._state.row_elements

    def feed(self, chunk: bytes) -> None:
        """Scan the next bytes of the part."""
        self._parse(chunk, final=False)
        state = self._state
        if (
            state.rows
            and self._in_row()
            and self._byte_index() - state.row_start_byte > ROW_MAX_BYTES
        ):
            raise self._row_too_large(f"more than {ROW_MAX_BYTES:,} bytes")

    def close(self) -> None:
        """The part ended: raise if it is not a complete XML document; free the parser
        (a parser holds buffers: a package may have 100,000 parts) and add to the tally."""
        self._parse(b"", final=True)
        self._parser = None
        self._finish()
        self._tally.elements += self._state.elements
        self._tally.cells += self._state.cells

    def _byte_index(self) -> int:
        assert self._parser is not None, "the scan is closed"
        return self._parser.CurrentByteIndex

    def _in_row(self) -> bool:
        self._finish()
        return self._state.in_row

    def _parse(self, chunk: bytes, *, final: bool) -> None:
        assert self._parser is not None, "the scan is closed"
        try:
            self._parser.Parse(chunk, final)
        except _Stop as stop:
            raise stop.error from None
        except pyexpat.ExpatError as exc:
            self._unreadable(
                f"{pyexpat.ErrorString(exc.code)} (line {exc.lineno}, column {exc.offset})"
            )
        except ValueError as exc:  # an encoding expat does not know ("multi-byte ...")
            self._unreadable(str(exc))

    def _unreadable(self, why: str) -> NoReturn:
        raise MediaError(
            f"{self._path}: XML part {self.name!r} cannot be read as XML: {why}",
            code=ProblemCode.PARSE_FAILED,
        ) from None

    def _row_too_large(self, what: str) -> MediaError:
        return MediaError(
            f"{self._path}: row {self._state.rows:,} of worksheet {self.name!r} holds {what} "
            "(a worksheet row is read whole)",
            code=ProblemCode.TOO_LARGE,
        )

    def _too_many_elements(self, limit: int) -> MediaError:
        return over_limit(
            self._path,
            f"more than {limit:,} XML elements to parse (stopped in part {self.name!r})",
            "xml_max_elements",
            limit,
        )

    def _too_deep(self, max_depth: int) -> MediaError:
        return over_limit(
            self._path,
            f"XML part {self.name!r} nests elements deeper than {max_depth:,} levels",
            "xml_max_depth",
            max_depth,
        )

    def _too_many_rows(self) -> MediaError:
        return MediaError(
            f"{self._path}: worksheet {self.name!r} has more than {XLSX_MAX_ROWS:,} rows "
            "(the most an Excel worksheet holds)",
            code=ProblemCode.TOO_LARGE,
        )

    def _too_many_cells(self, limit: int) -> MediaError:
        return over_limit(
            self._path,
            f"more than {limit:,} cells to examine (stopped at row "
            f"{self._state.rows:,} of worksheet part {self.name!r})",
            "max_cells",
            limit,
        )


@attrs.define(slots=True)
class _State:
    """What a scan found so far (the callbacks keep hot counters in their closure)."""

    root: str | None = None
    rows: int = 0
    row_elements: int = 0
    cells: int = 0
    elements: int = 0
    row_start_byte: int = 0
    in_row: bool = False
