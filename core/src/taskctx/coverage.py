"""Per-binding coverage of a page: what was considered, delivered and left out."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from taskctx.codes import DiagnosticCode
from taskctx.model import (
    DIRECT_BINDING,
    ContextRef,
    CoverageOutcome,
    CoverageReason,
    CoverageStatus,
    Diagnostic,
    Enumeration,
    OmissionReason,
    Severity,
    SourceCoverage,
    SourceDescriptor,
)
from taskctx.page import Page

__all__ = [
    "REASON_SENTENCES",
    "BindingScan",
    "coverage_for",
    "describe_reason",
    "page_coverage",
]

REASON_SENTENCES: dict[CoverageReason, str] = {
    CoverageReason.NO_LEXICAL_PROVIDER: "no ranking index is installed: candidates came in "
    "structural order",
    CoverageReason.BINDING_EXCLUDED: "filters.bindings left this binding out",
    CoverageReason.SOURCE_KIND_EXCLUDED: "filters.source_kinds left this binding's kind out",
    CoverageReason.SOURCE_UNAVAILABLE: "the source did not answer (see the diagnostic)",
    CoverageReason.SELECTION_DISABLED: "optional selection was disabled for this read",
    CoverageReason.QUERY_NOT_SEARCHABLE: "the index cannot search this query",
    CoverageReason.MATCHING_SET_NOT_COUNTED: "the matching set was not counted",
    CoverageReason.BOUNDED_ENUMERATION: "the source stopped enumerating early",
    CoverageReason.PAGED_RESULT: "the result spans several pages",
    CoverageReason.STREAMING_SCAN_UNMEASURED: "streaming scan cost unmeasured: the operation "
    "examined more than it returned, or cannot say how much it examined",
    CoverageReason.INDEX_REBUILT: "the index was damaged and rebuilt during this search: "
    "matches are unknown until the source is indexed again",
}
"""The sentence a person reads for each kernel coverage reason (the code is what
programs branch on; render shows codes only)."""


def describe_reason(code: str) -> str:
    """The sentence for a coverage reason code; a provider's own code is returned as is."""
    try:
        return REASON_SENTENCES[CoverageReason(code)]
    except ValueError:
        return code


@attrs.define(slots=True)
class BindingScan:
    """What a read learnt about one binding before assembly."""

    binding_id: str
    source_kind: str
    revision: str | None = None
    considered: int | None = None
    enumeration: Enumeration = Enumeration.EXHAUSTIVE
    outcome: CoverageOutcome | None = None
    searchable: bool = True
    reasons: list[str] = attrs.field(factory=list)
    detail: str | None = None
    explicit_outside: int = 0
    truncated: bool = False
    warnings: list[str] = attrs.field(factory=list)
    required: list[SourceDescriptor] = attrs.field(factory=list)
    """Items the source marks required: delivered on page 1 whatever the query."""


def coverage_for(scan: BindingScan, delivered: int) -> SourceCoverage:
    """Coverage of one binding, given how many of its items this page delivers.

    A page is ``complete`` only when it holds the whole matching set of the pinned
    snapshot; the last page of a multi-page result is still ``partial``.
    """
    reasons = tuple(str(reason) for reason in dict.fromkeys(scan.reasons))
    if scan.outcome in (CoverageOutcome.UNAVAILABLE, CoverageOutcome.NOT_SEARCHED) or (
        not scan.searchable
    ):
        outcome = scan.outcome or CoverageOutcome.NOT_SEARCHED
        return SourceCoverage(
            binding_id=scan.binding_id,
            source_kind=scan.source_kind,
            status=CoverageStatus.UNKNOWN,
            enumeration=scan.enumeration,
            outcome=outcome,
            considered=None,
            delivered=delivered,
            omitted=None,
            reasons=reasons,
            revision=scan.revision,
        )
    considered = scan.considered
    if considered is None:
        return SourceCoverage(
            binding_id=scan.binding_id,
            source_kind=scan.source_kind,
            status=CoverageStatus.UNKNOWN,
            enumeration=scan.enumeration,
            outcome=CoverageOutcome.MATCHED if delivered else CoverageOutcome.NO_MATCH_IN_SCOPE,
            considered=None,
            delivered=delivered,
            omitted=None,
            reasons=reasons or (CoverageReason.MATCHING_SET_NOT_COUNTED,),
            revision=scan.revision,
        )
    considered = max(considered, delivered)
    complete = delivered == considered and scan.enumeration is not Enumeration.BOUNDED
    return SourceCoverage(
        binding_id=scan.binding_id,
        source_kind=scan.source_kind,
        status=CoverageStatus.COMPLETE if complete else CoverageStatus.PARTIAL,
        enumeration=scan.enumeration,
        outcome=CoverageOutcome.MATCHED if considered else CoverageOutcome.NO_MATCH_IN_SCOPE,
        considered=considered,
        delivered=delivered,
        omitted=considered - delivered,
        reasons=reasons,
        revision=scan.revision,
    )


def _held_per_binding(page: Page) -> dict[str, int]:
    """How many items of each binding the page holds: its blocks and attachments, and the
    sections inside a delivered parent. An image split into segments is one item."""
    images = (a.ref for a in page.attachments if (a.segment or 1) == 1)
    held: list[ContextRef] = [*(b.ref for b in page.blocks), *images]
    held += [o.ref for o in page.omissions if o.reason is OmissionReason.COVERED_BY_PARENT]
    delivered: dict[str, int] = {}
    for held_ref in held:
        delivered[held_ref.binding] = delivered.get(held_ref.binding, 0) + 1
    return delivered


def page_coverage(
    scans: Sequence[BindingScan],
    direct: BindingScan | None,
    page: Page,
    selection_disabled: bool,
) -> tuple[dict[str, SourceCoverage], list[Diagnostic]]:
    """Every binding's coverage of ``page`` (the direct entries first, when there are
    any), and a diagnostic for each degraded index and unavailable source."""
    coverage = {}
    diagnostics: list[Diagnostic] = []
    delivered = _held_per_binding(page)
    if direct is not None:
        coverage[DIRECT_BINDING] = coverage_for(direct, delivered.get(DIRECT_BINDING, 0))
    for scan in scans:
        if selection_disabled:
            scan.reasons.append(CoverageReason.SELECTION_DISABLED)
        if scan.considered is not None:
            scan.considered += scan.explicit_outside
        coverage[scan.binding_id] = coverage_for(scan, delivered.get(scan.binding_id, 0))
        diagnostics.extend(
            Diagnostic(
                code=DiagnosticCode.INDEX_DEGRADED, message=warning, binding_id=scan.binding_id
            )
            for warning in scan.warnings
        )
        if scan.outcome is CoverageOutcome.UNAVAILABLE:
            diagnostics.append(
                Diagnostic(
                    code=DiagnosticCode.SOURCE_UNAVAILABLE,
                    severity=Severity.ERROR,
                    binding_id=scan.binding_id,
                    message=f"source {scan.binding_id!r} ({scan.source_kind}) is "
                    f"unavailable: {scan.detail or 'no detail'}",
                )
            )
    return coverage, diagnostics
