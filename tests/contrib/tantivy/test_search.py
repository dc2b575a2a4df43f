"""The ``tantivy`` provider's ranking: fts's tokens, BM25 over two fields, exact counts."""

from __future__ import annotations

from pathlib import Path

import pytest
from taskctx_fts import FtsProvider
from taskctx_tantivy import TantivyPartition, TantivyProvider
from taskctx_tantivy import provider as provider_module

from taskctx.codes import CoverageReason
from taskctx.protocols import IndexDocument

from .conftest import CORPUS, KEY, doc


def test_finds_what_fts_finds(partition: TantivyPartition) -> None:
    """Same tokens: every query matches the same documents, and as many, as in fts."""
    fts = FtsProvider().open_partition(KEY.model_copy(update={"provider": "fts"}), None)
    try:
        fts.apply([doc(doc_id) for doc_id in CORPUS], [])
        for query in ("upload", "upload proxy timeouts", "tomatoes basil", "上传超时", "猫"):
            ours = partition.search(query, None, None)
            theirs = fts.search(query, None, None)
            assert {h.doc_id for h in ours.hits} == {h.doc_id for h in theirs.hits}, query
            assert ours.considered == theirs.considered, query
    finally:
        fts.close()


def test_english_stems_match(partition: TantivyPartition) -> None:
    """Snowball stems: "uploading" finds "upload"/"uploads", "timed" finds "times"."""
    found = {h.doc_id for h in partition.search("uploading", None, None).hits}
    assert found == {"notes/upload.md", "notes/proxy.md", "notes/retry.md"}
    assert partition.search("timed", None, 1).hits[0].doc_id == "notes/upload.md"


def test_cjk_queries_find_cjk_text(partition: TantivyPartition) -> None:
    """A Chinese bigram query and a one-character Japanese query find their documents
    (tantivy's own query parser would make the bigrams a phrase that matches nothing)."""
    assert [h.doc_id for h in partition.search("上传超时", None, 10).hits] == ["zh/说明.md"]
    assert [h.doc_id for h in partition.search("猫", None, 10).hits] == ["ja/猫.md"]
    assert [h.doc_id for h in partition.search("重建索引", None, 10).hits] == ["zh/说明.md"]


def test_title_outweighs_body(tmp_path: Path) -> None:
    """A token in the title (indexed twice) ranks above the same token once in a body;
    with ``title_weight=1`` the two tie, and the weight is part of the provider version
    (another weight indexes into another partition)."""
    twins = [
        IndexDocument(doc_id="a", path="pa", title="notes", text="proxy settings",
                      content_version="1"),
        IndexDocument(doc_id="b", path="pb", title="proxy", text="notes settings",
                      content_version="1"),
    ]  # fmt: skip
    weighted = TantivyProvider().open_partition(KEY, tmp_path / "2")
    flat = TantivyProvider(title_weight=1).open_partition(KEY, tmp_path / "1")
    try:
        weighted.apply(twins, [])
        flat.apply(twins, [])
        assert [h.doc_id for h in weighted.search("proxy", None, None).hits] == ["b", "a"]
        scores = [h.score for h in flat.search("proxy", None, None).hits]
        assert scores[0] == scores[1]
    finally:
        weighted.close()
        flat.close()
    assert TantivyProvider().version != TantivyProvider(title_weight=1).version
    for bad in (1.5, -1, True):
        with pytest.raises(ValueError, match="title_weight"):
            TantivyProvider(title_weight=bad)  # type: ignore[arg-type]
    for seconds in (-1.0, float("nan")):
        with pytest.raises(ValueError, match="lock_timeout"):
            TantivyProvider(lock_timeout=seconds)


