"""Search: literal queries, not-searchable queries, CJK, whole text, weights, ties, scope."""

from __future__ import annotations

import random
import sqlite3

import pytest
from taskctx_fts import FtsPartition, FtsProvider
from taskctx_fts.plan import match_expression
from taskctx_fts.tokenize import tokenize

from tests.plugins.fts.conftest import KEY, doc, ids

NASTY_QUERIES = [
    '"',
    '""',
    'upload "timeout',
    'upload" OR "x',
    "NEAR(upload timeout, 2)",
    "NEAR upload",
    "upload*",
    "*",
    "^upload",
    "-upload",
    "upload - timeout",
    "title:upload",
    "body : timeout",
    "{title body}: upload",
    "upload AND timeout",
    "upload OR timeout",
    "upload NOT timeout",
    "AND",
    "OR OR OR",
    "NOT",
    "(upload",
    "upload)",
    "((upload timeout",
    "upload + timeout",
    "rowid = 1; DROP TABLE docs; --",
    "upload\x00timeout",
    "'upload'",
    "upload:",
    ":upload",
    "fts MATCH",
]


@pytest.fixture
def corpus(memory: FtsPartition) -> FtsPartition:
    """A few documents about uploads, timeouts and unrelated things."""
    memory.apply(
        [
            doc("a.md", "The upload times out after 30 s when the index is rebuilt."),
            doc("b.md", "Timeout settings for the upload service and retries."),
            doc("c.md", "Gardening notes: tomatoes need sun."),
            doc("d.md", "near title body and or not"),
        ],
        [],
    )
    return memory


@pytest.mark.parametrize("query", NASTY_QUERIES)
def test_user_text_is_always_literal(corpus: FtsPartition, query: str) -> None:
    """FTS5 syntax in a query is plain text: no error, same as its words searched plainly."""
    result = corpus.search(query, None, 10)
    plain = " ".join(tokenize(query))
    expected = corpus.search(plain, None, 10)
    assert result.searchable == expected.searchable
    assert result.hits == expected.hits
    assert result.considered == expected.considered


def test_match_expression_quotes_every_token() -> None:
    """Each token is one double-quoted FTS5 string; a quote inside is doubled."""
    assert match_expression(["upload", "time"]) == '"upload" OR "time"'
    assert match_expression(['a"b']) == '"a""b"'


@pytest.mark.parametrize("query", ["", "   ", "?!.,;", "the of and", "which is it", "x", "7", "_"])
def test_query_without_searchable_token(corpus: FtsPartition, query: str) -> None:
    """Such a query is reported as not searchable, never as zero matches."""
    result = corpus.search(query, None, 10)
    assert result.hits == ()
    assert result.considered is None
    assert result.searchable is False
    assert result.reasons == ("query_not_searchable",)


def test_no_match_is_zero_considered(corpus: FtsPartition) -> None:
    """A searchable query matching nothing: searched, zero considered."""
    result = corpus.search("xylophone", None, 10)
    assert (result.hits, result.considered, result.searchable) == ((), 0, True)


def test_considered_counts_every_matching_document(corpus: FtsPartition) -> None:
    """considered is the matching set, not the page: limit 1 still counts both."""
    result = corpus.search("upload", None, 1)
    assert len(result.hits) == 1
    assert result.considered == 2


def test_chinese_and_japanese_documents_are_found(memory: FtsPartition) -> None:
    """A Chinese query finds Chinese documents; Japanese likewise; one character too."""
    memory.apply(
        [
            doc("zh1", "我们的上传服务在重建索引时会超时。"),
            doc("zh2", "今天天气很好，我的猫在睡觉。"),
            doc("ja1", "東京の天気は晴れです。アップロードがタイムアウトしました。"),
            doc("ja2", "京都のお寺を訪ねました。"),
            doc("en", "upload timeout"),
        ],
        [],
    )
    assert ids(memory, "上传超时") == ["zh1"]
    assert ids(memory, "天气") == ["zh2"]
    assert ids(memory, "猫") == ["zh2"]
    assert ids(memory, "タイムアウト") == ["ja1"]
    assert ids(memory, "東京の天気") == ["ja1"]
    assert ids(memory, "お寺") == ["ja2"]
    result = memory.search("重建索引", None, 10)
    assert result.searchable
    assert result.considered == 1


def test_whole_text_is_indexed(memory: FtsPartition) -> None:
    """A term after more than 1 MB of text is found: the body is never a prefix."""
    filler = "lorem ipsum dolor sit amet " * 40_000
    assert len(filler) > 1_000_000
    memory.apply([doc("big.txt", filler + " needleword at the very end")], [])
    assert ids(memory, "needleword") == ["big.txt"]


