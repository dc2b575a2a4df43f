"""The texts a workspace enumeration decoded, held to hand over with its pages.

An index sync indexes a text handed with a page (``DescriptorPage.texts``) without
reading the file again. A text is held only as decoded from the bytes whose digest is its
descriptor's content version, and handed once.
"""

from __future__ import annotations

from collections.abc import Sequence

from taskctx.model import SourceDescriptor

__all__ = ["HANDED_TEXT_CHARS", "HandedTexts"]

HANDED_TEXT_CHARS = 16_000_000
"""Characters of decoded texts one enumeration holds to hand over: the files past it are
read by the sync, as before."""


class HandedTexts:
    """Whole-file texts by descriptor key, within ``max_chars``, each handed once."""

    __slots__ = ("chars", "max_chars", "texts")

    def __init__(self, max_chars: int = HANDED_TEXT_CHARS) -> None:
        self.max_chars = max_chars
        self.chars = 0
        self.texts: dict[tuple[str, str | None], str] = {}

    def hold(self, path: str, text: str) -> None:
        """Hold the whole text of ``path``, just decoded, while room lasts."""
        if self.chars + len(text) <= self.max_chars:
            self.texts[path, None] = text
            self.chars += len(text)

    def hand(self, descriptors: Sequence[SourceDescriptor]) -> tuple[str | None, ...] | None:
        """The held texts of ``descriptors`` in order (each handed once), or None when
        none of them is held."""
        if not self.texts:
            return None
        texts = tuple(self.texts.pop(d.key, None) for d in descriptors)
        self.chars -= sum(len(text) for text in texts if text is not None)
        return texts if any(text is not None for text in texts) else None

    def clear(self) -> None:
        """Drop what is held (a new enumeration starts)."""
        self.texts.clear()
        self.chars = 0