def test_restricted_search_keeps_the_partition_statistics(partition: TantivyPartition) -> None:
    """Within doc_ids: only those, scored as in the whole partition; considered counts them."""
    whole = {h.doc_id: h.score for h in partition.search("upload", None, None).hits}
    allowed = ["notes/proxy.md", "notes/retry.md", "notes/garden.md", "not/indexed.md"]
    result = partition.search("upload", allowed, None)
    assert [h.doc_id for h in result.hits] == sorted(
        (d for d in whole if d in allowed), key=lambda d: -whole[d]
    )
    assert all(h.score == whole[h.doc_id] for h in result.hits)
    assert result.considered == 2


def test_stop_words_only_is_not_searchable(partition: TantivyPartition) -> None:
    """Only stop words (or one letter): not searched, which is not zero matches."""
    for query in ("which of these is it?", "x"):
        result = partition.search(query, None, 10)
        assert (result.searchable, result.considered, result.hits) == (False, None, ())
        assert result.reasons == (CoverageReason.QUERY_NOT_SEARCHABLE,)


@pytest.mark.parametrize(
    "query", ["title:upload", "upload AND NOT proxy", '"upload', "upload*", "body:(proxy"]
)
def test_query_syntax_is_plain_words(partition: TantivyPartition, query: str) -> None:
    """Field prefixes, operators, quotes and wildcards are words, never syntax: each query
    finds what its words find."""
    words = " ".join(w.strip('"*():') for w in query.replace(":", " ").split())
    expected = partition.search(words, None, None)
    got = partition.search(query, None, None)
    assert [h.doc_id for h in got.hits] == [h.doc_id for h in expected.hits]


def test_limit_zero_still_counts(partition: TantivyPartition) -> None:
    """``limit=0`` returns no hits but the exact count of matches."""
    result = partition.search("upload", None, 0)
    assert (result.hits, result.considered) == ((), 3)


def test_ties_at_the_limit_go_to_the_smallest_doc_ids(tmp_path: Path) -> None:
    """Equal scores across the cut: the top ``limit`` are the smallest doc ids among them,
    whatever order tantivy met them in, even when the tie is longer than its slack."""
    twins = [
        IndexDocument(doc_id=f"t/{n:02d}", path="same", title="same", text="the upload failed",
                      content_version="1")
        for n in (37, 3, 19, 1, 25, 11, 7, 29, 13, 5, 31, 9, 23, 17, 21, 15, 27, 33, 2, 35)
    ]  # fmt: skip
    opened = TantivyProvider().open_partition(KEY, tmp_path)
    try:
        opened.apply(twins[:10], [])
        opened.apply([*twins[10:], doc("notes/garden.md")], [])  # a second segment
        result = opened.search("upload", None, 2)
        assert [h.doc_id for h in result.hits] == ["t/01", "t/02"]
        assert result.considered == len(twins)
        everything = opened.search("upload", None, None)
        assert [h.doc_id for h in everything.hits] == sorted(t.doc_id for t in twins)
    finally:
        opened.close()


def test_duplicate_upserts_keep_the_last(tmp_path: Path) -> None:
    """One apply naming a doc id twice holds it once, with the last version."""
    opened = TantivyProvider().open_partition(KEY, tmp_path)
    try:
        opened.apply([doc("notes/garden.md", "1"), doc("notes/garden.md", "2", "basil only")], [])
        assert dict(opened.indexed_versions()) == {"notes/garden.md": "2"}
        assert opened.search("basil", None, None).considered == 1
        assert opened.search("tomatoes", None, None).considered == 0
    finally:
        opened.close()


def test_hits_are_named_right_when_doc_id_keys_collide(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hits are named from a 63-bit key of each doc id; ids sharing a key are read from
    the stored documents instead, so every hit still names its own document."""
    monkeypatch.setattr(provider_module, "key_of", lambda doc_id: 7)
    opened = TantivyProvider().open_partition(KEY, tmp_path)
    try:
        opened.apply([doc(doc_id) for doc_id in CORPUS], [])
        opened.indexed_versions()
        found = {h.doc_id for h in opened.search("upload", None, None).hits}
        assert found == {"notes/upload.md", "notes/proxy.md", "notes/retry.md"}
    finally:
        opened.close()
