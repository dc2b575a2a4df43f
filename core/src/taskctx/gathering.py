"""Gathering: what each binding offers one read, and the page's candidates in rank order.

For each binding the reader asks :func:`scan_binding` (filters, pinned revision, index
sync, ranked candidates); :func:`page_candidates` then puts the required candidates and
the ranked optional ones of a page in order. Everything is passed in; nothing here calls
back into the reader or the TaskContext.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from typing import overload

import attrs

from taskctx.candidates import Candidate, candidate_of, direct_candidate
from taskctx.coverage import BindingScan
from taskctx.entries import DirectEntry, SourceBinding
from taskctx.errors import PolicyError, StaleReaderError
from taskctx.index import (
    CandidateSet,
    ContextIndex,
    PartitionState,
    RevisionMovedError,
    TextLoader,
    passes_filters,
)
from taskctx.model import (
    ContextReadIntent,
    CoverageOutcome,
    CoverageReason,
    Snapshot,
    SourceDescriptor,
)
from taskctx.readback import Readback

__all__ = [
    "Gathered",
    "RankedCandidates",
    "ScanRequest",
    "Segment",
    "page_candidates",
    "scan_binding",
    "search_window",
    "skipped_scan",
]

Segment = tuple[SourceBinding, Sequence[SourceDescriptor], "Sequence[float] | None"]
"""One binding's ranked descriptors and their scores (None: structural order)."""


def search_window(max_blocks: int) -> int:
    """How many ranked hits past the page's start a read asks of a lexical provider."""
    return max(200, 8 * max_blocks)


class RankedCandidates(Sequence[Candidate]):
    """Optional candidates in rank order, built lazily: a page touches only its window.

    Direct entries come first, then each binding's candidates. When every binding was
    ranked, bindings are interleaved by rank; otherwise they follow in binding order. The
    partitions' lists are used as they are, never copied per read.
    """

    def __init__(self, head: list[Candidate], segments: list[Segment]) -> None:
        self._head = head
        self._segments = segments
        self._built: dict[int, Candidate] = {}
        self._starts: list[int] = []
        total = 0
        for _, descriptors, _ in segments:
            self._starts.append(total)
            total += len(descriptors)
        self._size = total
        self._merged: list[tuple[int, int]] | None = None
        if len(segments) > 1 and all(scores is not None for _, _, scores in segments):
            order = [
                (seg, item)
                for seg, (_, descriptors, _) in enumerate(segments)
                for item in range(len(descriptors))
            ]
            # Scores of different partitions are not comparable (BM25's idf depends on each
            # corpus), so bindings are fused by rank, as reciprocal rank fusion does: the
            # best of each binding first, then the second best of each, ...
            order.sort(key=lambda pair: (pair[1], pair[0]))
            self._merged = order

    def __len__(self) -> int:
        return len(self._head) + self._size

    @overload
    def __getitem__(self, index: int) -> Candidate: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Candidate]: ...
    def __getitem__(self, index: int | slice) -> Candidate | Sequence[Candidate]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        if index < len(self._head):
            return self._head[index]
        built = self._built.get(index)
        if built is None:
            flat = index - len(self._head)
            if self._merged is not None:
                seg, item = self._merged[flat]
            else:
                seg = bisect.bisect_right(self._starts, flat) - 1
                item = flat - self._starts[seg]
            binding, descriptors, scores = self._segments[seg]
            built = candidate_of(binding, descriptors[item], scores[item] if scores else None)
            self._built[index] = built
        return built


@attrs.define(slots=True, frozen=True)
class ScanRequest:
    """What one read asks of every binding: the intent, the pinned snapshot, and how far."""

    intent: ContextReadIntent
    snapshot: Snapshot
    pin_errors: Mapping[str, str]
    """Why a source left out of the snapshot did not answer, by binding id."""
    allow_repin: bool
    """Whether a source that moved during enumeration may be re-pinned (first pages)."""
    limit: int
    """How many ranked candidates to ask the index for."""


def skipped_scan(binding: SourceBinding, request: ScanRequest) -> BindingScan | None:
    """The finished scan of a binding the read does not search (filtered out, or absent
    from the snapshot), or None when the binding is to be searched."""
    scan = BindingScan(binding.binding_id, binding.kind)
    filters = request.intent.filters
    if filters.bindings is not None and binding.binding_id not in filters.bindings:
        scan.outcome = CoverageOutcome.NOT_SEARCHED
        scan.reasons.append(CoverageReason.BINDING_EXCLUDED)
        return scan
    if filters.source_kinds is not None and binding.kind not in filters.source_kinds:
        scan.outcome = CoverageOutcome.NOT_SEARCHED
        scan.reasons.append(CoverageReason.SOURCE_KIND_EXCLUDED)
        return scan
    if binding.binding_id not in request.snapshot.sources:
        scan.outcome = CoverageOutcome.UNAVAILABLE
        scan.reasons.append(CoverageReason.SOURCE_UNAVAILABLE)
        scan.detail = "it did not answer when the snapshot was pinned: " + (
            request.pin_errors.get(binding.binding_id, "reason unknown")
        )
        return scan
    return None


