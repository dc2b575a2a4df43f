"""Parts of an item around what matched: which characters a page delivers of a candidate
too large for it.

A candidate larger than a whole page is never cut at the limit: the reader delivers the
stretch of its text that holds the most of the query (whole lines where they fit, else
sentences, else words), as a ``chars:S-E`` part of the item marked ``completeness="part"``.
Nothing here reads: :class:`~taskctx.assembly.PageAssembler` reads and delivers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence

import attrs

from taskctx.sections import parse_line_scope

__all__ = [
    "PART_MIN_CHARS",
    "Part",
    "choose_part",
    "line_span",
    "query_terms",
    "stretch_of",
]

PART_MIN_CHARS = 200
"""A page with less room than this left (or than its whole budget, if smaller) opens the
next page for a part instead of delivering a sliver."""

_WORD = re.compile(r"\w+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_SENTENCE_END = re.compile(r"(?<=[.!?;:\u3002\uff01\uff1f\uff1b])\s+")
_SPACE = re.compile(r"\s+")
_STOPWORDS = frozenset(
    (  # noqa: SIM905 (one word list, not eighty lines of them)
        "a an and are as at be but by can do does for from how i if in into is it its me my "
        "no not of on or our so than that the their them then there these they this to was we "
        "were what when where which who why will with would you your"
    ).split()
)
"""English words too common to say where a query matched."""


def query_terms(query: str) -> tuple[str, ...]:
    """The words of ``query`` that say where it matched: casefolded, stop words dropped,
    common English endings cut, runs of CJK characters as their bigrams (CJK text has no
    spaces between words). A term matches wherever the text holds it."""
    terms: list[str] = []
    for word in _WORD.findall(query.casefold()):
        if _CJK.search(word):
            terms.extend(_cjk_terms(word))
        elif word not in _STOPWORDS and (len(word) > 1 or word.isdigit()):
            terms.append(_stem(word))
    return tuple(dict.fromkeys(terms))


_SUFFIXES = ("ing", "ed", "es", "s", "e")


def _stem(word: str) -> str:
    """``word`` without one common English ending (keeping four letters), so it is found
    inside its other forms: ``write`` in writes, writing, written."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def _cjk_terms(word: str) -> list[str]:
    """Bigrams of the CJK runs in ``word`` (a lone CJK character stands for itself) and
    its other runs as words."""
    terms: list[str] = []
    for run in re.split(f"({_CJK.pattern}+)", word):
        if not run:
            continue
        if _CJK.match(run):
            terms.extend([run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)])
        elif run not in _STOPWORDS:
            terms.append(run)
    return terms


@attrs.define(slots=True, frozen=True)
class Part:
    """``text[start:end]`` of an item's whole text, and how much of the query it holds."""

    start: int
    end: int
    score: float


def choose_part(
    text: str,
    start: int,
    end: int,
    room: int,
    terms: Sequence[str],
    *,
    taken: Sequence[tuple[int, int]] = (),
) -> Part | None:
    """The stretch of ``text[start:end]`` of at most ``room`` characters that holds the most
    of ``terms`` (rarer terms weigh more), in whole lines where they fit, else sentences,
    else words; None when no term occurs there at all. No piece overlapping a ``taken``
    span (a part already delivered) is in it.

    Offsets are into ``text``; the earliest of equally good stretches wins, and is then
    widened by the pieces around it while they fit ``room``.
    """
    if room < 1 or not terms:
        return None
    pieces = [
        piece
        for piece in _pieces(text, start, end, room)
        if not any(piece[0] < stop and begin < piece[1] for begin, stop in taken)
    ]
    if not pieces:
        return None
    folded = [text[a:b].casefold() for a, b in pieces]
    holding = {term: [term in piece for piece in folded] for term in terms}
    weight = {
        term: 1.0 + math.log(len(pieces) / count)
        for term, flags in holding.items()
        if (count := sum(flags))
    }
    if not weight:
        return None
    scores = [sum(w for term, w in weight.items() if holding[term][i]) for i in range(len(pieces))]
    best: tuple[int, int, float] | None = None
    left, total = 0, 0.0
    for right, (piece_start, piece_end) in enumerate(pieces):
        if right and pieces[right - 1][1] != piece_start:  # a taken span between: restart
            left, total = right, 0.0
        total += scores[right]
        while piece_end - pieces[left][0] > room:
            total -= scores[left]
            left += 1
        if total > 0 and (best is None or total > best[2]):
            best = (left, right, total)
    if best is None:
        return None
    first, last = _widen(pieces, best[0], best[1], room)
    return Part(pieces[first][0], pieces[last][1], best[2])


