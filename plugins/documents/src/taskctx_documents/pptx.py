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

from taskctx.errors import MediaError
from taskctx.protocols import ParsedDocument
from taskctx_documents._boundary import ParseLog
from taskctx_documents._handler import HandlerBase
from taskctx_documents._text import TextBuilder, one_line
from taskctx_documents.formats import by_name
from taskctx_documents.limits import Deadline

__all__ = ["PptxHandler"]

FORMAT_VERSION = "1"
"""Bumped whenever this module changes the text or sections it produces."""


def _frame_text(text: str) -> str:
    return text.replace("\v", "\n")


def _shape_lines(shapes: Iterable[BaseShape], lines: list[str]) -> None:
    for shape in shapes:
        if isinstance(shape, GroupShape):
            _shape_lines(shape.shapes, lines)
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


def _slide_text(slide: Slide) -> tuple[str, str]:
    """(title, text) of one slide, its notes last."""
    lines: list[str] = []
    _shape_lines(slide.shapes, lines)
    if slide.has_notes_slide:
        frame = slide.notes_slide.notes_text_frame
        if frame is not None and frame.text.strip():
            lines.append(_frame_text(frame.text))
    title_shape = slide.shapes.title
    title = one_line(_frame_text(title_shape.text_frame.text)) if title_shape is not None else ""
    return title, "\n".join(lines)


class PptxHandler(HandlerBase):
    """FileIOHandler for PowerPoint presentations (OOXML, macro-enabled too), on python-pptx.

    Every slide's text and notes, one ``slide:N`` section each; ``MediaError`` on failure.
    """

    FORMAT = by_name("pptx")
    LABEL = "PPTX"
    FORMAT_VERSION = FORMAT_VERSION
    LIBRARY = "python-pptx"
    LIBRARY_VERSION = pptx.__version__

    def _parse(self, data: bytes, path: str, log: ParseLog) -> ParsedDocument:
        deadline = Deadline(self.limits.max_seconds, path)
        presentation = pptx.Presentation(io.BytesIO(data))
        slides = presentation.slides
        count = len(slides)
        if count > self.limits.max_slides:
            raise MediaError(
                f"{path}: {count:,} slides exceed the limit of {self.limits.max_slides:,}",
                code="too_large",
            )
        builder = TextBuilder()
        for number, slide in enumerate(slides, start=1):
            deadline.check(f"slide {number} of {count}")
            title, text = _slide_text(slide)
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