async def scan_binding(
    binding: SourceBinding,
    request: ScanRequest,
    index: ContextIndex,
    state: PartitionState,
    load_text: TextLoader,
) -> tuple[BindingScan, Segment | None]:
    """Sync a searched binding's partition at its pinned revision and rank its candidates.

    ``scan.revision`` is the revision read: the pinned one, or the one a first page
    re-pinned to (the reader puts it in its snapshot). A failing source or index provider
    makes the binding ``unavailable``, never the whole read.
    """
    scan = BindingScan(binding.binding_id, binding.kind)
    scan.revision = request.snapshot.sources[binding.binding_id]
    try:
        await _sync(binding, request.allow_repin, index, state, load_text, scan)
    except (StaleReaderError, PolicyError):
        raise
    except Exception as exc:  # one failing source never sinks the others
        scan.outcome = CoverageOutcome.UNAVAILABLE
        scan.reasons.append(CoverageReason.SOURCE_UNAVAILABLE)
        scan.detail = f"{type(exc).__name__}: {exc}"
        return scan, None
    scan.required = state.required()
    core = {d.key for d in scan.required}  # delivered as such, never also ranked
    intent = request.intent
    try:
        found = index.candidates(state, intent.query, intent.filters, request.limit, exclude=core)
    except Exception as exc:  # the index provider is a plugin: report, do not sink
        scan.outcome = CoverageOutcome.UNAVAILABLE
        scan.reasons.append(CoverageReason.SOURCE_UNAVAILABLE)
        scan.detail = f"index search failed: {type(exc).__name__}: {exc}"
        return scan, None
    return scan, _account(binding, intent, found, core, scan)


async def _sync(
    binding: SourceBinding,
    allow_repin: bool,
    index: ContextIndex,
    state: PartitionState,
    load_text: TextLoader,
    scan: BindingScan,
) -> None:
    """Bring the partition to ``scan.revision``; re-pin once if enumeration moved it."""
    assert scan.revision is not None
    revision = scan.revision
    try:
        await index.sync(state, binding.source, revision, load_text)
    except RevisionMovedError as moved:
        if not allow_repin:
            raise StaleReaderError(
                f"source {binding.binding_id!r} no longer serves the pinned revision "
                f"{revision!r} ({moved})"
            ) from None
        scan.revision = moved.seen
        try:
            await index.sync(state, binding.source, moved.seen, load_text)
        except RevisionMovedError as again:
            raise StaleReaderError(
                f"source {binding.binding_id!r} kept changing during the read "
                f"({again}); failing closed"
            ) from None


def _account(
    binding: SourceBinding,
    intent: ContextReadIntent,
    found: CandidateSet,
    core: set[tuple[str, str | None]],
    scan: BindingScan,
) -> Segment:
    """Keep the candidates the intent's roles allow and record what was considered."""
    scan.truncated = found.truncated
    scan.warnings.extend(found.warnings)
    descriptors, scores = found.descriptors, found.scores
    if intent.roles:
        keep = [i for i, d in enumerate(descriptors) if (d.role or binding.role) in intent.roles]
        descriptors = [descriptors[i] for i in keep]
        scores = [scores[i] for i in keep] if scores is not None else None
        if found.truncated:
            # the roles were checked on a window of the ranked matches only: the
            # matching set was not counted, and a count of the window would claim
            # less than was examined
            found.considered = None
            scan.reasons.append(CoverageReason.STREAMING_SCAN_UNMEASURED)
        else:
            found.considered = len(descriptors)
    wanted_keys = {
        (ref.path, ref.scope) for ref in intent.explicit_refs if ref.binding == binding.binding_id
    }
    if wanted_keys:  # explicit refs outside the matching set widen what was considered
        inside = {d.key for d in descriptors if d.key in wanted_keys}
        scan.explicit_outside = len(wanted_keys - inside - core)
    scan.considered = found.considered
    if CoverageReason.STREAMING_SCAN_UNMEASURED in found.reasons:
        scan.considered = None  # the source says it examined more than it counted
    if scan.considered is not None:
        scan.considered += len(core)
    scan.enumeration = found.enumeration
    scan.searchable = found.searchable
    scan.reasons.extend(found.reasons)
    if not found.searchable:
        scan.outcome = CoverageOutcome.NOT_SEARCHED
        scan.reasons.append(CoverageReason.QUERY_NOT_SEARCHABLE)
    return binding, descriptors, scores


@attrs.define(slots=True, frozen=True)
class Gathered:
    """A page's candidates: the required ones, and the optional ones in rank order."""

    required: list[Candidate]
    ranked: RankedCandidates
    direct_considered: int
    """How many direct entries the read considered (required, and optional that match)."""


def page_candidates(
    entries: Sequence[DirectEntry],
    scans: Sequence[tuple[BindingScan, Segment | None]],
    intent: ContextReadIntent,
    readback: Readback,
) -> Gathered:
    """Required candidates (direct, source-marked, explicit) and ranked optional ones."""
    required = [direct_candidate(e) for e in entries if e.required]
    for scan, segment in scans:
        if segment is not None:
            binding = segment[0]
            required += [candidate_of(binding, d, None, required=True) for d in scan.required]
    required += [readback.explicit(ref) for ref in intent.explicit_refs]
    optional_direct = [
        direct_candidate(e)
        for e in entries
        if not e.required
        and (not intent.roles or e.role in intent.roles)
        and passes_filters(
            SourceDescriptor(path=e.entry_id, content_version=e.digest, media_type=e.media_type),
            intent.filters,
        )
    ]
    segments = [segment for _, segment in scans if segment is not None]
    return Gathered(
        required=required,
        ranked=RankedCandidates(optional_direct, segments),
        direct_considered=sum(1 for e in entries if e.required) + len(optional_direct),
    )
