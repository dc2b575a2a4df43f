"""Sections of plain text and the text scopes: Markdown headings, passages that follow
them, ``lines:A-B`` and ``chars:S-E``.

Sources and the reader share these so a section found by one is readable by the
other: a heading's scope is the line range it spans. ``chars:S-E`` is the kernel's own
scope kind (a part of an item's whole text, ``text[S:E]``): the kernel slices it from a
read of the whole item for every source, so no source or scoped reader serves it.
"""

from __future__ import annotations

import re
from itertools import accumulate

from taskctx.model import SectionInfo

__all__ = [
    "CHAR_SCOPE_KIND",
    "format_char_scope",
    "format_line_scope",
    "markdown_sections",
    "parse_char_scope",
    "parse_line_scope",
    "passages",
    "slice_lines",
]

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"^(```|~~~)")
_MARKS = frozenset("#`~")
"""The first characters a heading or a fence line can have."""
_LINE_SCOPE = re.compile(r"lines:(\d+)-(\d+)")
_CHAR_SCOPE = re.compile(r"chars:(\d+)-(\d+)")
CHAR_SCOPE_KIND = "chars"
"""The scope kind the kernel serves itself: ``chars:S-E`` is ``text[S:E]`` of the item's
whole text (0-based, the end excluded)."""


def format_char_scope(start: int, end: int) -> str:
    """The scope string of characters ``start``..``end`` (``text[start:end]``)."""
    return f"chars:{start}-{end}"


def parse_char_scope(scope: str) -> tuple[int, int]:
    """Parse ``chars:S-E`` into (S, E); raise ValueError naming the bad scope."""
    match = _CHAR_SCOPE.fullmatch(scope)
    if match is None:
        raise ValueError(f"not a character scope: {scope!r} (expected 'chars:S-E')")
    start, end = int(match[1]), int(match[2])
    if end <= start:
        raise ValueError(f"invalid character range in {scope!r}: the end must follow the start")
    return start, end


def format_line_scope(first: int, last: int) -> str:
    """The scope string of lines ``first``..``last`` (1-based, inclusive)."""
    return f"lines:{first}-{last}"


def parse_line_scope(scope: str) -> tuple[int, int]:
    """Parse ``lines:A-B`` into (A, B); raise ValueError naming the bad scope."""
    match = _LINE_SCOPE.fullmatch(scope)
    if match is None:
        raise ValueError(f"not a line scope: {scope!r} (expected 'lines:A-B')")
    first, last = int(match[1]), int(match[2])
    if first < 1 or last < first:
        raise ValueError(f"invalid line range in {scope!r}")
    return first, last


def slice_lines(text: str, first: int, last: int) -> str:
    """Lines ``first``..``last`` of ``text`` (1-based, inclusive), keeping line ends."""
    lines = text.splitlines(keepends=True)
    return "".join(lines[first - 1 : last])


def _headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """(line number, level, title) of each ATX heading outside code fences."""
    headings: list[tuple[int, int, str]] = []
    in_fence = False
    for number, line in enumerate(lines, start=1):
        if line[:1] not in _MARKS:
            continue  # neither a heading nor a fence: both start at the first character
        stripped = line.rstrip("\r\n")
        if _FENCE.match(stripped):
            in_fence = not in_fence
            continue
        match = None if in_fence else _HEADING.match(stripped)
        if match:
            headings.append((number, len(match[1]), match[2].strip()))
    return headings


def markdown_sections(text: str) -> tuple[SectionInfo, ...]:
    """ATX headings of ``text`` (outside code fences) with the line range each spans."""
    lines = text.splitlines(keepends=True)
    ends = list(accumulate(map(len, lines), initial=0))  # ends[n]: chars of lines 1..n
    headings = _headings(lines)
    sections = []
    for index, (first, level, title) in enumerate(headings):
        last = len(lines)
        for later_first, later_level, _ in headings[index + 1 :]:
            if later_level <= level:
                last = later_first - 1
                break
        chars = ends[last] - ends[first - 1]
        sections.append(
            SectionInfo(title=title, scope=format_line_scope(first, last), level=level, chars=chars)
        )
    return tuple(sections)


def passages(text: str, chunk_chars: int, *, markdown: bool = False) -> tuple[SectionInfo, ...]:
    """Consecutive line ranges of about ``chunk_chars`` characters that cover ``text`` and
    follow its structure.

    With ``markdown``, a heading's section that fits is one passage (titled by its heading
    path, ``Guide > Install``); a larger one becomes the text before its first
    subheading and its subsections, each split the same way (a preamble of headings and
    blank lines alone opens its first subsection instead). Text without headings is
    packed by blocks: paragraphs between blank lines, a fenced code block whole; a block
    larger than ``chunk_chars`` is cut at line ends (a longer line stays whole).
    """
    if chunk_chars < 1:
        raise ValueError(f"chunk_chars must be positive, not {chunk_chars}")
    lines = text.splitlines(keepends=True)
    if not lines:
        return ()
    return tuple(_Passages(lines, chunk_chars, markdown).split(1, len(lines), 0, ()))


