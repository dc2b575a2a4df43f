"""The media gate: whether a candidate's content may enter a page, and as what.

A pure decision from the candidate's descriptor and the consumer's capabilities; the
:class:`~taskctx.assembly.PageAssembler` records a :class:`Refusal` as the omission and
diagnostic it names.
"""

from __future__ import annotations

import attrs

from taskctx.candidates import Candidate
from taskctx.claims import PARSEABLE
from taskctx.codes import UNSUPPORTED_MEDIA_CODES, DiagnosticCode, NamespacedCode, ProblemCode
from taskctx.media import MediaClass, classify, handler_missing_message
from taskctx.model import ContextConsumer, OmissionReason, Representation

__all__ = ["Refusal", "media_gate"]


@attrs.define(slots=True, frozen=True)
class Refusal:
    """Why a candidate's content cannot enter: its omission, and the diagnostic (if any)
    reported beside it."""

    reason: OmissionReason
    detail: str
    code: DiagnosticCode | ProblemCode | NamespacedCode | None = None
    message: str = ""


def _refused_claim(candidate: Candidate, why: str) -> Refusal:
    """A descriptor that claims a representation its item cannot have."""
    claim = candidate.representation.value
    return Refusal(
        OmissionReason.REFERENCE_ONLY,
        f"{why}; the {claim} claim is refused",
        DiagnosticCode.REPRESENTATION_MISMATCH,
        f"{candidate.ref.path}: the source describes it as {claim}, but {why}",
    )


def media_gate(candidate: Candidate, consumer: ContextConsumer) -> MediaClass | Refusal:
    """The media class that may enter (text, or an image the consumer takes), or why not."""
    if candidate.representation is Representation.PARSED_TEXT:
        media = classify(candidate.ref.path, candidate.media_type).media_class
        if media in PARSEABLE:
            return MediaClass.TEXT
        return _refused_claim(candidate, f"{media.value} content is never delivered as text")
    problem = candidate.problem
    if problem is not None:
        unsupported = problem.code in UNSUPPORTED_MEDIA_CODES
        reason = OmissionReason.UNSUPPORTED_MEDIA if unsupported else OmissionReason.REFERENCE_ONLY
        return Refusal(reason, problem.message, problem.code, problem.message)
    decision = classify(candidate.ref.path, candidate.media_type)
    if decision.media_class is MediaClass.TEXT:
        if candidate.representation is Representation.REFERENCE_ONLY:
            # the source says so (a skill's script, say): its text never enters
            return Refusal(
                OmissionReason.REFERENCE_ONLY, "the source offers this item by reference only"
            )
        if candidate.representation is Representation.LOSSY_DIGEST:
            return _refused_claim(candidate, "only the kernel makes lossy digests")
        return MediaClass.TEXT
    if decision.media_class is MediaClass.IMAGE and consumer.accepts_image_attachments():
        return MediaClass.IMAGE
    if decision.media_class is MediaClass.DOCUMENT:
        return Refusal(
            OmissionReason.UNSUPPORTED_MEDIA,
            "no installed FileIOHandler parses this format; reference only",
            ProblemCode.HANDLER_MISSING,
            handler_missing_message(candidate.ref.path, decision.media_type),
        )
    # the media type stays on the omission (host-side audit), out of the sentence
    return Refusal(
        OmissionReason.REFERENCE_ONLY,
        f"{decision.media_class.value} content is never delivered as text",
    )
