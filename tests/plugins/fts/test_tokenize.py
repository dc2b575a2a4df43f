"""The tokenizer: stems, stop words, diacritics, splitting, CJK, and unicode61 agreement."""

from __future__ import annotations

import random
import sqlite3
import unicodedata

import pytest
from taskctx_fts import _unicode61
from taskctx_fts import tokenize as tokenizer
from taskctx_fts.tokenize import (
    ENGLISH_STOPWORDS,
    MAX_TOKEN_CHARS,
    document_tokens,
    is_cjk,
    searchable,
    tokenize,
)


def unicode61_tokens(text: str) -> list[str]:
    """How SQLite's ``unicode61 remove_diacritics 0`` tokenizes ``text``, in order."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute(
            "CREATE VIRTUAL TABLE t USING fts5(a, tokenize='unicode61 remove_diacritics 0')"
        )
        conn.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, 't', 'instance')")
        conn.execute("INSERT INTO t (a) VALUES (?)", (text,))
        return [row[0] for row in conn.execute("SELECT term FROM temp.v ORDER BY offset")]
    finally:
        conn.close()


def test_english_words_are_stemmed() -> None:
    """Snowball English: inflections meet at one stem."""
    assert tokenize("running runs") == ["run", "run"]
    assert tokenize("Connections connected") == tokenize("connection connect")


def test_stop_words_are_dropped() -> None:
    """Words of the fixed stop list never become tokens."""
    assert tokenize("the cat and the hat") == ["cat", "hat"]
    assert {"the", "and", "of", "which"} <= ENGLISH_STOPWORDS
    assert tokenize("which of these is it") == []


def test_case_and_diacritics_fold() -> None:
    """Case, accents and compatibility forms fold to one token."""
    assert tokenize("Café NAÏVE Über") == tokenize("cafe naive uber")
    assert tokenize("ＡＢＣ１２３") == tokenize("abc123")
    assert tokenize("ﬁle") == tokenize("file")


def test_underscore_and_punctuation_split() -> None:
    """Anything that is not a letter or digit separates words, underscores included."""
    assert tokenize("snake_case-value.txt") == ["snake", "case", "valu", "txt"]
    assert tokenize("docs/upload_limits.md") == ["doc", "upload", "limit", "md"]


def test_single_letters_stay_but_are_not_searchable_alone() -> None:
    """``vitamin d`` keeps its letter; a query of one letter or digit is not searchable."""
    assert tokenize("vitamin D") == ["vitamin", "d"]
    assert searchable(tokenize("vitamin D"))
    assert not searchable(tokenize("x"))
    assert not searchable(tokenize("7"))
    assert searchable(tokenize("猫"))


def test_numbers_are_their_own_tokens_and_never_cached() -> None:
    """A number is its own token (what the stemmer gives it) in documents and queries,
    and neither cache keeps one of more than four digits (an id, mostly), so numbered
    records cannot crowd the words out."""
    stem = tokenizer._stem_word
    numbers = ["7", "2024", "0000000000000123", "1" * MAX_TOKEN_CHARS]
    assert all(stem(number) == number for number in numbers)
    tokenizer.clear_caches()
    text = "record " + " ".join(numbers) + " ids"
    assert tokenize(text) == ["record", *numbers, "id"]
    assert document_tokens(text) == ["record", *numbers, "id"]
    assert document_tokens(text) == ["record", *numbers, "id"]  # the cached path
    for cache in (tokenizer._QUERY_CACHE, tokenizer._DOCUMENT_CACHE):
        assert set(cache) == {"record", "ids", "7", "2024"}


def test_long_runs_are_dropped() -> None:
    """A run longer than MAX_TOKEN_CHARS (a hash, base64) is no token."""
    assert tokenize("a" * (MAX_TOKEN_CHARS + 1) + " token") == ["token"]


def test_cjk_runs_become_bigrams() -> None:
    """Chinese, Japanese and Korean runs become overlapping bigrams; lone chars unigrams."""
    assert tokenize("中文字") == ["中文", "文字"]
    assert tokenize("東京の天気") == ["東京", "京の", "の天", "天気"]
    assert tokenize("한국어") == ["한국", "국어"]
    assert tokenize("猫") == ["猫"]
    assert tokenize("abc中文def") == ["abc", "中文", "def"]
    assert all(is_cjk(char) for char in "中カ한")
    assert not is_cjk("a")


def test_documents_also_index_cjk_unigrams() -> None:
    """Documents carry each CJK character too, so one-character queries can match."""
    assert document_tokens("中文字") == ["中文", "文字", "中", "文", "字"]
    assert document_tokens("plain words") == tokenize("plain words")


def test_kana_voicing_marks_are_kept() -> None:
    """``が`` is not folded to ``か``: only diacritical-mark blocks are stripped."""
    assert tokenize("がか") == ["がか"]


def test_separator_table_matches_linked_sqlite() -> None:
    """Every character Python calls a letter or digit is split exactly as unicode61 does."""
    letters = [
        cp for cp in range(0x80, 0x30000) if not 0xD800 <= cp <= 0xDFFF and chr(cp).isalnum()
    ]
    derived = _unicode61.derive_separator_ranges(letters)
    expected = {cp for start, end in derived for cp in range(start, end + 1)}
    assert {ord(c) for c in _unicode61.alnum_separators()} & set(letters) == expected


def _sample_text(seed: int) -> str:
    rng = random.Random(seed)
    alphabet = (
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:;'\"()*^ \t\n"
        "éèêëàâäôöûüçñßøåæœıİſǅǈﬁﬂ"
        "αβγδΩσςЖжщъёЁ"
        "中文字東京天気のはがぱカタカナー한국어텍스트"
        "①²½Ⅻ٣४๓"
        "\u0301\u0308\u3099\u093f\u094d\u0e31\u19b0\u1cf2"
    )
    return "".join(rng.choice(alphabet) for _ in range(4000))


@pytest.mark.parametrize("seed", range(5))
def test_every_token_is_one_unicode61_token(seed: int) -> None:
    """FTS5 reads our space-joined tokens back as exactly the same tokens."""
    text = _sample_text(seed)
    for tokens in (tokenize(text), document_tokens(text)):
        assert tokens
        assert unicode61_tokens(" ".join(tokens)) == tokens


def test_tokens_are_letters_and_digits_only() -> None:
    """No token holds a separator, a space, a quote or a combining mark."""
    for token in document_tokens(_sample_text(99)):
        assert token
        assert all(c.isalnum() for c in token), token
        assert not any(unicodedata.category(c).startswith("M") for c in token)
