"""Persistence, incremental apply with exact caches, damaged files, stats."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest
from taskctx_fts import FtsPartition, FtsProvider
from taskctx_fts.store import DB_NAME, FtsStore

from taskctx.protocols import IndexDocument, SearchResult
from tests.plugins.fts.conftest import KEY, doc, ids

WORDS = [f"w{n}" for n in range(40)] + ["alpha", "beta", "gamma", "delta", "omega"]
QUERIES = ["alpha w3", "beta gamma", "w1 w2 w3 w4", "omega", "delta w10 alpha", "w39 w0"]


def corpus(count: int, seed: int) -> list[IndexDocument]:
    """Random documents over a small vocabulary (common and rare words)."""
    rng = random.Random(seed)
    weights = [1.0 / (rank + 1) for rank in range(len(WORDS))]
    return [
        doc(
            f"d{n:03d}",
            " ".join(rng.choices(WORDS, weights=weights, k=rng.randint(5, 40))),
            title=" ".join(rng.choices(WORDS, k=2)),
        )
        for n in range(count)
    ]


def answers(partition: FtsPartition) -> list[SearchResult]:
    """The results of QUERIES, top 5 and unlimited."""
    return [partition.search(q, None, limit) for q in QUERIES for limit in (5, None)]


def test_reopened_partition_sees_versions_and_answers_the_same(index_dir: Path) -> None:
    """A second provider and partition on the same directory: same versions, same answers."""
    first = FtsProvider().open_partition(KEY, index_dir)
    first.apply(corpus(120, 1), [])
    expected_versions = dict(first.indexed_versions())
    expected = answers(first)
    first.close()
    assert (index_dir / DB_NAME).is_file()
    second = FtsProvider().open_partition(KEY, index_dir)
    try:
        assert dict(second.indexed_versions()) == expected_versions
        assert len(expected_versions) == 120
        assert answers(second) == expected
        assert second.recovered is None
    finally:
        second.close()


def test_in_memory_partition_without_directory() -> None:
    """Without a directory the partition lives in memory and reports no bytes on disk."""
    partition = FtsProvider().open_partition(KEY, None)
    partition.apply([doc("a", "alpha")], [])
    assert partition.stats()["bytes_on_disk"] == 0
    assert partition.stats()["path"] is None
    partition.close()


def test_incremental_apply_matches_a_fresh_index(disk: FtsPartition, tmp_path: Path) -> None:
    """After updates and deletes (with warm caches), rankings equal a from-scratch build."""
    docs = corpus(150, 2)
    disk.apply(docs, [])
    answers(disk)  # load document frequencies and common postings into the caches
    rng = random.Random(3)
    current = {d.doc_id: d for d in docs}
    for step in range(30):
        victim = rng.choice(sorted(current))
        if step % 3 == 0:
            disk.apply([], [victim])
            del current[victim]
        else:
            text = " ".join(rng.choices(WORDS, k=rng.randint(1, 30)))
            changed = doc(victim, text, title=rng.choice(WORDS), version=f"v{step}")
            disk.apply([changed], [])
            current[victim] = changed
        new_id = f"new{step}"
        added = doc(new_id, " ".join(rng.choices(WORDS, k=12)), version="n")
        disk.apply([added], [])
        current[new_id] = added
    fresh = FtsProvider().open_partition(KEY, tmp_path / "fresh")
    try:
        fresh.apply(sorted(current.values(), key=lambda d: d.doc_id), [])
        assert dict(disk.indexed_versions()) == {k: d.content_version for k, d in current.items()}
        for ours, theirs in zip(answers(disk), answers(fresh), strict=True):
            assert [h.doc_id for h in ours.hits] == [h.doc_id for h in theirs.hits]
            assert [h.score for h in ours.hits] == pytest.approx([h.score for h in theirs.hits])
            assert ours.considered == theirs.considered
    finally:
        fresh.close()


def test_update_and_delete_one_document(disk: FtsPartition) -> None:
    """Updating one document changes what it matches; deleting it removes it."""
    disk.apply([doc("a", "apple pear"), doc("b", "pear plum")], [])
    assert ids(disk, "apple") == ["a"]
    disk.apply([doc("a", "cherry", version="2")], [])
    assert ids(disk, "apple") == []
    assert ids(disk, "cherry") == ["a"]
    assert dict(disk.indexed_versions()) == {"a": "2", "b": "1"}
    disk.apply([], ["a", "unknown"])
    assert ids(disk, "cherry") == []
    assert disk.stats()["documents"] == 1


def test_another_connection_invalidates_caches(index_dir: Path) -> None:
    """A change committed by another partition object on the file is seen by this one."""
    reader = FtsProvider().open_partition(KEY, index_dir)
    writer = FtsProvider().open_partition(KEY, index_dir)
    try:
        writer.apply([doc(f"d{n}", "common words here") for n in range(50)], [])
        assert reader.search("common", None, 5).considered == 50
        writer.apply([doc("d0", "different now", version="2")], ["d1"])
        assert reader.search("common", None, 5).considered == 48
        assert ids(reader, "different") == ["d0"]
    finally:
        reader.close()
        writer.close()


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda data: b"this is not a database at all" * 100, id="garbage"),
        pytest.param(lambda data: data[: len(data) // 2], id="truncated"),
        pytest.param(lambda data: data[:100], id="header-only"),
        pytest.param(lambda data: data[:4096] + b"\x00" * (len(data) - 4096), id="zeroed"),
    ],
)
def test_damaged_file_is_rebuilt_empty(index_dir: Path, damage: object) -> None:
    """A corrupted or truncated fts.db is detected on open and rebuilt; nothing crashes."""
    first = FtsProvider().open_partition(KEY, index_dir)
    first.apply(corpus(300, 4), [])
    first.close()
    path = index_dir / DB_NAME
    assert callable(damage)
    path.write_bytes(damage(path.read_bytes()))
    second = FtsProvider().open_partition(KEY, index_dir)
    try:
        assert second.recovered is not None
        assert dict(second.indexed_versions()) == {}
        assert second.search("alpha", None, 5).considered == 0
        second.apply([doc("a", "alpha")], [])
        assert ids(second, "alpha") == ["a"]
    finally:
        second.close()


def test_other_format_is_rebuilt(index_dir: Path) -> None:
    """A file with another format stamp is rebuilt rather than misread."""
    first = FtsProvider().open_partition(KEY, index_dir)
    first.apply([doc("a", "alpha")], [])
    first.close()
    conn = sqlite3.connect(index_dir / DB_NAME)
    with conn:
        conn.execute("UPDATE meta SET value = 'fts-0/tokenizer-0' WHERE key = 'format'")
    conn.close()
    second = FtsProvider().open_partition(KEY, index_dir)
    try:
        assert second.recovered == "another format"
        assert dict(second.indexed_versions()) == {}
    finally:
        second.close()


def test_stats_report_sizes(disk: FtsPartition) -> None:
    """stats(): documents, tokens, terms, bytes on disk and the last apply's seconds."""
    assert disk.stats()["last_apply_seconds"] is None
    disk.apply([doc("one", "alpha beta"), doc("two", "beta gamma", title="T")], [])
    stats = disk.stats()
    assert stats["documents"] == 2
    assert stats["terms"] == 6  # alpha beta gamma t, and the paths one and two
    assert stats["tokens"] == 7
    assert stats["bytes_on_disk"] > 0
    assert stats["last_apply_seconds"] > 0
    assert stats["recovered"] is None


