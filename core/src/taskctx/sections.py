"""Sections of plain text and line-range scopes: Markdown headings and ``lines:A-B``.

Sources and the reader share these so a section found by one is readable by the
other: a heading's scope is the line range it spans.
"""

from __future__ import annotations

import re
from itertools import accumulate

from taskctx.model import SectionInfo

__all__ = [
    "format_line_scope",
    "markdown_sections",
    "parse_line_scope",
    "slice_lines",
]

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"^(```|~~~)")
_MARKS = frozenset("#`~")
"""The first characters a heading or a fence line can have."""
_LINE_SCOPE = re.compile(r"lines:(\d+)-(\d+)")


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
