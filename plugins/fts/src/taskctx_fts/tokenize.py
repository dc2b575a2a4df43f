"""The one tokenizer for documents and queries, so FTS5 sees exactly our tokens.

Text is NFKC-normalised and casefolded; combining diacritical marks are stripped
(``é`` -> ``e``; kana voicing marks stay, ``が`` is not ``か``); words are maximal runs
of letters and digits (underscore and every other character split, and so do the few
characters SQLite's ``unicode61`` treats as separators although Python calls them
letters). English stop words are dropped, the rest is stemmed with the Snowball English
stemmer. One-letter words and single digits stay (``vitamin d``, ``type 1``), but a
query made only of them is not searchable (``searchable``). Runs of CJK characters (Han,
Hiragana, Katakana, Hangul) become overlapping character bigrams; a lone CJK character
is a unigram.

Documents additionally index every CJK character on its own (``document_tokens``), so a
one-character query (``猫``) finds the documents holding it; longer CJK queries use
bigrams only. Every token is one ``unicode61`` token: letters and digits only, never a
separator, already case-folded.

Indexing uses ``document_text``: the same tokens already joined by spaces (what FTS5
stores), built from a word -> joined-tokens cache with no per-token Python work.
"""

from __future__ import annotations

import importlib
import re
import unicodedata
from collections.abc import Callable, Sequence
from itertools import chain
from typing import TypeVar

from taskctx_fts._unicode61 import alnum_separators

__all__ = [
    "ENGLISH_STOPWORDS",
    "MAX_TOKEN_CHARS",
    "TOKENIZER_VERSION",
    "clear_caches",
    "document_text",
    "document_tokens",
    "is_cjk",
    "normalize",
    "searchable",
    "tokenize",
    "words",
]

TOKENIZER_VERSION = "1"
"""Bump when the tokens of any text change: it is part of the provider version."""

MAX_TOKEN_CHARS = 100
"""Longer runs (base64, hashes) are not words anyone searches for; they are dropped."""

# The Lucene/Snowball-derived English stop list, extended with the most frequent
# function words (pronouns, auxiliaries, determiners). A fixed table: changing it
# changes TOKENIZER_VERSION.
# fmt: off
ENGLISH_STOPWORDS: frozenset[str] = frozenset((
    "a", "about", "an", "and", "are", "as", "at", "be", "been", "but", "by", "can",
    "could", "did", "do", "does", "for", "from", "had", "has", "have", "he", "her", "his",
    "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "no", "not", "of", "on",
    "or", "our", "she", "should", "so", "such", "than", "that", "the", "their", "them",
    "then", "there", "these", "they", "this", "those", "to", "was", "we", "were", "what",
    "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would",
    "you", "your",
))
# fmt: on

_CJK_RANGES = (
    "\u1100-\u11ff"  # Hangul Jamo
    "\u3005\u3007"  # ideographic iteration mark, ideographic number zero
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3130-\u318f"  # Hangul compatibility Jamo
    "\u31f0-\u31ff"  # Katakana phonetic extensions
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\ua960-\ua97f"  # Hangul Jamo extended A
    "\uac00-\ud7ff"  # Hangul syllables, Jamo extended B
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\uff66-\uff9f"  # halfwidth Katakana (NFKC maps most of it to fullwidth)
    "\U0001b000-\U0001b16f"  # Kana supplement and extended A
    "\U00020000-\U0003134f"  # CJK extensions B-G, compatibility supplement
)
_CJK_RUN = re.compile(f"([{_CJK_RANGES}]+)")
_CJK_CHAR = re.compile(f"[{_CJK_RANGES}]")
_ASCII_SPLIT = bytes(code if chr(code).isalnum() and code < 128 else 32 for code in range(256))
"""bytes.translate table: ASCII letters and digits kept, every other byte a space."""
_WORD = re.compile(r"[^\W_" + re.escape(alnum_separators()) + r"]+")
_COMBINING_MARKS = re.compile(
    "["
    "\u0300-\u036f"  # combining diacritical marks
    "\u1ab0-\u1aff"  # ... extended
    "\u1dc0-\u1dff"  # ... supplement
    "\u20d0-\u20ff"  # ... for symbols
    "\ufe20-\ufe2f"  # combining half marks
    "]+"
)
_CACHE_LIMIT = 200_000
"""Words a cache holds before it starts over: about 160 bytes a word (the word and its
tokens), 32 MB at most. More rarely pays: past a corpus's vocabulary the words are ids
and numbers, each seen once."""
_T = TypeVar("_T")
# PyStemmer ships no types. Its own word cache is off (maxCacheSize 0): ours sits in front,
# and PyStemmer's costs more per word than stemming does.
_STEMMER = importlib.import_module("Stemmer").Stemmer("english", 0)
_stem_word: Callable[[str], str] = _STEMMER.stemWord


def is_cjk(char: str) -> bool:
    """Whether ``char`` belongs to a CJK script (segmented into bigrams)."""
    return _CJK_CHAR.fullmatch(char) is not None