def test_title_outranks_body(memory: FtsPartition) -> None:
    """The same term once in the title beats it once in the body (equal lengths)."""
    memory.apply(
        [
            doc("body.md", "kernel alpha beta", title="gamma delta"),
            doc("title.md", "gamma alpha beta", title="kernel delta"),
            doc("other.md", "nothing to see here", title="unrelated words"),
        ],
        [],
    )
    hits = memory.search("kernel", None, 10).hits
    assert [hit.doc_id for hit in hits] == ["title.md", "body.md"]
    assert hits[0].score > hits[1].score


def test_path_is_searched(memory: FtsPartition) -> None:
    """A file's path is part of what is searched (separators split it into words)."""
    memory.apply([doc("x", "no relevant text", path="reports/quarterly_budget.md")], [])
    assert ids(memory, "quarterly budget") == ["x"]


def test_ties_are_broken_by_doc_id(memory: FtsPartition) -> None:
    """Equal scores come in doc id order, whatever the insertion order."""
    names = ["m", "c", "x", "a", "q"]
    memory.apply([doc(name, "identical text here", path="p") for name in names], [])
    result = memory.search("identical", None, 10)
    assert [hit.doc_id for hit in result.hits] == sorted(names)
    assert len({hit.score for hit in result.hits}) == 1
    assert ids(memory, "identical", 3) == ["a", "c", "m"]


def test_ties_beyond_the_candidate_cut(memory: FtsPartition) -> None:
    """With more tied documents than phase-1 candidates, a top 3 is still the doc-id first 3."""
    names = [f"n{number:03d}" for number in range(250)]
    random.Random(1).shuffle(names)
    memory.apply([doc(name, "identical text here", path="p") for name in names], [])
    assert ids(memory, "identical", 3) == ["n000", "n001", "n002"]
    assert ids(memory, "identical", None)[:3] == ["n000", "n001", "n002"]


def test_restrict_to_doc_ids(corpus: FtsPartition) -> None:
    """doc_ids restricts ranking and the count to those documents."""
    result = corpus.search("upload timeout", ["b.md", "c.md", "missing"], 10)
    assert [hit.doc_id for hit in result.hits] == ["b.md"]
    assert result.considered == 1
    assert corpus.search("upload", [], 10).hits == ()
    assert corpus.search("upload", [], 10).considered == 0


def test_unlimited_search_ranks_every_match(corpus: FtsPartition) -> None:
    """limit=None returns the whole matching set, in the same order as a limited search."""
    everything = corpus.search("upload timeout", None, None)
    assert len(everything.hits) == everything.considered == 2
    assert everything.hits[:1] == corpus.search("upload timeout", None, 1).hits


def _many(count: int) -> list[str]:
    """Documents where "common" is everywhere and rarer words are spread out."""
    texts = []
    for number in range(count):
        words = ["common", "shared"] * (1 + number % 3)
        words += [f"rare{number % 17}", f"mid{number % 5}", "filler"]
        if number % 4 == 0:
            words.append("often")
        texts.append(" ".join(words))
    return texts


def test_scores_equal_plain_fts5_bm25(memory: FtsPartition) -> None:
    """The two-phase scores equal FTS5 bm25() over all terms, and the matching count too."""
    texts = _many(400)
    memory.apply([doc(f"d{n:03d}", text, title=f"t{n % 7}") for n, text in enumerate(texts)], [])
    conn = memory.store._conn
    for query in ["rare3 common", "rare5 mid2 often shared", "common shared often", "t3 rare1"]:
        result = memory.search(query, None, 20)
        tokens = list(dict.fromkeys(tokenize(query)))
        rows = conn.execute(
            "SELECT d.doc_id, -bm25(fts, 2.0, 1.0) FROM fts JOIN docs AS d"
            " ON d.rowid = fts.rowid WHERE fts MATCH ?",
            (match_expression(tokens),),
        ).fetchall()
        exact = dict(rows)
        assert result.considered == len(rows)
        for hit in result.hits:
            assert hit.score == pytest.approx(exact[hit.doc_id], rel=1e-12)
        best = sorted(exact.items(), key=lambda item: (-item[1], item[0]))[:3]
        assert [hit.doc_id for hit in result.hits[:3]] == [doc_id for doc_id, _ in best]


def test_search_errors_other_than_damage_propagate(memory: FtsPartition) -> None:
    """A closed partition raises rather than pretending nothing matched."""
    memory.apply([doc("a", "words")], [])
    memory.close()
    with pytest.raises(sqlite3.ProgrammingError):
        memory.search("words", None, 10)


