"""Semantic selection: a selector sees previews and host-issued keys; the host validates.

Unknown or duplicate keys make the whole answer untrusted (``selection_invalid``) and
the page falls back to rank order; a selector that raises does the same
(``selector_failed``). Chosen candidates are delivered in rank order, never in the
selector's order, and the host rebuilds every block itself from canonical refs.
"""

from __future__ import annotations

from collections.abc import Sequence

from taskctx.assembly import OfferOutcome, PageAssembler
from taskctx.candidates import Candidate
from taskctx.claims import enters_as_text, unbacked_claim
from taskctx.codes import DiagnosticCode
from taskctx.model import ContextReadIntent, Diagnostic, OmissionReason, Severity
from taskctx.protocols import SelectionCandidate, SelectionRequest, Selector

__all__ = ["PREVIEW_CHARS", "select_and_add", "window_size"]

PREVIEW_CHARS = 400


def window_size(max_blocks: int) -> int:
    """How many ranked candidates one selection call sees."""
    return max(20, 4 * max_blocks)


def _invalid(keys: object, issued: set[str]) -> str | None:
    if isinstance(keys, (str, bytes)) or not isinstance(keys, Sequence):
        return f"expected a sequence of keys, got {type(keys).__name__}"
    seen: set[object] = set()
    for key in keys:
        if not isinstance(key, str) or key not in issued:
            return f"unknown key {key!r}"
        if key in seen:
            return f"duplicate key {key!r}"
        seen.add(key)
    return None


async def _preview(assembler: PageAssembler, candidate: Candidate, key: str) -> SelectionCandidate:
    """What the selector sees of one candidate: the source's summary when it vouches for
    one (progressive disclosure: no body is read), else the first characters. Non-text
    media is offered by its canonical path only: no source title, summary or read."""
    if not enters_as_text(candidate):
        return SelectionCandidate(
            key=key,
            title=candidate.ref.path,
            preview="",
            chars=0,
            role=candidate.role,
            binding_id=candidate.binding_id,
        )
    text, chars = candidate.summary or "", candidate.chars or 0
    if candidate.summary is None:
        try:
            preview = await assembler.readback.read(candidate, PREVIEW_CHARS)
            if unbacked_claim(candidate, preview) is None:
                text, chars = preview.text or "", preview.chars_total or 0
        except Exception:  # a candidate that cannot be previewed is offered by title only
            pass
    return SelectionCandidate(
        key=key,
        title=candidate.title or candidate.ref.path,
        preview=text[:PREVIEW_CHARS],
        chars=chars,
        role=candidate.role,
        binding_id=candidate.binding_id,
    )


async def select_and_add(
    selector: Selector,
    assembler: PageAssembler,
    ranked: Sequence[Candidate],
    position: int,
    intent: ContextReadIntent,
    phase: str | None,
    consumer: str,
) -> int:
    """Offer one window of candidates to ``selector`` and deliver what it validly chose;
    return the position of the first candidate not handled (as ``add_optional`` does)."""
    window = list(ranked[position : position + window_size(assembler.budget.max_blocks)])
    previews: list[SelectionCandidate] = []
    keyed: dict[str, Candidate] = {}
    for index, candidate in enumerate(window, start=1):
        key = f"c{index}"
        keyed[key] = candidate
        previews.append(await _preview(assembler, candidate, key))
    request = SelectionRequest(
        query=intent.query,
        consumer=consumer,
        phase=phase,
        candidates=tuple(previews),
        budget=assembler.budget,
        filters=intent.filters,
    )
    problem: str | None
    try:
        keys = await selector.async_select(request)
        problem = _invalid(keys, set(keyed))
        code = DiagnosticCode.SELECTION_INVALID
    except Exception as exc:  # the selector is a plugin; its failure is reported
        keys, problem, code = [], f"{type(exc).__name__}: {exc}", DiagnosticCode.SELECTOR_FAILED
    if problem is not None:
        assembler.page.diagnostics.append(
            Diagnostic(
                code=code,
                severity=Severity.WARNING,
                message=f"selector {selector.name!r} answer not trusted ({problem}); "
                "fell back to rank order",
            )
        )
        return await assembler.add_optional(ranked, position)
    chosen = set(keys)
    for offset, (key, candidate) in enumerate(keyed.items()):
        if key not in chosen:
            assembler.omit(candidate, OmissionReason.NOT_SELECTED)
        elif await assembler.offer(candidate) is OfferOutcome.STOP:
            return position + offset  # the page is full: this one opens the next page
    return position + len(window)
