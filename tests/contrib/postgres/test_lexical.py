"""The ``postgres`` lexical provider: the kit's contract, BM25 like fts, CJK, literal text."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from taskctx_fts import FtsProvider
from taskctx_postgres.lexical import PostgresLexicalPartition, PostgresLexicalProvider
from taskctx_postgres.url import parse_target

from taskctx.codes import CoverageReason
from taskctx.protocols import IndexDocument, IndexProvider, PartitionKey
from taskctx.testing import IndexProviderContract
from tests.lexical_corpus import CORPUS
from tests.lexical_corpus import corpus_doc as doc

pytestmark = pytest.mark.postgres

KEY = PartitionKey(binding_id="b", source_identity="test:pg-lexical", provider="postgres")


@pytest.fixture
def provider(pg_database: str) -> Iterator[PostgresLexicalProvider]:
    """A provider on a fresh database, its pools closed after the test."""
    made = PostgresLexicalProvider(pg_database)
    yield made
    made.close()


@pytest.fixture
def partition(
    provider: PostgresLexicalProvider, tmp_path: Path
) -> Iterator[PostgresLexicalPartition]:
    """A shared partition holding CORPUS."""
    opened = provider.open_partition(KEY, tmp_path)
    opened.apply([doc(doc_id) for doc_id in CORPUS], [])
    yield opened
    opened.close()


class TestPostgresLexicalContract(IndexProviderContract):
    """The conformance kit of taskctx.testing, run on the postgres provider."""

    covers = "postgres"

    @pytest.fixture
    def provider(self, pg_database: str) -> Iterator[IndexProvider]:
        """The provider under test, on a fresh database."""
        made = PostgresLexicalProvider(pg_database)
        yield made
        made.close()


def test_ranks_exactly_as_fts(partition: PostgresLexicalPartition) -> None:
    """Same tokens, same BM25: the hits, their order, scores and counts equal fts's."""
    fts = FtsProvider().open_partition(KEY.model_copy(update={"provider": "fts"}), None)
    try:
        fts.apply([doc(doc_id) for doc_id in CORPUS], [])
        for query in ("upload", "upload proxy timeouts", "tomatoes basil", "上传超时", "猫"):
            for limit in (None, 1, 3):
                ours = partition.search(query, None, limit)
                theirs = fts.search(query, None, limit)
                assert [h.doc_id for h in ours.hits] == [h.doc_id for h in theirs.hits], query
                for a, b in zip(ours.hits, theirs.hits, strict=True):
                    assert math.isclose(a.score, b.score, rel_tol=1e-9), query
                assert ours.considered == theirs.considered, query
    finally:
        fts.close()


def test_restricted_search_keeps_the_partition_statistics(
    partition: PostgresLexicalPartition,
) -> None:
    """Within doc_ids: only those, scored as in the whole partition; considered counts them."""
    whole = {h.doc_id: h.score for h in partition.search("upload", None, None).hits}
    allowed = ["notes/proxy.md", "notes/retry.md", "notes/garden.md"]
    result = partition.search("upload", allowed, None)
    assert [h.doc_id for h in result.hits] == sorted(
        (d for d in whole if d in allowed), key=lambda d: -whole[d]
    )
    assert all(math.isclose(h.score, whole[h.doc_id]) for h in result.hits)
    assert result.considered == 2


def test_cjk_queries_find_cjk_text(partition: PostgresLexicalPartition) -> None:
    """A Chinese bigram query and a one-character Japanese query find their documents."""
    assert [h.doc_id for h in partition.search("上传超时", None, 10).hits] == ["zh/说明.md"]
    assert [h.doc_id for h in partition.search("猫", None, 10).hits] == ["ja/猫.md"]
    assert [h.doc_id for h in partition.search("重建索引", None, 10).hits] == ["zh/说明.md"]


def test_stop_words_only_is_not_searchable(partition: PostgresLexicalPartition) -> None:
    """Only stop words (or one letter): not searched, which is not zero matches."""
    for query in ("which of these is it?", "x"):
        result = partition.search(query, None, 10)
        assert (result.searchable, result.considered, result.hits) == (False, None, ())
        assert result.reasons == (CoverageReason.QUERY_NOT_SEARCHABLE,)


def test_limit_zero_still_counts(partition: PostgresLexicalPartition) -> None:
    """``limit=0`` returns no hits but the exact count of matches."""
    result = partition.search("upload", None, 0)
    assert result.hits == ()
    assert result.considered == 3


def test_ties_at_the_limit_go_to_the_smallest_doc_ids(
    provider: PostgresLexicalProvider, tmp_path: Path
) -> None:
    """Equal scores across the cut: the top ``limit`` are the smallest doc ids among them,
    not whichever the database met first."""
    twins = [
        IndexDocument(doc_id=f"t/{n}", path="same", title="same", text="the upload failed",
                      content_version="1")
        for n in (7, 3, 9, 1, 5)
    ]  # fmt: skip
    opened = provider.open_partition(KEY, tmp_path)
    try:
        opened.apply([*twins, doc("notes/garden.md")], [])
        result = opened.search("upload", None, 2)
        assert [h.doc_id for h in result.hits] == ["t/1", "t/3"]
        assert result.hits[0].score == result.hits[1].score
        assert result.considered == 5
    finally:
        opened.close()