def test_provider_facts() -> None:
    """name, kind, needs_text and a version that is part of the partition key."""
    provider = FtsProvider()
    assert (provider.name, provider.kind, provider.needs_text) == ("fts", "lexical", True)
    assert isinstance(provider.version, str)
    assert provider.version


def test_lost_postings_are_detected_on_open(index_dir: Path) -> None:
    """FTS5 blocks that decode as empty (quick_check passes) are caught by the open probe."""
    first = FtsProvider().open_partition(KEY, index_dir)
    first.apply(corpus(300, 5), [])
    first.close()
    conn = sqlite3.connect(index_dir / DB_NAME)
    with conn:
        conn.execute("UPDATE fts_data SET block = zeroblob(length(block)) WHERE id > 10")
    assert conn.execute("PRAGMA quick_check").fetchall() == [("ok",)]
    conn.close()
    second = FtsProvider().open_partition(KEY, index_dir)
    try:
        assert second.recovered == "the FTS5 index does not find stored documents"
        assert dict(second.indexed_versions()) == {}
    finally:
        second.close()


def test_damage_found_while_searching_is_reported(
    disk: FtsPartition, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Damage surfacing in a search: an honest unknown result, then a clean empty index."""
    disk.apply(corpus(50, 6), [])

    def damaged(*args: object, **kwargs: object) -> object:
        raise sqlite3.DatabaseError("database disk image is malformed")

    monkeypatch.setattr(FtsStore, "top", damaged)
    result = disk.search("alpha w3", None, 5)
    monkeypatch.undo()
    assert result.considered is None
    assert result.hits == ()
    assert result.reasons == ("index_rebuilt",)
    assert result.warnings
    assert dict(disk.indexed_versions()) == {}
    disk.apply([doc("a", "alpha")], [])
    assert ids(disk, "alpha") == ["a"]


def test_damage_found_while_applying_fails_the_apply(
    disk: FtsPartition, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A damaged file during apply raises (the kernel's sync fails) and is rebuilt empty."""
    disk.apply(corpus(20, 7), [])

    def damaged(*args: object, **kwargs: object) -> object:
        raise sqlite3.DatabaseError("database disk image is malformed")

    monkeypatch.setattr(FtsStore, "apply", damaged)
    with pytest.raises(sqlite3.DatabaseError):
        disk.apply([doc("a", "alpha")], [])
    monkeypatch.undo()
    assert dict(disk.indexed_versions()) == {}
