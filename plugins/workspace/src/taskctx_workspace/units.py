"""The index units of a parsed document: its sections (pages, sheets, slides), a section
larger than a chunk replaced by the passages of its text as ``chars:S-E`` parts.

A 40,000-character sheet or a dense PDF page is one section; ranked whole it dilutes
what matched and never fits a small page. Its passages (``taskctx.sections.passages``:
paragraphs, lines) are units of their own, scoped with the kernel's character scope of
the document's parsed text, so the kernel serves them for this source as for any. The
section itself stays readable by its own scope (``page:3``) and listed in the whole
document's ``sections``; it is not a unit beside its passages, so a page and a passage
of it never both rank and deliver the same text twice.

A read of a section finds it by its scope (``section_of``) and passes on what the
handler noticed parsing as the read's notes (``read_notes``).
"""

from __future__ import annotations

from taskctx.model import SectionInfo
from taskctx.protocols import ParsedDocument
from taskctx.sections import format_char_scope, passages

__all__ = ["document_units", "read_notes", "section_of"]


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


def read_notes(parsed: ParsedDocument) -> tuple[str, ...]:
    """What the handler noticed parsing (its ``warnings`` metadata), as read notes."""
    warnings = parsed.metadata.get("warnings")
    if not isinstance(warnings, list | tuple):
        return ()
    return tuple(str(w) for w in warnings if str(w).strip())


def section_of(parsed: ParsedDocument, scope: str) -> SectionInfo | None:
    """The section of ``parsed`` whose scope is ``scope``, if any."""
    for section in parsed.sections:
        if section.scope == scope:
            return section
    return None
