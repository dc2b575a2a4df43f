"""Builds a document's parsed text and its sections with exact character offsets.

Each section's body is cleaned with :func:`taskctx.media.clean_text`, trailing
whitespace removed and one newline appended; bodies are joined with one blank line
that belongs to no section. So ``text[s.start:s.end]`` is exactly section ``s``,
sections are in order and never overlap, and an empty page or sheet is a section of
zero characters (it exists and is addressable, it just holds no text).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NoReturn

from taskctx.codes import ProblemCode
from taskctx.errors import MediaError
from taskctx.media import clean_text
from taskctx.model import SectionInfo
from taskctx.protocols import ParsedDocument
from taskctx_documents.limits import over_limit

__all__ = ["SEPARATOR", "TextBudget", "TextBuilder", "one_line"]

SEPARATOR = "\n"
"""Between two sections (after the first one's own final newline): a blank line."""


def one_line(text: str) -> str:
    """``text`` cleaned with all runs of whitespace (tabs, newlines) made one space."""
    return " ".join(clean_text(text).split())


class TextBudget:
    """The characters of text one parse may still produce (``max_text_chars``).

    Handlers charge text as they extract it, so text that repeats (one shared string
    in every cell, one form drawn many times) stops at the limit, not after it.
    """

    __slots__ = ("_left", "_limit", "_path")

    def __init__(self, limit: int, path: str) -> None:
        self._limit = limit
        self._left = limit
        self._path = path

    @property
    def remaining(self) -> int:
        """Characters that may still be charged."""
        return self._left

    def charge(self, chars: int, where: str | Callable[[], str]) -> None:
        """Spend ``chars``; raise ``too_large`` naming ``where`` once over the limit."""
        self._left -= chars
        if self._left < 0:
            self.exhausted(where() if callable(where) else where)

    def exhausted(self, where: str) -> NoReturn:
        """Raise ``too_large``: the text at ``where`` does not fit."""
        raise over_limit(
            self._path,
            f"more than {self._limit:,} characters of text (stopped at {where})",
            "max_text_chars",
            self._limit,
        )


class TextBuilder:
    """Collects sections in document order and builds the :class:`ParsedDocument`."""

    __slots__ = ("_length", "_parts", "_scopes", "_sections")

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._sections: list[SectionInfo] = []
        self._scopes: set[str] = set()
        self._length = 0

    def __len__(self) -> int:
        return len(self._sections)

    def _unique(self, scope: str, title: str) -> tuple[str, str]:
        if scope not in self._scopes:
            return scope, title
        number = 2
        while f"{scope} ({number})" in self._scopes:
            number += 1
        return f"{scope} ({number})", f"{title} ({number})"

    def add(self, title: str, scope: str, body: str, *, level: int = 1) -> SectionInfo:
        """Append a section; a repeated scope gets `` (2)``, `` (3)``... appended."""
        text = clean_text(body).rstrip()
        if text:
            text += "\n"
        if self._sections:
            self._parts.append(SEPARATOR)
            self._length += len(SEPARATOR)
        scope, title = self._unique(scope, title)
        start = self._length
        self._parts.append(text)
        self._length += len(text)
        section = SectionInfo(
            title=title, scope=scope, level=level, chars=len(text), start=start, end=self._length
        )
        self._sections.append(section)
        self._scopes.add(scope)
        return section

    def build(
        self,
        *,
        path: str,
        media_type: str,
        empty_reason: str,
        metadata: Mapping[str, Any],
    ) -> ParsedDocument:
        """The parsed document; ``no_text`` (with ``empty_reason``) when it holds no text."""
        text = "".join(self._parts)
        if not text.strip():
            raise MediaError(
                f"{path}: no extractable text: {empty_reason}", code=ProblemCode.NO_TEXT
            )
        return ParsedDocument(
            text=text,
            media_type=media_type,
            sections=tuple(self._sections),
            metadata=dict(metadata),
        )
