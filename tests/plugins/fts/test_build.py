"""The indexing path (issue 17, indexing throughput): the same tokens and the same index,
built with fewer Python steps per word and per document."""

from __future__ import annotations

import random
import re
import sqlite3
import unicodedata
from pathlib import Path

import pytest
from taskctx_fts import FtsProvider, tokenize
from taskctx_fts.provider import OPTIMIZE_AFTER
from taskctx_fts.schema import HASHSIZE
from taskctx_fts.store import DB_NAME
from taskctx_fts.tokenize import (
    clear_caches,
    document_text,
    document_tokens,
)

from tests.plugins.fts.conftest import KEY, doc, ids
from tests.plugins.fts.test_persistence import answers, corpus
from tests.plugins.fts.test_tokenize import _sample_text

_MARKS = dict.fromkeys(
    (
        *range(0x0300, 0x0370),
        *range(0x1AB0, 0x1B00),
        *range(0x1DC0, 0x1E00),
        *range(0x20D0, 0x2100),
        *range(0xFE20, 0xFE30),
    )
)


def reference_words(text: str) -> list[str]:
    """The words as the tokenizer defines them, the slow way: one regex over the text
    normalised step by step (NFKC, casefold, NFD, marks removed, NFC)."""
    if text.isascii():
        return re.findall(r"[a-z0-9]+", text.lower())
    folded = unicodedata.normalize("NFKC", text).casefold()
    stripped = unicodedata.normalize("NFD", folded).translate(_MARKS)
    normal = unicodedata.normalize("NFC", stripped)
    if normal.isascii():
        return re.findall(r"[a-z0-9]+", normal)
    return tokenize._WORD.findall(normal)


def reference_tokens(text: str, unigrams: bool) -> list[str]:
    """Every word split on its own, no cache: what the cached paths must agree with."""
    return [token for word in reference_words(text) for token in tokenize._split(word, unigrams)]


TEXTS = [
    *(_sample_text(seed) for seed in range(6)),
    "The Upload timed out: index_revision=42, retry after 3 s (see docs/upload.md).",
    "Café naïve Über ﬁle ＡＢＣ１２３ Ω Жж ①²½",
    "猫が好き 東京の天気 한국어텍스트 mixed漢字words",
    "",
    "   \t\n",
    "x",
    "the of and",
    "a" * 150 + " short",
]


@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_cached_tokens_equal_the_word_by_word_tokens(text: str) -> None:
    """document_text is document_tokens joined; both, and tokenize, equal the uncached
    word-by-word tokens, cold and warm."""
    for _ in range(2):  # cold caches, then warm
        clear_caches()
        for _ in range(2):
            assert tokenize.tokenize(text) == reference_tokens(text, False)
            assert document_tokens(text) == reference_tokens(text, True)
            assert document_text(text) == " ".join(reference_tokens(text, True))