def _widen(pieces: Sequence[tuple[int, int]], first: int, last: int, room: int) -> tuple[int, int]:
    """Pieces ``first``..``last`` grown by their adjacent neighbours, one after then one
    before, while they fit ``room``: the part fills its room with what surrounds the match."""
    grew = True
    while grew:
        grew = False
        after = last + 1
        if (
            after < len(pieces)
            and pieces[after][0] == pieces[last][1]  # no taken span between
            and pieces[after][1] - pieces[first][0] <= room
        ):
            last, grew = after, True
        before = first - 1
        if (
            before >= 0
            and pieces[before][1] == pieces[first][0]
            and pieces[last][1] - pieces[before][0] <= room
        ):
            first, grew = before, True
    return first, last


def line_span(text: str, scope: str | None) -> tuple[int, int] | None:
    """Where the whole item (no scope) or a ``lines:A-B`` scope lies in the item's whole
    ``text``, as the line scope slices it; None for any other scope."""
    if scope is None:
        return 0, len(text)
    try:
        first, last = parse_line_scope(scope)
    except ValueError:
        return None
    ends = [0]
    for line in text.splitlines(keepends=True):
        ends.append(ends[-1] + len(line))
    if last >= len(ends):
        return None
    return ends[first - 1], ends[last]


def stretch_of(text: str, scoped: str) -> tuple[int, int] | None:
    """Where a scoped read's text first lies in its item's whole ``text`` (None when it is
    not a stretch of it: a summary, say). Any place it lies holds the same characters."""
    start = text.find(scoped)
    return None if start < 0 or not scoped else (start, start + len(scoped))


def _pieces(text: str, start: int, end: int, room: int) -> Iterator[tuple[int, int]]:
    """Consecutive ``(start, end)`` spans covering ``text[start:end]``: its lines, and a
    line longer than ``room`` as sentences, a longer sentence as words, a longer word cut
    at ``room``; every span is at most ``room`` characters."""
    position = start
    for line in text[start:end].splitlines(keepends=True):
        if len(line) <= room:
            yield position, position + len(line)
        else:
            yield from _split(line, position, room, (_SENTENCE_END, _SPACE))
        position += len(line)


def _split(
    chunk: str, offset: int, room: int, separators: tuple[re.Pattern[str], ...]
) -> Iterator[tuple[int, int]]:
    """Spans of at most ``room`` characters of ``chunk`` cut after a separator match, the
    next separator for a span still too long, then hard cuts."""
    if not separators:
        for at in range(0, len(chunk), room):
            yield offset + at, offset + min(at + room, len(chunk))
        return
    cut = 0
    for match in separators[0].finditer(chunk):
        if match.end() < len(chunk):
            yield from _fit(chunk[cut : match.end()], offset + cut, room, separators[1:])
            cut = match.end()
    yield from _fit(chunk[cut:], offset + cut, room, separators[1:])


def _fit(
    piece: str, offset: int, room: int, separators: tuple[re.Pattern[str], ...]
) -> Iterator[tuple[int, int]]:
    if len(piece) <= room:
        yield offset, offset + len(piece)
    else:
        yield from _split(piece, offset, room, separators)
