"""Markdown sections: which lines are headings, the line range and size each spans."""

from __future__ import annotations

from taskctx.model import SectionInfo
from taskctx.sections import markdown_sections, slice_lines

TEXT = (
    "# Title\n"  # 1
    "intro # not a heading\n"  # 2
    "## Part A ##\n"  # 3
    "  # indented: not a heading\n"  # 4
    "```\n"  # 5
    "# in a fence: not a heading\n"  # 6
    "```\n"  # 7
    "### Deep\r\n"  # 8
    "deep text\n"  # 9
    "#nospace is text\n"  # 10
    "## Part B\n"  # 11
    "~~~\n"  # 12
    "## fenced again\n"  # 13
    "~~~\n"  # 14
    "last line"  # 15
)


def test_headings_outside_fences_span_until_the_next_of_their_level() -> None:
    """Only ATX headings at the start of a line and outside fences open sections; each
    spans to the line before the next heading of its level or higher, its chars counted
    from the lines it spans."""
    lines = TEXT.splitlines(keepends=True)

    def section(title: str, level: int, first: int, last: int) -> SectionInfo:
        chars = len(slice_lines(TEXT, first, last))
        assert chars == sum(len(line) for line in lines[first - 1 : last])
        return SectionInfo(title=title, scope=f"lines:{first}-{last}", level=level, chars=chars)

    assert markdown_sections(TEXT) == (
        section("Title", 1, 1, 15),
        section("Part A", 2, 3, 10),
        section("Deep", 3, 8, 10),
        section("Part B", 2, 11, 15),
    )


def test_text_without_headings_has_no_sections() -> None:
    """Plain text, empty text and lines that only look like markup give no section."""
    assert markdown_sections("") == ()
    assert markdown_sections("plain\n`code`\n~tilde\n####### seven\n#\n") == ()
