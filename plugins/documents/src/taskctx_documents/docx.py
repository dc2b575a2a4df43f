"""DOCX: body paragraphs and tables in document order, one section per heading.

The body XML is walked directly (not ``doc.paragraphs`` then ``doc.tables``), so a
table sits where it sits. Paragraph text covers runs, hyperlinks, tracked insertions,
fields, content controls and OMML equations (their text, linearised); a text box's
paragraphs follow the paragraph that anchors it (once, though Word stores it twice
as alternate content); deleted text and field codes are left out. Table rows are
tab-separated cells, nested tables are flattened into their cell.

A paragraph whose style is ``Heading N`` (by name, id or outline level) starts a
``section:<heading text>`` of level N; what precedes the first heading is the
``section:(preamble)``. Headers and footers follow once, in
``section:(headers and footers)``.
"""

from __future__ import annotations

import io
import re
from typing import Any

import docx
from docx.document import Document
from docx.oxml.ns import qn

from taskctx.protocols import ParsedDocument
from taskctx_documents._boundary import ParseLog
from taskctx_documents._handler import HandlerBase
from taskctx_documents._text import TextBudget, TextBuilder, one_line
from taskctx_documents.formats import by_name
from taskctx_documents.limits import Deadline

__all__ = ["DocxHandler"]

FORMAT_VERSION = "2"
"""Bumped whenever this module changes the text or sections it produces."""

Element = Any
"""An lxml element of the document tree (lxml ships no type stubs)."""

PREAMBLE = "(preamble)"
HEADERS_AND_FOOTERS = "(headers and footers)"
MAX_TITLE = 200
"""Longest section title (and scope) made from a heading's text."""
MAX_GRID_SPAN = 63
"""Most grid columns one cell spans (Word's table width): ``gridSpan="999999999"`` pads no more."""

_MATH = "{http://schemas.openxmlformats.org/officeDocument/2006/math}"
_P, _TBL, _TR, _TC = qn("w:p"), qn("w:tbl"), qn("w:tr"), qn("w:tc")
_R, _T, _SDT, _SDT_CONTENT = qn("w:r"), qn("w:t"), qn("w:sdt"), qn("w:sdtContent")
_WRAPPERS = frozenset({_SDT, qn("w:customXml"), _SDT_CONTENT})
_INLINE_CONTAINERS = frozenset(
    {
        qn("w:hyperlink"),
        qn("w:ins"),
        qn("w:moveTo"),
        qn("w:smartTag"),
        qn("w:fldSimple"),
        qn("w:customXml"),
        qn("w:dir"),
        qn("w:bdo"),
        _SDT_CONTENT,
    }
)
_RUN_TEXT = {
    _T: None,
    qn("w:tab"): "\t",
    qn("w:ptab"): "\t",
    qn("w:br"): "\n",
    qn("w:cr"): "\n",
    qn("w:noBreakHyphen"): "-",
}
_TEXT_BOX = qn("w:txbxContent")
_ALTERNATE = "{http://schemas.openxmlformats.org/markup-compatibility/2006}AlternateContent"
_DRAWINGS = frozenset({qn("w:drawing"), qn("w:pict"), qn("w:object"), _ALTERNATE})
_HEADING_NAME = re.compile(r"heading\s*([1-9])", re.IGNORECASE)


class DocxHandler(HandlerBase):
    """FileIOHandler for Word documents (OOXML), on python-docx.

    Body text by heading sections, then headers and footers; ``MediaError`` on failure.
    """

    FORMAT = by_name("docx")
    LABEL = "DOCX"
    FORMAT_VERSION = FORMAT_VERSION
    LIBRARY = "python-docx"
    LIBRARY_VERSION = docx.__version__

    def _parse(self, data: bytes, path: str, log: ParseLog, deadline: Deadline) -> ParsedDocument:
        document = docx.Document(io.BytesIO(data))
        budget = TextBudget(self.limits.max_text_chars, path)
        walker = _Walker(_heading_levels(document), deadline, budget)
        body = document.element.body
        builder = TextBuilder()
        title, level = PREAMBLE, 1
        lines: list[str] = []
        headings = 0
        for kind, value, heading in walker.blocks(body):
            if heading is not None and kind == "paragraph" and one_line(value):
                if lines or title != PREAMBLE:
                    builder.add(title, f"section:{title}", "\n".join(lines), level=level)
                title, level, lines = _title(value), heading, []
                headings += 1
            lines.append(value)
        if lines or title != PREAMBLE:
            builder.add(title, f"section:{title}", "\n".join(lines), level=level)
        margins = _headers_and_footers(document, walker)
        if margins:
            builder.add(HEADERS_AND_FOOTERS, f"section:{HEADERS_AND_FOOTERS}", margins)
        metadata = {"headings": headings, "warnings": log.warnings()}
        return builder.build(
            path=path,
            media_type=self.media_types[0],
            empty_reason="the document body, headers and footers hold no text",
            metadata=metadata,
        )


def _title(heading: str) -> str:
    """A heading's text on one line, at most :data:`MAX_TITLE` characters."""
    text = one_line(heading)
    return text if len(text) <= MAX_TITLE else text[: MAX_TITLE - 3] + "..."


def _heading_levels(document: Document) -> dict[str, int]:
    """Paragraph style id -> heading level, from the style's name, id or outline level."""
    levels: dict[str, int] = {}
    for style in document.styles:
        style_id = style.style_id
        if not style_id:
            continue
        for candidate in (style.name or "", style_id):
            match = _HEADING_NAME.fullmatch(candidate.strip())
            if match:
                levels[style_id] = int(match[1])
                break
        else:
            outline = style.element.find(f"{qn('w:pPr')}/{qn('w:outlineLvl')}")
            value = outline.get(qn("w:val")) if outline is not None else None
            if value is not None and value.isdigit() and int(value) < 9:
                levels[style_id] = int(value) + 1
    return levels