def test_restricted_count_and_ranking_are_exact(memory: FtsPartition) -> None:
    """Within doc_ids, considered counts the allowed matches and hits stay inside."""
    memory.apply([doc(f"d{n:03d}", text) for n, text in enumerate(_many(300))], [])
    allowed = [f"d{n:03d}" for n in range(0, 300, 7)]
    conn = memory.store._conn
    for query in ["rare3 common", "often mid1", "shared", "rare2 rare4 often"]:
        result = memory.search(query, allowed, 5)
        tokens = list(dict.fromkeys(tokenize(query)))
        matching = {
            row[0]
            for row in conn.execute(
                "SELECT d.doc_id FROM fts JOIN docs AS d ON d.rowid = fts.rowid WHERE fts MATCH ?",
                (match_expression(tokens),),
            )
        }
        assert result.considered == len(matching & set(allowed))
        assert {hit.doc_id for hit in result.hits} <= set(allowed)
        everything = memory.search(query, allowed, None)
        assert len(everything.hits) == result.considered
        assert everything.hits[: len(result.hits)] == result.hits


def test_small_postings_budget_keeps_scores_and_counts() -> None:
    """Terms too large for the postings budget go to FTS5: same scores and counts, evictions."""
    texts = _many(300)
    roomy = FtsProvider().open_partition(KEY, None)
    tight = FtsProvider(postings_budget=200).open_partition(KEY, None)
    queries = [
        "rare3 common shared often mid2",
        "mid1 mid2 mid3 often",
        "rare1 rare2 rare3 rare4 rare5 rare6 rare7 rare8 rare9 rare10 rare11 shared",
    ]
    try:
        for partition in (roomy, tight):
            partition.apply([doc(f"d{n:03d}", text) for n, text in enumerate(texts)], [])
        for query in queries:
            exact = {hit.doc_id: hit.score for hit in roomy.search(query, None, None).hits}
            for limit in (3, 10, None):
                for partition in (roomy, tight):
                    result = partition.search(query, None, limit)
                    assert result.considered == len(exact)
                    for hit in result.hits:
                        assert hit.score == pytest.approx(exact[hit.doc_id], rel=1e-12)
        assert 0 < tight.stats()["cached_postings"] <= 200
    finally:
        roomy.close()
        tight.close()


def test_dense_and_sparse_postings_stay_exact_across_changes(memory: FtsPartition) -> None:
    """A term in most documents keeps its cached frequencies in an array by rowid, a rarer
    common term in a dict; after updates, deletions and new documents past the array's
    end, scores and counts still equal FTS5's bm25() over every term."""

    def text(number: int, extra: str = "") -> str:
        words = ["common"] * (1 + number % 3) + [f"rare{number % 41}", "filler"]
        if number % 20 == 0:
            words += ["sparse"] * (1 + number % 2)
        return " ".join([*words, extra])

    memory.apply([doc(f"d{n:04d}", text(n)) for n in range(600)], [])
    query = "common sparse rare7 rare8"  # the two rarest always go to FTS5
    memory.search(query, None, 10)  # loads the common terms' postings
    kinds = {term: entry.dense for term, entry in memory.cache.postings.items()}
    assert kinds == {"common": True, "spars": False}  # stemmed
    changed = [doc(f"d{n:04d}", text(n + 1, "sparse common")) for n in range(0, 600, 9)]
    changed += [doc(f"d{n:04d}", "filler only") for n in range(5, 600, 31)]
    added = [doc(f"new{n:03d}", text(n, "common sparse")) for n in range(40)]
    gone = [f"d{n:04d}" for n in range(3, 600, 50)]
    memory.apply([*changed, *added], gone)
    assert set(memory.cache.postings) == {"common", "spars"}  # kept exact, not dropped
    conn = memory.store._conn
    for limit in (10, 50):
        result = memory.search(query, None, limit)
        rows = conn.execute(
            "SELECT d.doc_id, -bm25(fts, 2.0, 1.0) FROM fts JOIN docs AS d"
            " ON d.rowid = fts.rowid WHERE fts MATCH ?",
            (match_expression(list(dict.fromkeys(tokenize(query)))),),
        ).fetchall()
        exact = dict(rows)
        assert result.considered == len(rows)
        for hit in result.hits:
            assert hit.score == pytest.approx(exact[hit.doc_id], rel=1e-12)
        best = sorted(exact.items(), key=lambda item: (-item[1], item[0]))[:limit]
        assert [hit.doc_id for hit in result.hits] == [doc_id for doc_id, _ in best]