class _Passages:
    """One text's lines, their character offsets and headings, split into passages."""

    __slots__ = ("chunk", "content", "ends", "headings", "lines")

    def __init__(self, lines: list[str], chunk: int, markdown: bool) -> None:
        self.lines = lines
        self.chunk = chunk
        self.ends = list(accumulate(map(len, lines), initial=0))
        self.headings = _headings(lines) if markdown else []
        heads = {number for number, _, _ in self.headings}
        # content[n]: lines among 1..n that are neither blank nor a heading
        self.content = list(
            accumulate(
                (n not in heads and bool(line.strip()) for n, line in enumerate(lines, 1)),
                initial=0,
            )
        )

    def size(self, first: int, last: int) -> int:
        return self.ends[last] - self.ends[first - 1]

    def split(self, first: int, last: int, own: int, path: tuple[str, ...]) -> list[SectionInfo]:
        """Passages of lines ``first``..``last``; ``own`` is the line of their heading."""
        if self.size(first, last) <= self.chunk:
            return [self.passage(first, last, path, whole=bool(path))]
        inner = [h for h in self.headings if own < h[0] <= last and h[0] >= first]
        if not inner:
            return self.pack(first, last, path)
        top = min(level for _, level, _ in inner)
        children = [h for h in inner if h[1] == top]
        out: list[SectionInfo] = []
        start = first
        if not self.is_bare(first, children[0][0] - 1):
            out.extend(self.pack(first, children[0][0] - 1, path))
            start = children[0][0]
        for index, (line, _, title) in enumerate(children):
            end = children[index + 1][0] - 1 if index + 1 < len(children) else last
            out.extend(self.split(start, end, line, (*path, title)))
            start = end + 1
        return out

    def is_bare(self, first: int, last: int) -> bool:
        """True when lines ``first``..``last`` hold only headings and blank lines."""
        return self.content[last] == self.content[first - 1]

    def blocks(self, first: int, last: int) -> list[tuple[int, int]]:
        """Paragraphs and whole fenced code blocks of lines ``first``..``last``; blank lines
        go with the block before them, and a heading with the block after it."""
        out: list[tuple[int, int]] = []
        start, number, in_fence, blank_before = first, first, False, False
        while number <= last:
            line = self.lines[number - 1]
            if _FENCE.match(line) and not in_fence:
                in_fence = True
                if blank_before and not self.is_bare(start, number - 1):
                    out.append((start, number - 1))
                    start = number
            elif _FENCE.match(line):
                in_fence = False
            elif not in_fence:
                blank = not line.strip()
                if not blank and blank_before and not self.is_bare(start, number - 1):
                    out.append((start, number - 1))
                    start = number
                blank_before = blank
                number += 1
                continue
            blank_before = False
            number += 1
        out.append((start, last))
        return out

    def pack(self, first: int, last: int, path: tuple[str, ...]) -> list[SectionInfo]:
        """Consecutive blocks of lines ``first``..``last`` packed up to the chunk size."""
        out: list[SectionInfo] = []
        start: int | None = None
        for block_first, block_last in self.blocks(first, last):
            if start is not None and self.size(start, block_last) > self.chunk:
                out.append(self.passage(start, block_first - 1, path))
                start = None
            if self.size(block_first, block_last) > self.chunk:
                out.extend(self.cut(block_first, block_last, path))
                continue
            start = block_first if start is None else start
        if start is not None:
            out.append(self.passage(start, last, path))
        return out

    def cut(self, first: int, last: int, path: tuple[str, ...]) -> list[SectionInfo]:
        """Lines ``first``..``last`` cut at line ends into pieces of at most the chunk size."""
        out: list[SectionInfo] = []
        start = first
        for number in range(first + 1, last + 1):
            # blank lines stay with the piece before them and a heading with the line after
            # it, even past the chunk size
            if (
                self.size(start, number) > self.chunk
                and self.lines[number - 1].strip()
                and not self.is_bare(start, number - 1)
            ):
                out.append(self.passage(start, number - 1, path))
                start = number
        out.append(self.passage(start, last, path))
        return out

    def passage(
        self, first: int, last: int, path: tuple[str, ...], *, whole: bool = False
    ) -> SectionInfo:
        lines = f"lines {first}-{last}"
        heading = " > ".join(path)
        title = heading if whole else (f"{heading} ({lines})" if heading else lines)
        return SectionInfo(
            title=title,
            scope=format_line_scope(first, last),
            level=max(1, len(path)),
            chars=self.size(first, last),
            start=self.ends[first - 1],
            end=self.ends[last],
        )
