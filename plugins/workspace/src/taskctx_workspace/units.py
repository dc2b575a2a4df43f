"""The index units of a parsed document: its sections (pages, sheets, slides), a section
larger than a chunk replaced by the passages of its text as ``chars:S-E`` parts.

A 40,000-character sheet or a dense PDF page is one section; ranked whole it dilutes
what matched and never fits a small page. Its passages (``taskctx.sections.passages``:
paragraphs, lines) are units of their own, scoped with the kernel's character scope of
the document's parsed text, so the kernel serves them for this source as for any. The
section itself stays readable by its own scope (``page:3``) and listed in the whole
document's ``sections``; it is not a unit beside its passages, so a page and a passage
of it never both rank and deliver the same text twice.
"""

from __future__ import annotations

from taskctx.model import SectionInfo
from taskctx.protocols import ParsedDocument
from taskctx.sections import format_char_scope, passages

__all__ = ["document_units"]


def document_units(parsed: ParsedDocument, chunk_chars: int) -> list[SectionInfo]:
    """Each section of ``parsed``, or, when it is larger than ``chunk_chars`` and its
    place in the text is known, its passages (``<section> (part k of n)``) instead."""
    units: list[SectionInfo] = []
    for section in parsed.sections:
        start, end = section.start, section.end
        if start is None or end is None or (section.chars or end - start) <= chunk_chars:
            units.append(section)
            continue
        pieces = passages(parsed.text[start:end], chunk_chars)
        for number, piece in enumerate(pieces, start=1):
            first = start + (piece.start or 0)
            last = start + (piece.end or 0)
            units.append(
                SectionInfo(
                    title=f"{section.title} (part {number} of {len(pieces)})",
                    scope=format_char_scope(first, last),
                    level=section.level + 1,
                    chars=last - first,
                    start=first,
                    end=last,
                )
            )
    return units
