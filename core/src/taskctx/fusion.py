"""Hybrid ranking: several index providers fused by reciprocal rank fusion (RRF).

A :class:`FusedProvider` opens one partition per member and ranks a query by
``sum(1 / (k + rank))`` over the members' rankings. A member marked optional (a vector
index, say) that fails is dropped from that search with a warning the reader turns into
a diagnostic, when ``degrade=True``; a required member's failure fails the search.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import attrs

from taskctx.codes import CoverageReason
from taskctx.protocols import (
    IndexDocument,
    IndexPartition,
    IndexProvider,
    PartitionKey,
    SearchHit,
    SearchResult,
)

__all__ = ["RRF_K", "FusedPartition", "FusedProvider", "reciprocal_rank_fusion"]

RRF_K = 60
"""The usual RRF constant (Cormack et al., 2009)."""


def reciprocal_rank_fusion(
    results: Sequence[SearchResult], limit: int | None = None, k: int = RRF_K
) -> SearchResult:
    """Fuse rankings by ``sum(1 / (k + rank))``; ties break by doc id for determinism.

    ``considered`` is the size of the union when every member counted its matches, and
    a member that could not search the query contributes nothing.
    """
    scores: dict[str, float] = {}
    for result in results:
        for rank, hit in enumerate(result.hits, start=1):
            scores[hit.doc_id] = scores.get(hit.doc_id, 0.0) + 1.0 / (k + rank)
    ordered = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    hits = tuple(SearchHit(doc_id=doc_id, score=score) for doc_id, score in ordered[:limit])
    searchable = [r for r in results if r.searchable]
    counted = all(r.considered is not None for r in searchable)
    considered = None
    if counted and searchable:
        complete = all(r.considered == len(r.hits) for r in searchable)
        considered = len(scores) if complete else max(r.considered or 0 for r in searchable)
    reasons = tuple(dict.fromkeys(reason for r in results for reason in r.reasons))
    unmeasured = CoverageReason.MATCHING_SET_NOT_COUNTED
    if considered is None and searchable and unmeasured not in reasons:
        reasons = (*reasons, unmeasured)
    return SearchResult(
        hits=hits,
        considered=considered,
        searchable=bool(searchable),
        reasons=reasons,
        warnings=tuple(w for r in results for w in r.warnings),
    )


@attrs.define(slots=True)
class FusedPartition:
    """The member partitions of one key, searched together."""

    members: tuple[tuple[str, IndexPartition, bool], ...]
    degrade: bool
    k: int

    def indexed_versions(self) -> Mapping[str, str]:
        """Versions every member holds (a document missing from one is re-indexed)."""
        maps = [dict(partition.indexed_versions()) for _, partition, _ in self.members]
        first = maps[0]
        return {d: v for d, v in first.items() if all(m.get(d) == v for m in maps[1:])}

    @property
    def generation(self) -> Callable[[], str]:
        """``generation()`` of the fused partition, when every member offers one: the
        members' generations joined, so it moves when anyone applies to any member. A
        member without one leaves the fused partition without one (no AttributeError is
        caught by ``getattr(partition, "generation", None)`` then)."""
        members = [getattr(partition, "generation", None) for _, partition, _ in self.members]
        if not all(callable(member) for member in members):
            raise AttributeError("generation")
        return lambda: "+".join(str(member()) for member in members)  # type: ignore[misc]

    def apply(self, upserts: Sequence[IndexDocument], deletes: Sequence[str]) -> None:
        """Apply to every member (a failing member fails the apply: indexes stay aligned)."""
        for _, partition, _ in self.members:
            partition.apply(upserts, deletes)

    def search(self, query: str, doc_ids: Sequence[str] | None, limit: int | None) -> SearchResult:
        """Each member's ranking, fused; optional members may drop out with a warning."""
        depth = None if limit is None else max(limit, 100)
        results: list[SearchResult] = []
        warnings: list[str] = []
        for name, partition, required in self.members:
            try:
                results.append(partition.search(query, doc_ids, depth))
            except Exception as exc:  # a member is a plugin: its failure is reported
                if required or not self.degrade:
                    raise
                warnings.append(
                    f"index provider {name!r} failed ({type(exc).__name__}: {exc}); "
                    "ranked by the other providers only"
                )
        fused = reciprocal_rank_fusion(results, limit, self.k)
        return fused.model_copy(update={"warnings": (*fused.warnings, *warnings)})

    def stats(self) -> Mapping[str, Any]:
        """Each member's stats under its name."""
        return {name: dict(partition.stats()) for name, partition, _ in self.members}

    def close(self) -> None:
        """Close every member."""
        for _, partition, _ in self.members:
            partition.close()


@attrs.define(slots=True, frozen=True)
class FusedProvider:
    """Several providers as one (``kind="hybrid"``), fused by reciprocal rank fusion.

    ``optional`` names members whose failure may be tolerated when ``degrade`` is True
    (the policy): the search then ranks with the others and says so.
    """

    name: str
    providers: tuple[IndexProvider, ...]
    optional: frozenset[str] = frozenset()
    degrade: bool = True
    k: int = RRF_K
    kind: Literal["hybrid"] = "hybrid"

    @property
    def needs_text(self) -> bool:
        """Whether any member needs document text."""
        return any(p.needs_text for p in self.providers)

    @property
    def version(self) -> str:
        """The members' names and versions: part of the partition key."""
        return "+".join(f"{p.name}-{getattr(p, 'version', '1')}" for p in self.providers)

    def open_partition(self, key: PartitionKey, directory: Path | None) -> IndexPartition:
        """One partition per member, each in its own subdirectory."""
        members = []
        for provider in self.providers:
            sub = None
            if directory is not None:
                sub = directory / provider.name
                sub.mkdir(parents=True, exist_ok=True)
            members.append(
                (
                    provider.name,
                    provider.open_partition(key, sub),
                    provider.name not in self.optional,
                )
            )
        return FusedPartition(tuple(members), self.degrade, self.k)
