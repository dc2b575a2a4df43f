"""PPTX: slides as sections with shapes, tables, groups and notes."""

from __future__ import annotations

import io

import pptx
import pytest
from taskctx_documents import DocumentLimits, PptxHandler

from taskctx.errors import MediaError
from tests.plugins.documents.builders import make_pptx
from tests.plugins.documents.helpers import section_texts


def test_one_section_per_slide_with_notes() -> None:
    """Each slide is ``slide:N``, titled by its title, holding shapes then notes."""
    parsed = PptxHandler().parse(make_pptx(), "deck.pptx")
    assert [(s.scope, s.title) for s in parsed.sections] == [
        ("slide:1", "Slide 1: Quarterly results"),
        ("slide:2", "Slide 2"),
    ]
    assert section_texts(parsed)["slide:1"] == (
        "Quarterly results\n"
        "Revenue grew\nin every region\n"
        "t00\tt01\nt10\tt11\n"
        "Inside the group\nDeep in a nested group\n"
        "Speaker notes here\n"
    )
    assert section_texts(parsed)["slide:2"] == "Slide number 2\n"


def test_line_break_is_a_newline() -> None:
    """python-pptx's vertical tab for a line break becomes a newline, not a dropped control."""
    parsed = PptxHandler().parse(make_pptx(), "deck.pptx")
    assert "\v" not in parsed.text
    assert "Revenue grew\nin every region" in parsed.text


def test_presentation_without_slides_is_no_text() -> None:
    """A deck with no slides is ``no_text`` saying so."""
    out = io.BytesIO()
    pptx.Presentation().save(out)
    with pytest.raises(MediaError) as caught:
        PptxHandler().parse(out.getvalue(), "none.pptx")
    assert caught.value.code == "no_text"
    assert "no slides" in str(caught.value)


def test_too_many_slides_is_too_large() -> None:
    """More slides than ``max_slides`` is ``too_large``."""
    with pytest.raises(MediaError) as caught:
        PptxHandler(DocumentLimits(max_slides=1)).parse(make_pptx(), "deck.pptx")
    assert caught.value.code == "too_large"
    assert "2 slides" in str(caught.value)


def test_pptm_is_handled() -> None:
    """Macro-enabled decks share the handler and keep their own media type."""
    handler = PptxHandler()
    assert "pptm" in handler.suffixes
    parsed = handler.parse(make_pptx(), "macros.pptm")
    assert parsed.media_type == "application/vnd.ms-powerpoint.presentation.macroenabled.12"
