"""Repeated searches of an unchanged partition: answered from memory, never stale."""

from __future__ import annotations

from pathlib import Path

from taskctx_fts import FtsPartition, FtsProvider

from tests.plugins.fts.conftest import KEY, doc
from tests.plugins.fts.test_persistence import QUERIES, answers, corpus


def statements(partition: FtsPartition) -> list[str]:
    """Every SQL statement the partition's connection runs from now on."""
    seen: list[str] = []
    partition.store._conn.set_trace_callback(seen.append)
    return seen


def test_a_repeated_query_runs_no_ranking_sql(index_dir: Path) -> None:
    """The second search of a query on an unchanged partition runs only the check that
    the file is unchanged (no ranking query) and answers the same result."""
    partition = FtsProvider().open_partition(KEY, index_dir)
    try:
        partition.apply(corpus(80, 3), [])
        first = partition.search("alpha w3", None, 5)
        seen = statements(partition)
        again = partition.search("alpha w3", None, 5)
        assert again == first
        assert seen == ["PRAGMA data_version"]
    finally:
        partition.close()


def test_an_apply_through_the_partition_is_seen(index_dir: Path) -> None:
    """After an apply (an upsert or a delete) every query is ranked again."""
    partition = FtsProvider().open_partition(KEY, index_dir)
    try:
        partition.apply(corpus(60, 4), [])
        before = partition.search("omega", None, 5)
        partition.apply([doc("new", "omega omega omega omega", title="omega")], [])
        after = partition.search("omega", None, 5)
        assert after != before
        assert after.hits[0].doc_id == "new"
        partition.apply([], ["new"])
        assert partition.search("omega", None, 5) == before
    finally:
        partition.close()


def test_a_write_by_another_connection_is_seen(index_dir: Path) -> None:
    """A second partition on the same file (another context or process) writing moves
    SQLite's data_version: the first ranks again and sees the new document."""
    first = FtsProvider().open_partition(KEY, index_dir)
    second = FtsProvider().open_partition(KEY, index_dir)
    try:
        first.apply(corpus(60, 5), [])
        answers(first)
        second.apply([doc("other", "delta delta delta delta", title="delta")], [])
        assert first.search("delta w10 alpha", None, 5).hits[0].doc_id == "other"
        fresh = FtsProvider().open_partition(KEY, index_dir)
        try:
            assert answers(first) == answers(fresh)
        finally:
            fresh.close()
    finally:
        first.close()
        second.close()


def test_limits_and_filters_are_answered_apart(index_dir: Path) -> None:
    """A kept result serves its own query and limit only; a filtered search is ranked
    within its doc ids every time."""
    partition = FtsProvider().open_partition(KEY, index_dir)
    try:
        partition.apply(corpus(50, 6), [])
        for query in QUERIES:
            top = partition.search(query, None, 3)
            every = partition.search(query, None, None)
            assert len(top.hits) <= 3
            assert [hit.doc_id for hit in every.hits][: len(top.hits)] == [
                hit.doc_id for hit in top.hits
            ]
        restricted = partition.search("alpha", ["d001", "d002"], 5)
        assert {hit.doc_id for hit in restricted.hits} <= {"d001", "d002"}
        seen = statements(partition)
        partition.search("alpha", ["d003"], 5)
        assert len(seen) > 1
    finally:
        partition.close()