def test_a_large_apply_vacuums_and_still_searches(
    provider: PostgresLexicalProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An apply past VACUUM_AFTER runs VACUUM (outside its transaction) and loses nothing."""
    from taskctx_postgres import lexical

    monkeypatch.setattr(lexical, "VACUUM_AFTER", 2)
    opened = provider.open_partition(KEY, tmp_path)
    try:
        opened.apply([doc(doc_id) for doc_id in CORPUS], [])
        assert len(opened.indexed_versions()) == len(CORPUS)
        assert opened.search("upload", None, 1).considered == 3
    finally:
        opened.close()


def test_sql_in_the_query_is_text(partition: PostgresLexicalPartition, pg_database: str) -> None:
    """A query that looks like SQL is tokens, and the tables are still there after it."""
    partition.search("'); DROP TABLE taskctx_index.lexical_docs; --", None, 10)
    partition.search("upload%' OR 1=1 --", ["notes/garden.md'; --"], 10)
    assert partition.search("upload", None, None).considered == 3
    with psycopg.connect(pg_database) as conn:
        row = conn.execute("SELECT count(*) FROM taskctx_index.lexical_docs").fetchone()
    assert row == (len(CORPUS),)


def test_stats_follow_apply(partition: PostgresLexicalPartition, pg_database: str) -> None:
    """documents and tokens are the running totals; a delete takes its tokens away."""
    stats = dict(partition.stats())
    assert stats["documents"] == len(CORPUS)
    assert stats["schema_bytes"] > 0
    assert stats["shared"] is True
    assert stats["database"] == parse_target(pg_database).redacted
    tokens = stats["tokens"]
    partition.apply([], ["notes/garden.md"])
    after = dict(partition.stats())
    assert after["documents"] == len(CORPUS) - 1
    assert 0 < after["tokens"] < tokens
    assert after["generation"] != stats["generation"]


def test_a_doc_id_given_twice_keeps_the_last(partition: PostgresLexicalPartition) -> None:
    """Two upserts of one doc id in one apply: the last one is what the partition holds."""
    partition.apply([doc("notes/garden.md", "a", "zebra"), doc("notes/garden.md", "b", "lion")], [])
    assert partition.indexed_versions()["notes/garden.md"] == "b"
    assert partition.search("zebra", None, 10).hits == ()
    assert [h.doc_id for h in partition.search("lion", None, 10).hits] == ["notes/garden.md"]


def test_private_partition_is_removed_on_close(
    provider: PostgresLexicalProvider, pg_database: str
) -> None:
    """Without a directory the partition is private (another opener never sees it) and
    close() removes its rows."""
    first = provider.open_partition(KEY, None)
    second = provider.open_partition(KEY, None)
    first.apply([doc("notes/garden.md")], [])
    assert dict(second.indexed_versions()) == {}
    first.close()
    second.close()
    with psycopg.connect(pg_database) as conn:
        rows = conn.execute("SELECT count(*) FROM taskctx_index.lexical_partitions").fetchone()
        docs = conn.execute("SELECT count(*) FROM taskctx_index.lexical_postings").fetchone()
    assert (rows, docs) == ((0,), (0,))


_CRASHING_OWNER = """
import os, signal, sys
from taskctx_postgres.lexical import PostgresLexicalProvider
from taskctx.protocols import IndexDocument, PartitionKey
key = PartitionKey(binding_id="b", source_identity="test:pg-lexical", provider="postgres")
partition = PostgresLexicalProvider(sys.argv[1]).open_partition(key, None)
partition.apply([IndexDocument(doc_id="x", path="x", text="orphaned upload notes",
                               content_version="1")], [])
os.kill(os.getpid(), signal.SIGKILL)
"""


def _private_rows(url: str) -> tuple[int, int]:
    with psycopg.connect(url) as conn:
        parts = conn.execute(
            "SELECT count(*) FROM taskctx_index.lexical_partitions WHERE private"
        ).fetchone()
        postings = conn.execute("SELECT count(*) FROM taskctx_index.lexical_postings").fetchone()
    assert parts is not None
    assert postings is not None
    return int(parts[0]), int(postings[0])


def test_a_crashed_process_private_partition_is_swept_a_live_one_kept(
    provider: PostgresLexicalProvider, pg_database: str
) -> None:
    """A process killed with its private partition open leaves rows that the next provider
    opening the database removes; a live process's private partition survives that sweep."""
    import subprocess
    import sys

    live = provider.open_partition(KEY, None)
    live.apply([doc("notes/upload.md")], [])
    crashed = subprocess.run(
        [sys.executable, "-c", _CRASHING_OWNER, pg_database], capture_output=True, timeout=60
    )
    assert crashed.returncode == -9, crashed.stderr.decode()
    assert _private_rows(pg_database)[0] == 2
    later = PostgresLexicalProvider(pg_database)
    try:
        later.open_partition(KEY, Path("unused")).close()
        assert _private_rows(pg_database)[0] == 1
        assert [h.doc_id for h in live.search("upload", None, 5).hits] == ["notes/upload.md"]
    finally:
        later.close()
    live.close()
    assert _private_rows(pg_database) == (0, 0)