class _Walker:
    """Turns block-level XML (a body, a header, a table cell) into lines of text."""

    __slots__ = ("_budget", "_count", "_deadline", "_levels")

    def __init__(self, levels: dict[str, int], deadline: Deadline, budget: TextBudget) -> None:
        self._levels = levels
        self._deadline = deadline
        self._budget = budget
        self._count = 0

    def blocks(self, container: Element) -> list[tuple[str, str, int | None]]:
        """(``paragraph``/``row``, text, heading level or None) for each block, in order."""
        out: list[tuple[str, str, int | None]] = []
        self._blocks(container, out)
        return out

    def lines(self, container: Element) -> list[str]:
        """The text lines of ``container``'s blocks, empty paragraphs left out."""
        return [text for _, text, _ in self.blocks(container) if text.strip()]

    def _blocks(self, container: Element, out: list[tuple[str, str, int | None]]) -> None:
        for child in container:
            tag = child.tag
            if tag == _P:
                self._tick()
                parts: list[str] = []
                boxes: list[Element] = []
                self._inline(child, parts, boxes)
                text = "".join(parts)
                if text.strip():
                    self._budget.charge(len(text), self._where)
                    out.append(("paragraph", text, self._heading_level(child)))
                for box in boxes:
                    self._blocks(box, out)
            elif tag == _TBL:
                out.extend(("row", row, None) for row in self._table_rows(child) if row.strip())
            elif tag in _WRAPPERS:
                self._blocks(_unwrap(child), out)

    def _tick(self) -> None:
        self._count += 1
        self._deadline.check(self._where)

    def _where(self) -> str:
        return f"paragraph or table row {self._count}"

    def _heading_level(self, paragraph: Element) -> int | None:
        style = paragraph.find(f"{qn('w:pPr')}/{qn('w:pStyle')}")
        if style is None:
            return None
        return self._levels.get(style.get(qn("w:val"), ""))

    def _table_rows(self, table: Element) -> list[str]:
        rows = []
        for row in _children(table, _TR):
            self._tick()
            cells = []
            for tc in _children(row, _TC):
                cells.append(" ".join(" ".join(self.lines(tc)).split()))
                span = tc.find(f"{qn('w:tcPr')}/{qn('w:gridSpan')}")
                value = span.get(qn("w:val"), "1") if span is not None else "1"
                cells.extend([""] * _span(value))
            row_text = "\t".join(cells).rstrip("\t")
            self._budget.charge(len(row_text), self._where)
            rows.append(row_text)
        return rows

    def _inline(self, element: Element, parts: list[str], boxes: list[Element]) -> None:
        """Collect a paragraph's text into ``parts`` and its text boxes into ``boxes``."""
        for child in element:
            tag = child.tag
            if tag == _R:
                for item in child:
                    if item.tag in _RUN_TEXT:
                        fixed = _RUN_TEXT[item.tag]
                        parts.append(fixed if fixed is not None else item.text or "")
                    elif item.tag in _DRAWINGS:
                        _text_boxes(item, boxes)
            elif tag in _INLINE_CONTAINERS:
                self._inline(child, parts, boxes)
            elif tag == _SDT:
                self._inline(_unwrap(child), parts, boxes)
            elif tag == _ALTERNATE:
                _text_boxes(child, boxes)
            elif isinstance(tag, str) and tag.startswith(_MATH):
                parts.append("".join(t.text or "" for t in child.iter(f"{_MATH}t")))


def _span(value: str) -> int:
    """Empty cells after a cell spanning ``value`` grid columns (at most a table's 63)."""
    return min(int(value), MAX_GRID_SPAN) - 1 if value.isdigit() and value != "0" else 0


def _text_boxes(element: Element, found: list[Element]) -> None:
    """Text box contents under ``element``; of alternate content, the first branch with any."""
    tag = element.tag
    if tag == _TEXT_BOX:
        found.append(element)
    elif tag == _ALTERNATE:
        for branch in element:
            before = len(found)
            for child in branch:
                _text_boxes(child, found)
            if len(found) > before:
                return
    else:
        for child in element:
            _text_boxes(child, found)


def _unwrap(wrapper: Element) -> Element:
    """The content of a content control (``w:sdt``); any other wrapper itself."""
    if wrapper.tag == _SDT:
        content = wrapper.find(_SDT_CONTENT)
        return content if content is not None else ()
    return wrapper


def _children(element: Element, tag: str) -> list[Element]:
    """Children of ``element`` with ``tag``, looking through content controls and custom XML."""
    found = []
    for child in element:
        if child.tag == tag:
            found.append(child)
        elif child.tag in _WRAPPERS:
            found.extend(_children(_unwrap(child), tag))
    return found


def _headers_and_footers(document: Document, walker: _Walker) -> str:
    """Text of every distinct header and footer part, in section order, once each."""
    part = document.part
    seen: set[str] = set()
    texts: list[str] = []
    for sect_pr in document.element.body.iter(qn("w:sectPr")):
        references = [
            *sect_pr.iterchildren(qn("w:headerReference")),
            *sect_pr.iterchildren(qn("w:footerReference")),
        ]
        for reference in references:
            rid = reference.get(qn("r:id"))
            related = part.related_parts.get(rid) if rid else None
            if related is None or str(related.partname) in seen:
                continue
            seen.add(str(related.partname))
            element = getattr(related, "element", None)
            if element is not None:
                texts.extend(walker.lines(element))
    return "\n".join(texts)
