"""In-memory term statistics of one partition: document frequencies and common postings.

Document frequencies are read from FTS5 (``fts5vocab``) on first use and cached. The
postings of *common* terms (rowid -> column-weighted frequency, plus a bitset of the
rowids) are loaded once and then kept exact: ``apply`` updates them from each changed
document's old and new tokens, it never drops them. The cache holds at most
``budget`` postings entries (least recently used terms go first); a term too large for
it is ranked by FTS5 instead. When another connection commits (``PRAGMA
data_version`` moves), everything is dropped and reloaded lazily.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from taskctx_fts.store import Change, FtsStore

__all__ = ["DEFAULT_BUDGET", "DF_LIMIT", "Postings", "TermCache", "weighted"]

DEFAULT_BUDGET = 2_000_000
"""Postings entries kept in memory (about 100 bytes each)."""
DF_LIMIT = 1_000_000
"""Cached document frequencies; past this many (junk queries) the cache starts over."""


class Postings:
    """The documents holding one term: weighted frequency by rowid, and a rowid bitset."""

    __slots__ = ("bits", "freq")

    def __init__(self, freq: dict[int, float], bits: int) -> None:
        self.freq = freq
        self.bits = bits


def weighted(weights: tuple[float, float], title: int, body: int) -> float:
    """Column-weighted frequency: what FTS5's bm25() sums over a term's instances."""
    return weights[0] * title + weights[1] * body


def _terms(fields: tuple[str, str] | None) -> set[str]:
    """The distinct terms of a document's two space-joined token fields."""
    if fields is None:
        return set()
    return set(fields[0].split()).union(fields[1].split())


def _counts(fields: tuple[str, str], terms: Iterable[str]) -> dict[str, tuple[int, int]]:
    """term -> (occurrences in title, occurrences in body), for ``terms`` only."""
    title, body = Counter(fields[0].split()), Counter(fields[1].split())
    return {term: (title.get(term, 0), body.get(term, 0)) for term in terms}


class TermCache:
    """Cached df and common-term postings of one store, kept exact across applies."""

    __slots__ = (
        "_version",
        "budget",
        "df",
        "documents",
        "entries",
        "postings",
        "store",
        "tokens",
        "weights",
    )

    def __init__(
        self, store: FtsStore, weights: tuple[float, float], budget: int = DEFAULT_BUDGET
    ) -> None:
        self.store = store
        self.weights = weights
        self.budget = budget
        self.df: dict[str, int] = {}
        self.postings: dict[str, Postings] = {}
        self.entries = 0
        self.documents = 0
        self.tokens = 0
        self._version = -1
        self.refresh()

    def refresh(self) -> None:
        """Drop every cached value and re-read the totals."""
        self.df.clear()
        self.postings.clear()
        self.entries = 0
        self.documents, self.tokens = self.store.totals()
        self._version = self.store.data_version()

    @property
    def version(self) -> int:
        """SQLite's ``data_version`` when the cache last matched the file."""
        return self._version

    def check(self) -> None:
        """Refresh if another connection committed since we last looked."""
        if self.store.data_version() != self._version:
            self.refresh()

    @property
    def average_length(self) -> float:
        """Average document length in tokens over both fields, as FTS5 computes it."""
        return self.tokens / self.documents if self.documents else 0.0

    def frequency(self, term: str) -> int:
        """Documents holding ``term``."""
        found = self.df.get(term)
        if found is None:
            if len(self.df) >= DF_LIMIT:
                self.df.clear()
            found = self.df[term] = self.store.document_frequency(term)
        return found

    def cacheable(self, term: str) -> bool:
        """Whether the postings of ``term`` fit the budget (cached or could be)."""
        return term in self.postings or self.frequency(term) <= self.budget // 4

    def postings_of(self, term: str) -> Postings:
        """The postings of ``term`` (loaded on first use; marks it recently used)."""
        found = self.postings.pop(term, None)
        if found is None:
            freq = self.store.postings(term, self.weights)
            bits = bytearray((max(freq, default=0) >> 3) + 1)
            for rowid in freq:
                bits[rowid >> 3] |= 1 << (rowid & 7)
            found = Postings(freq, int.from_bytes(bits, "little"))
            self.entries += len(freq)
            self._evict(self.entries - self.budget)
        self.postings[term] = found
        return found

    def _evict(self, excess: int) -> None:
        while excess > 0 and self.postings:
            oldest = next(iter(self.postings))
            excess -= len(self.postings[oldest].freq)
            self.entries -= len(self.postings.pop(oldest).freq)

    def apply(self, changes: Iterable[Change]) -> None:
        """Update cached df and postings from each changed document, then the totals.

        If another connection committed meanwhile, the changes are not all ours to
        replay: everything is dropped instead (and reloaded lazily).
        """
        if self.store.data_version() != self._version:
            self.refresh()
            return
        weights = self.weights
        df, postings = self.df, self.postings
        if not df and not postings:  # nothing cached to keep exact (a cold build)
            changes = ()
        for change in changes:
            old, new = _terms(change.old), _terms(change.new)
            if df:
                for term in old - new:
                    if term in df:
                        df[term] -= 1
                for term in new - old:
                    if term in df:
                        df[term] += 1
            touched = (old | new) & postings.keys()
            if not touched:
                continue
            counts = {} if change.new is None else _counts(change.new, touched & new)
            rowid, bit = change.rowid, 1 << change.rowid
            for term in touched:
                entry = postings[term]
                found = counts.get(term)
                if found is None:
                    if entry.freq.pop(rowid, None) is not None:
                        self.entries -= 1
                    entry.bits &= ~bit
                else:
                    if rowid not in entry.freq:
                        self.entries += 1
                    entry.freq[rowid] = weighted(weights, *found)
                    entry.bits |= bit
        self.documents, self.tokens = self.store.totals()
