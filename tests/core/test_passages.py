"""Passages: line ranges of about a chunk's size that follow a text's structure."""

from __future__ import annotations

import pytest

from taskctx.sections import parse_line_scope, passages, slice_lines


def _texts(text: str, chunk: int, *, markdown: bool = True) -> list[str]:
    return [
        slice_lines(text, *parse_line_scope(p.scope))
        for p in passages(text, chunk, markdown=markdown)
    ]


def _covers(text: str, chunk: int, *, markdown: bool = True) -> None:
    found = passages(text, chunk, markdown=markdown)
    assert "".join(_texts(text, chunk, markdown=markdown)) == text
    assert [p.start for p in found[1:]] == [p.end for p in found[:-1]]
    assert all(
        text[p.start or 0 : p.end] == slice_lines(text, *parse_line_scope(p.scope)) for p in found
    )


GUIDE = (
    "# Guide\n\nWhat this guide is for.\n\n"
    "## Install\n\n" + "install words " * 40 + "\n\n"
    "```sh\npip install x\n\npip install y\n```\n\n"
    "## Use\n\n" + ("use words " * 30 + "\n\n") * 6 + "## Tiny\n\nsmall\n"
)


def test_a_text_that_fits_is_one_passage() -> None:
    """Nothing to split: one passage of all the lines."""
    (only,) = passages("one\ntwo\n", 100)
    assert (only.scope, only.chars, only.start, only.end) == ("lines:1-2", 8, 0, 8)


def test_passages_cover_the_text_in_order() -> None:
    """Every line is in exactly one passage, in order; offsets match the line scopes."""
    for chunk in (50, 120, 400, 700, 3000):
        _covers(GUIDE, chunk)
        _covers(GUIDE, chunk, markdown=False)


def test_sections_that_fit_are_whole_and_titled_by_their_heading_path() -> None:
    """A fitting subsection is one passage titled 'Parent > Child'; a larger one is split."""
    titles = [p.title for p in passages(GUIDE, 700, markdown=True)]
    assert titles[0] == "Guide (lines 1-4)"  # the preamble before the first subsection
    assert "Guide > Install" in titles
    assert titles[-1] == "Guide > Tiny"
    assert any(t.startswith("Guide > Use (lines ") for t in titles)


def test_a_code_block_is_never_split_at_its_blank_line() -> None:
    """The fenced block holds a blank line; it stays in one passage with both commands."""
    pieces = _texts(GUIDE, 120)
    (fenced,) = [p for p in pieces if "pip install x" in p]
    assert "pip install y" in fenced
    assert fenced.count("```") == 2


def test_a_heading_stays_with_what_follows_it() -> None:
    """No passage is only a heading, even when the paragraph after it is too big."""
    for chunk in (50, 120, 400):
        for piece in _texts(GUIDE, chunk):
            body = [line for line in piece.splitlines() if line.strip()]
            assert not all(line.startswith("#") for line in body), piece


def test_paragraphs_are_packed_up_to_the_chunk_size() -> None:
    """Short paragraphs share a passage; none exceeds the chunk unless one block does."""
    text = "".join(f"paragraph {n} " + "x" * 40 + "\n\n" for n in range(20))
    found = passages(text, 200)
    assert all((p.chars or 0) <= 200 for p in found)
    assert len(found) < 20
    assert all(piece.startswith("paragraph") for piece in _texts(text, 200, markdown=False))


def test_an_oversized_paragraph_is_cut_at_line_ends_and_a_long_line_stays_whole() -> None:
    """A block larger than the chunk is cut between lines; one longer line is one passage."""
    text = "short\n" + "y" * 50 + "\nend\n"
    assert [p.scope for p in passages(text, 10)] == ["lines:1-1", "lines:2-2", "lines:3-3"]


def test_headings_inside_code_fences_are_not_structure() -> None:
    """A '#' line in a fenced block is code, not a heading."""
    text = "# Real\n\n```\n# not a heading\n```\n\n" + "body line\n" * 30
    assert all("not a heading" not in p.title for p in passages(text, 100, markdown=True))


def test_an_empty_text_has_no_passages_and_a_bad_chunk_is_refused() -> None:
    """Nothing to cover gives nothing; a chunk size below 1 names itself."""
    assert passages("", 10) == ()
    with pytest.raises(ValueError, match="chunk_chars must be positive, not 0"):
        passages("x\n", 0)
