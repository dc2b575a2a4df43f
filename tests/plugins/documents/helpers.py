"""Assertions the handler tests share."""

from __future__ import annotations

from taskctx.protocols import ParsedDocument

__all__ = ["section_texts", "words"]


def words(text: str) -> str:
    """``text`` with every run of whitespace made one space."""
    return " ".join(text.split())


def section_texts(parsed: ParsedDocument) -> dict[str, str]:
    """Scope -> exactly the text the section's offsets cut out."""
    out = {}
    for section in parsed.sections:
        assert section.start is not None
        assert section.end is not None
        out[section.scope] = parsed.text[section.start : section.end]
    return out
