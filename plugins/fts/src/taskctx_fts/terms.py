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

from array import array
from collections import Counter
from collections.abc import Iterable

from taskctx_fts.store import Change, FtsStore

__all__ = ["DEFAULT_BUDGET", "DENSE_SHARE", "DF_LIMIT", "Postings", "TermCache", "weighted"]

DEFAULT_BUDGET = 2_000_000
"""Postings entries kept in memory (about 100 bytes each)."""
DF_LIMIT = 1_000_000
"""Cached document frequencies; past this many (junk queries) the cache starts over."""


DENSE_SHARE = 12
"""A term held by more than one document in this many (of the rowids up to the largest)
keeps its frequencies in an array indexed by rowid (8 bytes a rowid) instead of a dict
(about 100 bytes an entry): the common terms of a large partition are what a cache of
postings holds, and a dict of a million of them is most of a process's memory."""


class Postings:
    """The documents holding one term: weighted frequency by rowid, and a rowid bitset.

    The frequencies are a dict (rowid -> frequency) for a sparse term, an array indexed by
    rowid for a dense one (0.0 where a document does not hold the term: a frequency of 0
    adds nothing to a score either way).
    """

    __slots__ = ("_dense", "_sparse", "bits", "count")

    def __init__(self, freq: dict[int, float], bits: int) -> None:
        self.bits = bits
        self.count = len(freq)
        largest = max(freq, default=0)
        self._sparse: dict[int, float] | None = None
        self._dense: array[float] | None = None
        if self.count * DENSE_SHARE > largest:
            dense = array("d", bytes(8 * (largest + 1)))
            for rowid, frequency in freq.items():
                dense[rowid] = frequency
            self._dense = dense
        else:
            self._sparse = freq

    @property
    def dense(self) -> bool:
        """Whether the frequencies are an array indexed by rowid."""
        return self._dense is not None

    def frequency(self, rowid: int) -> float:
        """The weighted frequency of the term in ``rowid`` (0.0 if it does not hold it)."""
        dense = self._dense
        if dense is not None:
            return dense[rowid] if rowid < len(dense) else 0.0
        assert self._sparse is not None
        return self._sparse.get(rowid, 0.0)

    def put(self, rowid: int, frequency: float) -> None:
        """Record that ``rowid`` holds the term with this weighted frequency."""
        bit = 1 << rowid
        if not self.bits & bit:
            self.count += 1
            self.bits |= bit
        dense = self._dense
        if dense is None:
            assert self._sparse is not None
            self._sparse[rowid] = frequency
            return
        if rowid >= len(dense):
            dense.frombytes(bytes(8 * (rowid + 1 - len(dense))))
        dense[rowid] = frequency

    def discard(self, rowid: int) -> None:
        """Record that ``rowid`` no longer holds the term."""
        bit = 1 << rowid
        if not self.bits & bit:
            return
        self.count -= 1
        self.bits &= ~bit
        if self._dense is not None:
            self._dense[rowid] = 0.0
        else:
            assert self._sparse is not None
            self._sparse.pop(rowid, None)


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
            self.entries += found.count
            self._evict(self.entries - self.budget)
        self.postings[term] = found
        return found

    def _evict(self, excess: int) -> None:
        while excess > 0 and self.postings:
            oldest = next(iter(self.postings))
            count = self.postings.pop(oldest).count
            excess -= count
            self.entries -= count

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
            rowid = change.rowid
            for term in touched:
                entry = postings[term]
                found = counts.get(term)
                before = entry.count
                if found is None:
                    entry.discard(rowid)
                else:
                    entry.put(rowid, weighted(weights, *found))
                self.entries += entry.count - before
        self.documents, self.tokens = self.store.totals()