def test_a_full_word_cache_starts_over_without_losing_words(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """When the word cache fills up mid-text it is cleared and every word is made again."""
    monkeypatch.setattr(tokenize, "_CACHE_LIMIT", 7)
    clear_caches()
    rng = random.Random(5)
    vocabulary = [f"word{n} running cats {n}猫" for n in range(30)]
    for _ in range(20):
        text = " ".join(rng.choices(vocabulary, k=rng.randint(1, 12)))
        assert document_text(text) == " ".join(reference_tokens(text, True))
        assert tokenize.tokenize(text) == reference_tokens(text, False)
        assert len(tokenize._DOCUMENT_CACHE) <= 7 + len(set(reference_words(text)))


def test_one_apply_with_repeats_and_deletes_equals_a_fresh_build(tmp_path: Path) -> None:
    """One batch that adds, repeats a doc id (the last wins), deletes and re-adds equals
    a fresh build of the end state, with warm caches kept exact."""
    warm = FtsProvider().open_partition(KEY, tmp_path / "warm")
    fresh = FtsProvider().open_partition(KEY, tmp_path / "fresh")
    try:
        docs = corpus(120, 7)
        warm.apply(docs, [])
        answers(warm)  # document frequencies and common postings cached
        batch = [
            doc("new1", "alpha zeta omega", version="a"),
            doc("d005", "beta beta gamma", version="b"),
            doc("new1", "omega only now", version="c"),
            doc("d119", "w1 w2 alpha", version="d"),
            doc("new2", "zeta w3", version="e"),
        ]
        warm.apply(batch, ["d119", "d003", "missing"])
        end = {d.doc_id: d for d in docs if d.doc_id != "d003"}
        end.update((d.doc_id, d) for d in batch)
        fresh.apply(sorted(end.values(), key=lambda d: d.doc_id), [])
        assert dict(warm.indexed_versions()) == {k: d.content_version for k, d in end.items()}
        assert warm.stats()["documents"] == fresh.stats()["documents"] == len(end)
        assert warm.stats()["tokens"] == fresh.stats()["tokens"]
        assert ids(warm, "zeta") == ["new2"]
        assert ids(warm, "only") == ["new1"]
        for ours, theirs in zip(answers(warm), answers(fresh), strict=True):
            assert [h.doc_id for h in ours.hits] == [h.doc_id for h in theirs.hits]
            assert [h.score for h in ours.hits] == pytest.approx([h.score for h in theirs.hits])
            assert ours.considered == theirs.considered
        reopened = FtsProvider().open_partition(KEY, tmp_path / "warm")
        try:
            assert [r.hits for r in answers(reopened)] == [r.hits for r in answers(warm)]
        finally:
            reopened.close()
    finally:
        warm.close()
        fresh.close()


def test_new_rowids_follow_the_largest_after_deletes(tmp_path: Path) -> None:
    """Rowids handed out in a batch continue after the largest one left, as SQLite's own."""
    partition = FtsProvider().open_partition(KEY, tmp_path)
    try:
        partition.apply([doc("a", "one"), doc("b", "two"), doc("c", "three")], [])
        partition.apply([doc("d", "four"), doc("e", "five")], ["c"])
    finally:
        partition.close()
    conn = sqlite3.connect(tmp_path / DB_NAME)
    try:
        rows = conn.execute("SELECT doc_id, rowid FROM docs ORDER BY rowid").fetchall()
        fts = [row[0] for row in conn.execute("SELECT rowid FROM fts ORDER BY rowid")]
    finally:
        conn.close()
    assert rows == [("a", 1), ("b", 2), ("d", 3), ("e", 4)]
    assert fts == [1, 2, 3, 4]


def _hashsize(path: Path) -> object:
    conn = sqlite3.connect(path)
    try:
        row = conn.execute("SELECT v FROM fts_config WHERE k = 'hashsize'").fetchone()
    finally:
        conn.close()
    return None if row is None else row[0]


def test_partitions_hold_a_large_fts5_hashsize(tmp_path: Path) -> None:
    """A new file is created with FTS5 hashsize HASHSIZE; a file without it gets it on open."""
    partition = FtsProvider().open_partition(KEY, tmp_path)
    partition.apply([doc("a", "alpha")], [])
    partition.close()
    assert _hashsize(tmp_path / DB_NAME) == HASHSIZE
    conn = sqlite3.connect(tmp_path / DB_NAME)
    conn.execute("DELETE FROM fts_config WHERE k = 'hashsize'")
    conn.commit()
    conn.close()
    assert _hashsize(tmp_path / DB_NAME) is None
    again = FtsProvider().open_partition(KEY, tmp_path)
    try:
        assert ids(again, "alpha") == ["a"]
    finally:
        again.close()
    assert _hashsize(tmp_path / DB_NAME) == HASHSIZE


def _segments(db: Path) -> int:
    """The FTS5 segments of the index in ``db``: its structure record (rowid 10 of
    ``fts_data``) is a 4-byte cookie, then the varints nLevel, nSegment (both < 128 here)."""
    conn = sqlite3.connect(db)
    try:
        (block,) = conn.execute("SELECT block FROM fts_data WHERE id = 10").fetchone()
    finally:
        conn.close()
    assert block[4] < 128
    assert block[5] < 128
    return int(block[5])


def _build_in_chunks(chunks: int, size: int, directory: Path) -> tuple[list[int], list[int]]:
    """Apply ``chunks`` chunks of ``size`` new documents to a fresh partition in
    ``directory``: the FTS5 segments after each chunk (each commit writes one; a merge
    leaves one), and after which chunks the WAL was empty (folded back)."""
    partition = FtsProvider().open_partition(KEY, directory)
    segments, folded = [], []
    try:
        for number in range(chunks):
            start = number * size
            documents = [doc(f"d{n}", f"word{n % 97} text") for n in range(start, start + size)]
            partition.apply(documents, [])
            segments.append(_segments(directory / DB_NAME))
            if (directory / f"{DB_NAME}-wal").stat().st_size == 0:
                folded.append(number + 1)
    finally:
        partition.close()
    return segments, folded


def test_merges_count_documents_across_chunks(tmp_path: Path) -> None:
    """Chunks below OPTIMIZE_AFTER merge once their running count reaches it; after that
    a merge waits until as many documents were written as the file held at the last one,
    so a sync in many chunks merges a doubling index, not after every chunk. An apply of
    OPTIMIZE_AFTER documents or more folds the WAL back even when it does not merge."""
    assert OPTIMIZE_AFTER == 1000
    segments, folded = _build_in_chunks(13, 400, tmp_path / "small")
    assert segments == [1, 2, 1, 2, 3, 1, 2, 3, 4, 5, 6, 1, 2]  # merged after 3, 6 and 12
    assert folded == [3, 6, 12]
    segments, folded = _build_in_chunks(9, 1000, tmp_path / "large")
    assert segments == [1, 1, 2, 1, 2, 3, 4, 1, 2]  # merged after 1, 2, 4 and 8
    assert folded == list(range(1, 10))


def test_a_first_build_in_one_apply_is_not_merged_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An apply into an empty file writes one segment, so the merge it is due is skipped
    (the WAL is still folded back); the next due merge of a file that held documents
    runs."""
    from taskctx_fts.store import FtsStore

    merges: list[int] = []
    optimize = FtsStore.optimize

    def counted(store: FtsStore) -> None:
        merges.append(1)
        optimize(store)

    monkeypatch.setattr(FtsStore, "optimize", counted)
    partition = FtsProvider().open_partition(KEY, tmp_path)
    try:
        partition.apply([doc(f"d{n}", f"word{n % 97} text") for n in range(2000)], [])
        assert merges == []
        assert _segments(tmp_path / DB_NAME) == 1
        assert (tmp_path / f"{DB_NAME}-wal").stat().st_size == 0
        partition.apply([doc(f"e{n}", f"word{n % 89} more") for n in range(2000)], [])
        assert merges == [1]
        assert _segments(tmp_path / DB_NAME) == 1
    finally:
        partition.close()
