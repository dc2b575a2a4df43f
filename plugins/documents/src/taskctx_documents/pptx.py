"""PPTX/PPTM: one ``slide:N`` section per slide, the speaker notes inside it.

A slide's text is its shapes' text in the slide's order: text frames, table rows
(tab-separated cells) and grouped shapes, recursively; then the notes. A line break
inside a paragraph (python-pptx's vertical tab) becomes a newline. Hidden slides are
included. Charts, pictures and SmartArt carry no text here.
"""

from __future__ import annotations

import io
from collections.abc import Iterable

import pptx
from pptx.shapes.autoshape import Shape
from pptx.shapes.base import BaseShape
from pptx.shapes.graphfrm import GraphicFrame
from pptx.shapes.group import GroupShape
from pptx.slide import Slide

from taskctx.codes import ProblemCode
from taskctx.errors import MediaError
from taskctx.protocols import ParsedDocument
from taskctx_documents._boundary import ParseLog
from taskctx_documents._handler import HandlerBase
from taskctx_documents._text import TextBudget, TextBuilder, one_line
from taskctx_documents.formats import by_name
from taskctx_documents.limits import Deadline

__all__ = ["PptxHandler"]

FORMAT_VERSION = "1"
"""Bumped whenever this module changes the text or sections it produces."""


def _frame_text(text: str) -> str:
    return text.replace("\v", "\n")


class _Slides:
    """Extracts slide text, checking the clock per shape and charging the text budget."""

    __slots__ = ("_budget", "_deadline", "_shapes", "where")

    def __init__(self, deadline: Deadline, budget: TextBudget) -> None:
        self._deadline = deadline
        self._budget = budget
        self._shapes = 0
        self.where = ""

    def text(self, slide: Slide) -> tuple[str, str]:
        """(title, text) of one slide, its notes last."""
        lines: list[str] = []
        self._shape_lines(slide.shapes, lines)
        if slide.has_notes_slide:
            frame = slide.notes_slide.notes_text_frame
            if frame is not None and frame.text.strip():
                lines.append(_frame_text(frame.text))
        title_shape = slide.shapes.title
        title = (
            one_line(_frame_text(title_shape.text_frame.text)) if title_shape is not None else ""
        )
        text = "\n".join(lines)
        self._budget.charge(len(text), self.where)
        return title, text

    def _shape_lines(self, shapes: Iterable[BaseShape], lines: list[str]) -> None:
        for shape in shapes:
            self._shapes += 1
            self._deadline.check(self._place)
            if isinstance(shape, GroupShape):
                self._shape_lines(shape.shapes, lines)
            elif isinstance(shape, GraphicFrame) and shape.has_table:
                for row in shape.table.rows:
                    cells = [one_line(_frame_text(cell.text)) for cell in row.cells]
                    text = "\t".join(cells).rstrip("\t")
                    if text.strip():
                        lines.append(text)
            elif isinstance(shape, Shape) and shape.has_text_frame:
                text = _frame_text(shape.text_frame.text)
                if text.strip():
                    lines.append(text)

    def _place(self) -> str:
        return f"shape {self._shapes:,} of {self.where}"


class PptxHandler(HandlerBase):
    """FileIOHandler for PowerPoint presentations (OOXML, macro-enabled too), on python-pptx.

    Every slide's text and notes, one ``slide:N`` section each; ``MediaError`` on failure.
    """

    FORMAT = by_name("pptx")
    LABEL = "PPTX"
    FORMAT_VERSION = FORMAT_VERSION
    LIBRARY = "python-pptx"
    LIBRARY_VERSION = pptx.__version__

    def _parse(self, data: bytes, path: str, log: ParseLog, deadline: Deadline) -> ParsedDocument:
        presentation = pptx.Presentation(io.BytesIO(data))
        slides = presentation.slides
        count = len(slides)
        if count > self.limits.max_slides:
            raise MediaError(
                f"{path}: {count:,} slides exceed the limit of {self.limits.max_slides:,} "
                "(limit max_slides)",
                code=ProblemCode.TOO_LARGE,
            )
        builder = TextBuilder()
        extractor = _Slides(deadline, TextBudget(self.limits.max_text_chars, path))
        for number, slide in enumerate(slides, start=1):
            extractor.where = f"slide {number} of {count}"
            deadline.check(extractor.where)
            title, text = extractor.text(slide)
            label = f"Slide {number}: {title}" if title else f"Slide {number}"
            builder.add(label, f"slide:{number}", text)
        reason = (
            "the presentation has no slides"
            if count == 0
            else f"none of its {count} slide(s) holds text in text frames, tables or notes"
        )
        return builder.build(
            path=path,
            media_type=self.media_types[1 if path.lower().endswith(".pptm") else 0],
            empty_reason=reason,
            metadata={"slides": count, "warnings": log.warnings()},
        )