def normalize(text: str) -> str:
    """NFKC, casefold, strip combining diacritical marks (ASCII text: just lower-case)."""
    if text.isascii():
        return text.lower()
    folded = unicodedata.normalize("NFKC", text).casefold()
    decomposed = unicodedata.normalize("NFD", folded)
    stripped = _COMBINING_MARKS.sub("", decomposed)
    return unicodedata.normalize("NFC", stripped)


def _ascii_words(text: str) -> list[str]:
    """Runs of ASCII letters and digits, lower-cased (``text`` must be ASCII)."""
    return text.encode("ascii").translate(_ASCII_SPLIT).decode("ascii").lower().split()


def words(text: str) -> list[str]:
    """The normalised words of ``text``: maximal runs of letters and digits."""
    if text.isascii():
        return _ascii_words(text)
    normal = normalize(text)
    if normal.isascii():
        return _ascii_words(normal)
    return _WORD.findall(normal)


def _latin(word: str) -> tuple[str, ...]:
    """One non-CJK word: dropped if a stop word (or absurdly long), else its stem (a
    number is its own stem: the Snowball rules only strip letters)."""
    if len(word) > MAX_TOKEN_CHARS or word in ENGLISH_STOPWORDS:
        return ()
    if _is_number(word):
        return (word,)
    return (_stem_word(word) or word,)


def _is_number(word: str) -> bool:
    """Whether ``word`` is ASCII digits only: ids, counts, years."""
    return word.isdigit() and word.isascii()


_REMEMBERED_DIGITS = 4
"""Numbers of at most this many digits are cached like words (counts and years recur;
there are at most 11,110 of them); longer ones are mostly ids, each seen once."""


def _forgotten(word: str) -> bool:
    """Whether a word is never cached: a number longer than ``_REMEMBERED_DIGITS``."""
    return len(word) > _REMEMBERED_DIGITS and _is_number(word)


def _cjk(run: str, unigrams: bool) -> tuple[str, ...]:
    if len(run) == 1:
        return (run,)
    bigrams = tuple(run[i : i + 2] for i in range(len(run) - 1))
    return (*bigrams, *run) if unigrams else bigrams


def _split(word: str, unigrams: bool) -> tuple[str, ...]:
    """The tokens of one normalised word (mixed CJK and other letters are split apart)."""
    if word.isascii() or _CJK_CHAR.search(word) is None:
        return _latin(word)
    tokens: list[str] = []
    for index, part in enumerate(_CJK_RUN.split(word)):
        if part:
            tokens.extend(_cjk(part, unigrams) if index % 2 else _latin(part))
    return tuple(tokens)


_QUERY_CACHE: dict[str, tuple[str, ...]] = {}
_DOCUMENT_CACHE: dict[str, str] = {}
"""word -> its document tokens joined by spaces ("" for a dropped word)."""


def _cached(cache: dict[str, _T], ws: list[str], make: Callable[[str], _T]) -> Sequence[_T]:
    """The cached value of each of ``ws``, in order; misses are made and cached."""
    found: list[_T | None] = list(map(cache.get, ws))  # one C loop when all are cached
    if None not in found:
        return found  # type: ignore[return-value]
    if len(cache) + len(ws) > _CACHE_LIMIT:
        cache.clear()
    values: list[_T] = []
    for word, value in zip(ws, found, strict=True):
        if value is None:
            value = cache.get(word)  # made for an earlier word of this text
        if value is None:
            value = make(word)
            # long numbers are not remembered: most are ids, and a corpus of numbered
            # records would fill the cache with them and start it over again and again
            if not _forgotten(word):
                cache[word] = value
        values.append(value)
    return values


def _query_tokens(word: str) -> tuple[str, ...]:
    return _split(word, False)


def _document_text(word: str) -> str:
    return " ".join(_split(word, True))


def clear_caches() -> None:
    """Forget the word -> tokens caches (a cold start, for benchmarks and tests)."""
    _QUERY_CACHE.clear()
    _DOCUMENT_CACHE.clear()


def searchable(tokens: Sequence[str]) -> bool:
    """Whether a query of these tokens can be searched: one token of two or more
    characters, or a CJK one. A lone letter or digit (``x``, ``3``) is too short: such a
    query is reported as not searchable rather than run (its matches mean nothing).
    """
    return any(len(token) > 1 or is_cjk(token) for token in tokens)


def tokenize(text: str) -> list[str]:
    """The tokens of ``text`` in order (used for queries, and as the base for documents)."""
    ws = words(text)
    found = _cached(_QUERY_CACHE, ws, _query_tokens)
    return list(chain.from_iterable(found))


def document_text(text: str) -> str:
    """``document_tokens(text)`` joined by single spaces: what the index stores."""
    ws = words(text)
    found = _cached(_DOCUMENT_CACHE, ws, _document_text)
    return " ".join(filter(None, found))


def document_tokens(text: str) -> list[str]:
    """``tokenize(text)`` plus every CJK character as a unigram (so one-character queries hit)."""
    return document_text(text).split()
