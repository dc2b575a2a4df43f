"""The query plan and BM25 scoring.

A query's distinct tokens that occur in the index are split by document frequency:
*selective* terms (``df/N`` at most ``selective_fraction``, and always the two rarest)
go to FTS5, which ranks the documents matching any of them by ``bm25()``; *common*
terms add their BM25 contributions in Python, for those candidates only, from cached
postings. The sum is FTS5's own formula (k1 = 1.2, b = 0.75, idf clamped to 1e-6,
column-weighted frequency, whole-document length over the average) accumulated in the
same order as ``bm25()`` over all terms would, so scores equal a plain FTS5 ``OR``
ranking; what the plan saves is reading the long doclists of common terms.

The MATCH expression is built only from our tokens, each a double-quoted string, so
nothing a user types can change its syntax.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "K1",
    "MIN_CANDIDATES",
    "MIN_SELECTIVE",
    "SELECTIVE_FRACTION",
    "B",
    "QueryPlan",
    "candidates_for",
    "count_matching",
    "idf",
    "make_plan",
    "match_expression",
    "quote",
    "rank",
    "rescore",
]

K1 = 1.2
B = 0.75
SELECTIVE_FRACTION = 0.02
"""Terms in at most this fraction of the documents are ranked by FTS5 (phase 1)."""
MIN_SELECTIVE = 2
"""The rarest terms always go to phase 1, however common they are."""
MIN_CANDIDATES = 100
"""Phase 1 keeps max(MIN_CANDIDATES, 2 * limit) candidates for phase 2 to re-score."""


def quote(token: str) -> str:
    """One FTS5 string: the token, double-quoted (a quote inside is doubled)."""
    return '"' + token.replace('"', '""') + '"'


def match_expression(tokens: Iterable[str]) -> str:
    """``"a" OR "b" OR ...``: any of the tokens, each a literal string."""
    return " OR ".join(map(quote, tokens))


def idf(df: int, documents: int) -> float:
    """FTS5's IDF: log((N - n + 0.5) / (n + 0.5)), at least 1e-6."""
    value = math.log((documents - df + 0.5) / (df + 0.5))
    return value if value > 0.0 else 1e-6


def candidates_for(limit: int) -> int:
    """How many phase-1 candidates a top-``limit`` query keeps."""
    return max(MIN_CANDIDATES, 2 * limit)


@dataclass(frozen=True)
class QueryPlan:
    """Which of a query's terms FTS5 ranks and which are added from postings."""

    selective: tuple[str, ...]
    common: tuple[str, ...]

    @property
    def terms(self) -> tuple[str, ...]:
        """Every term that occurs in the index: selective first, then common."""
        return self.selective + self.common

    @property
    def empty(self) -> bool:
        """True when no query term occurs in the index."""
        return not self.selective


def make_plan(
    tokens: Sequence[str],
    frequency: Callable[[str], int],
    cacheable: Callable[[str], bool],
    documents: int,
    fraction: float = SELECTIVE_FRACTION,
    minimum: int = MIN_SELECTIVE,
) -> QueryPlan:
    """Split the distinct indexed ``tokens`` into selective and common, rarest first."""
    present = sorted((df, token) for token in dict.fromkeys(tokens) if (df := frequency(token)) > 0)
    selective: list[str] = []
    common: list[str] = []
    for position, (df, token) in enumerate(present):
        rare = df <= fraction * documents or position < minimum
        (selective if rare or not cacheable(token) else common).append(token)
    return QueryPlan(tuple(selective), tuple(common))


def rescore(
    rows: Sequence[tuple[int, float, str, int]],
    common: Sequence[tuple[float, Callable[[int], float]]],
    average: float,
) -> list[tuple[float, str]]:
    """Phase 2: add each common term's contribution to the phase-1 score of each row.

    ``rows`` are (rowid, phase-1 score, doc_id, length); ``common`` holds (idf, rowid ->
    weighted frequency, 0.0 where the document does not hold the term) per common term,
    in plan order (each row's sum grows in that order, as in FTS5). A frequency of 0.0
    adds nothing, so it is skipped (as FTS5 visits only the documents holding a term).
    """
    if not common:
        return [(score, doc_id) for _, score, doc_id, _ in rows]
    scores = {rowid: score for rowid, score, _, _ in rows}
    lengths = {rowid: length for rowid, _, _, length in rows}
    norms: dict[int, float] = {}
    saturation = K1 + 1.0
    for weight, frequency_of in common:
        for rowid in scores:
            frequency = frequency_of(rowid)
            if not frequency:
                continue
            norm = norms.get(rowid)
            if norm is None:
                norm = norms[rowid] = K1 * (1 - B + B * lengths[rowid] / average)
            scores[rowid] += weight * ((frequency * saturation) / (frequency + norm))
    return [(scores[rowid], doc_id) for rowid, _, doc_id, _ in rows]


def rank(scored: Iterable[tuple[float, str]], limit: int | None) -> list[tuple[float, str]]:
    """Best first; equal scores in doc_id order; at most ``limit``."""
    ordered = sorted(scored, key=lambda item: (-item[0], item[1]))
    return ordered if limit is None else ordered[:limit]


def count_matching(selective: Sequence[int], common_bits: int) -> int:
    """|S ∪ C| from the rowids matching a selective term and the bitset of the common ones."""
    if not common_bits:
        return len(selective)
    overlap = 0
    if selective:
        size = (max(common_bits.bit_length(), max(selective) + 1) + 7) >> 3
        mask = common_bits.to_bytes(size, "little")
        overlap = sum(mask[rowid >> 3] >> (rowid & 7) & 1 for rowid in selective)
    return len(selective) + common_bits.bit_count() - overlap
