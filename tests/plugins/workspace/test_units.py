"""Index units of a parsed document: sections that fit, passages of those that do not."""

from __future__ import annotations

import itertools

from taskctx_workspace.units import document_units

from taskctx.model import SectionInfo
from taskctx.protocols import ParsedDocument
from taskctx.sections import parse_char_scope


def _document() -> ParsedDocument:
    small = "A small sheet.\n"
    large = "".join(f"row {n}: " + "value " * 12 + "\n" for n in range(40))
    text = small + large
    return ParsedDocument(
        text=text,
        media_type="application/vnd.ms-excel",
        sections=(
            SectionInfo(
                title="Small", scope="sheet:Small", chars=len(small), start=0, end=len(small)
            ),
            SectionInfo(
                title="Large",
                scope="sheet:Large",
                chars=len(large),
                start=len(small),
                end=len(text),
            ),
            SectionInfo(title="Unplaced", scope="sheet:Unplaced", chars=10_000),
        ),
    )


def test_a_large_section_becomes_passages_that_cover_it_exactly() -> None:
    """The large sheet's passages are chars scopes of the document text, in order, that
    cover it with no gap, each within the chunk (rows stay whole)."""
    parsed = _document()
    units = document_units(parsed, 800)
    assert units[0].scope == "sheet:Small"
    parts = [u for u in units if u.scope.startswith("chars:")]
    assert len(parts) > 1
    spans = [parse_char_scope(u.scope) for u in parts]
    large = parsed.sections[1]
    assert spans[0][0] == large.start
    assert spans[-1][1] == large.end
    assert all(a[1] == b[0] for a, b in itertools.pairwise(spans))
    assert all(e - s <= 800 for s, e in spans)
    assert all(parsed.text[s:e].endswith("\n") for s, e in spans)
    assert next(u.title for u in parts) == f"Large (part 1 of {len(parts)})"
    assert "sheet:Large" not in [u.scope for u in units]


def test_a_section_without_its_place_in_the_text_stays_whole() -> None:
    """No start/end: it cannot be cut, so it stays one unit."""
    assert document_units(_document(), 800)[-1].scope == "sheet:Unplaced"
    assert [u.scope for u in document_units(_document(), 100_000)] == [
        "sheet:Small",
        "sheet:Large",
        "sheet:Unplaced",
    ]
