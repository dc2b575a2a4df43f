"""Sections of plain text and the text scopes: Markdown headings, ``lines:A-B`` and
``chars:S-E``.

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


def markdown_sections(text: str) -> tuple[SectionInfo, ...]:
    """ATX headings of ``text`` (outside code fences) with the line range each spans."""
    lines = text.splitlines(keepends=True)
    ends = list(accumulate(map(len, lines), initial=0))  # ends[n]: chars of lines 1..n
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
