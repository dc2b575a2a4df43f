"""Reciprocal rank fusion of index providers, and degradation when a member fails."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import pytest

from taskctx import PluginHost, TaskContext
from taskctx.fusion import FusedProvider, reciprocal_rank_fusion
from taskctx.model import CoverageOutcome, Enumeration
from taskctx.protocols import (
    IndexDocument,
    IndexPartition,
    PartitionKey,
    SearchHit,
    SearchResult,
)
from taskctx.testing import MemorySource
from tests.core.test_index import RecordingProvider


class CosinePartition:
    """A small real vector index: bag-of-words vectors ranked by cosine similarity."""

    def __init__(self, fail: bool) -> None:
        self.vectors: dict[str, Counter[str]] = {}
        self.versions: dict[str, str] = {}
        self.fail = fail

    def indexed_versions(self) -> Mapping[str, str]:
        return self.versions

    def apply(self, upserts: Sequence[IndexDocument], deletes: Sequence[str]) -> None:
        for doc_id in deletes:
            self.vectors.pop(doc_id, None)
            self.versions.pop(doc_id, None)
        for doc in upserts:
            self.vectors[doc.doc_id] = Counter((doc.text or "").lower().split())
            self.versions[doc.doc_id] = doc.content_version

    def search(self, query: str, doc_ids: Sequence[str] | None, limit: int | None) -> SearchResult:
        if self.fail:
            raise ConnectionError("embedding service unreachable")
        q = Counter(query.lower().split())
        qn = math.sqrt(sum(v * v for v in q.values()))
        scored = []
        for doc_id, vec in self.vectors.items():
            dot = sum(q[t] * vec[t] for t in q)
            if dot and (doc_ids is None or doc_id in doc_ids):
                norm = qn * math.sqrt(sum(v * v for v in vec.values()))
                scored.append(SearchHit(doc_id=doc_id, score=dot / norm))
        scored.sort(key=lambda h: (-h.score, h.doc_id))
        return SearchResult(hits=tuple(scored[:limit]), considered=len(scored))

    def stats(self) -> Mapping[str, Any]:
        return {"documents": len(self.vectors)}

    def close(self) -> None:
        return None


class CosineProvider:
    """Provider of CosinePartitions; ``fail=True`` simulates a dead embedding service."""

    kind: Literal["vector"] = "vector"
    needs_text = True

    def __init__(self, name: str = "cosine", fail: bool = False) -> None:
        self.name = name
        self.fail = fail

    def open_partition(self, key: PartitionKey, directory: Path | None) -> IndexPartition:
        return CosinePartition(self.fail)


def hits(*doc_ids: str, considered: int | None = None) -> SearchResult:
    """A ranking of ``doc_ids`` in order."""
    return SearchResult(
        hits=tuple(SearchHit(doc_id=d, score=1.0) for d in doc_ids),
        considered=len(doc_ids) if considered is None else considered,
    )


def test_rrf_rewards_agreement() -> None:
    """A document ranked well by both rankings wins over one ranked first by one only."""
    fused = reciprocal_rank_fusion([hits("a", "b", "c"), hits("b", "c", "a")])
    assert [h.doc_id for h in fused.hits] == ["b", "a", "c"]
    assert fused.considered == 3
    assert fused.hits[0].score == pytest.approx(1 / 62 + 1 / 61)


def test_rrf_counts_the_union_only_when_complete() -> None:
    """considered is the union when every member returned all matches, else a lower bound."""
    assert reciprocal_rank_fusion([hits("a"), hits("b")]).considered == 2
    partial = reciprocal_rank_fusion([hits("a", considered=10), hits("b")])
    assert partial.considered == 10


def test_rrf_ties_are_deterministic() -> None:
    """Equal fused scores are ordered by doc id."""
    fused = reciprocal_rank_fusion([hits("z", "y"), hits("y", "z")])
    assert [h.doc_id for h in fused.hits] == ["y", "z"]


def context_with(provider: FusedProvider, tmp_path: Path) -> TaskContext:
    """A context over a few items, indexed by ``provider``."""
    ctx = TaskContext("t", host=PluginHost(allow=[]), state_dir=tmp_path)
    ctx.configure_index(provider)
    ctx.attach(
        MemorySource(
            {
                "a.txt": "upload timeout upload timeout",
                "b.txt": "the upload failed",
                "c.txt": "unrelated gardening notes",
            }
        ),
        binding_id="mem",
    )
    return ctx


def test_fused_provider_ranks_through_the_reader(tmp_path: Path) -> None:
    """A fused lexical + vector provider ranks matches first and says the set is ranked."""
    fused = FusedProvider("hybrid", (RecordingProvider(), CosineProvider()))
    package = context_with(fused, tmp_path).reader(consumer="a").read("upload timeout")
    assert [b.ref.path for b in package.blocks] == ["a.txt", "b.txt"]
    cov = package.source_coverage["mem"]
    assert (cov.enumeration, cov.considered) == (Enumeration.RANKED, 2)
    assert not package.diagnostics


def test_optional_member_failure_degrades_with_a_diagnostic(tmp_path: Path) -> None:
    """A failing optional vector member is dropped and the package says so."""
    fused = FusedProvider(
        "hybrid", (RecordingProvider(), CosineProvider(fail=True)), optional=frozenset({"cosine"})
    )
    package = context_with(fused, tmp_path).reader(consumer="a").read("upload timeout")
    assert [b.ref.path for b in package.blocks] == ["a.txt", "b.txt"]
    (diagnostic,) = package.diagnostics
    assert diagnostic.code == "index_degraded"
    assert "embedding service unreachable" in diagnostic.message


def test_required_member_failure_makes_the_binding_unavailable(tmp_path: Path) -> None:
    """Without the degrade policy a failing member fails the binding, never silently."""
    fused = FusedProvider("hybrid", (RecordingProvider(), CosineProvider(fail=True)), degrade=False)
    package = context_with(fused, tmp_path).reader(consumer="a").read("upload timeout")
    cov = package.source_coverage["mem"]
    assert cov.outcome is CoverageOutcome.UNAVAILABLE
    assert "embedding service unreachable" in package.diagnostics[0].message


def test_fused_partition_keeps_members_aligned(tmp_path: Path) -> None:
    """indexed_versions reports only what every member holds."""
    fused = FusedProvider("hybrid", (RecordingProvider(), CosineProvider()))
    partition = fused.open_partition(
        PartitionKey(binding_id="b", source_identity="s", provider="hybrid"), tmp_path
    )
    doc = IndexDocument(doc_id="a", path="a", text="x", content_version="v1")
    partition.apply([doc], [])
    assert partition.indexed_versions() == {"a": "v1"}
    assert (tmp_path / "recording").is_dir()


def test_fused_generation_follows_its_members(tmp_path: Path) -> None:
    """With members that offer ``generation()`` the fused partition offers one that moves
    when any member is applied to through another opener; with a member that has none,
    the fused partition has none (the kernel then never trusts a stale view of it)."""
    from taskctx_fts import FtsProvider

    key = PartitionKey(binding_id="b", source_identity="mem:gen", provider="hybrid")
    fused = FusedProvider(name="hybrid", providers=(FtsProvider(),))
    mine = fused.open_partition(key, tmp_path)
    theirs = fused.open_partition(key, tmp_path)
    before = mine.generation()  # type: ignore[attr-defined]
    theirs.apply([IndexDocument(doc_id="a", path="a", text="alpha", content_version="1")], [])
    assert mine.generation() != before  # type: ignore[attr-defined]
    mixed = FusedProvider(name="mixed", providers=(FtsProvider(), CosineProvider("cos", False)))
    assert getattr(mixed.open_partition(key, None), "generation", None) is None
