"""Candidates: one thing a page may hold, made from a descriptor or a direct entry."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from taskctx.model import (
    DIRECT_BINDING,
    ContextRef,
    Problem,
    Representation,
    SectionInfo,
    SourceDescriptor,
)

if TYPE_CHECKING:
    from taskctx.entries import DirectEntry, SourceBinding

__all__ = ["Candidate", "candidate_of", "direct_candidate"]


@attrs.define(slots=True, frozen=True)
class Candidate:
    """One thing a page may hold: a direct entry, an explicit ref or a source descriptor."""

    ref: ContextRef
    binding_id: str
    source_kind: str
    role: str
    required: bool
    media_type: str
    representation: Representation
    chars: int | None
    title: str | None = None
    sections: tuple[SectionInfo, ...] = ()
    score: float | None = None
    explicit: bool = False
    content_version: str | None = None
    problem: Problem | None = None
    summary: str | None = None


def candidate_of(
    binding: SourceBinding,
    d: SourceDescriptor,
    score: float | None,
    *,
    required: bool = False,
    explicit: bool = False,
    pinned: bool = False,
) -> Candidate:
    """The candidate of a source descriptor under its binding; ``pinned``: its ref names
    the descriptor's content version (the ref an exact read of it sends down)."""
    version = d.content_version if pinned else None
    return Candidate(
        ref=ContextRef(binding=binding.binding_id, path=d.path, scope=d.scope, version=version),
        binding_id=binding.binding_id,
        source_kind=binding.kind,
        role=d.role or binding.role,
        required=required,
        media_type=d.media_type,
        representation=d.representation,
        chars=d.chars,
        title=d.title,
        sections=d.sections,
        score=score,
        explicit=explicit,
        content_version=d.content_version,
        problem=d.problem,
        summary=d.summary,
    )


def direct_candidate(entry: DirectEntry) -> Candidate:
    """The candidate of a direct entry."""
    return Candidate(
        ref=entry.ref,
        binding_id=DIRECT_BINDING,
        source_kind="direct",
        role=entry.role,
        required=entry.required,
        media_type=entry.media_type,
        representation=Representation.TEXT,
        chars=entry.chars if entry.text else None,
        title=entry.title,
        sections=entry.sections,
        content_version=entry.digest,
    )
