"""Page assembly: required blocks, the budget, optional candidates, lossy digests.

The reader gathers candidates; this module decides what a page holds and records why
everything else is left out, reading through the :class:`~taskctx.readback.Readback` and
naming refs through the :class:`~taskctx.aliases.AliasTable` it is given. Nothing
optional is truncated: a candidate either fits whole, or (larger than a whole page) is
delivered as the part of it around what matched (:mod:`taskctx.parts`), or is omitted
with a reason. Where
the next page starts is not decided here: :meth:`PageAssembler.add_optional` returns
where it stopped and ``taskctx.paging`` decides.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence, Set

import attrs

from taskctx._imageprep_attach import ImageOmission, attachments_of, read_image
from taskctx.aliases import AliasTable
from taskctx.candidates import Candidate
from taskctx.claims import unbacked_claim
from taskctx.codes import DiagnosticCode, NamespacedCode, ProblemCode
from taskctx.dispatch import slice_part
from taskctx.errors import (
    MediaError,
    NotFoundError,
    RequiredOverflowError,
    StaleReaderError,
    UnsupportedScopeError,
)
from taskctx.gate import Refusal, media_gate
from taskctx.media import MediaClass
from taskctx.model import (
    BudgetExcess,
    ContextBudget,
    ContextConsumer,
    Diagnostic,
    ExactRead,
    Omission,
    OmissionReason,
    Severity,
)
from taskctx.outline import digest_outline, lossy_plan
from taskctx.page import LossyParts, Page, PartOf, build_block, full_chars, wanted_whole
from taskctx.parts import PART_MIN_CHARS, choose_part, line_span, stretch_of
from taskctx.readback import Readback
from taskctx.sections import format_char_scope

__all__ = ["OfferOutcome", "PageAssembler"]


class OfferOutcome(enum.Enum):
    """What :meth:`PageAssembler.offer` did with one optional candidate."""

    DELIVERED = "delivered"
    """It is on the page."""
    SKIPPED = "skipped"
    """It is left out (recorded as an omission, or already on the page); go on."""
    STOP = "stop"
    """The page is full: this candidate is omitted here and opens the next page."""


@attrs.define(slots=True)
class PageAssembler:
    """Fills one page under a budget from required candidates and ranked optional ones."""

    budget: ContextBudget
    consumer: ContextConsumer
    aliases: AliasTable
    readback: Readback
    disclosed: Set[str]
    """Refs this reader delivered whole on earlier packages (read only here)."""
    required_overflow: str = "fail"
    terms: tuple[str, ...] = ()
    """The query's words (:func:`taskctx.parts.query_terms`): where a part of a candidate
    larger than a page is cut. Without them such a candidate is omitted."""
    page: Page = attrs.field(factory=Page)

    def omit(
        self,
        candidate: Candidate,
        reason: OmissionReason,
        detail: str | None = None,
        size: int | None = None,
    ) -> None:
        """Leave ``candidate`` out of the page, with the reason the package reports."""
        if candidate.required:
            self.page.required_refs.add(str(candidate.ref))
        self.page.omissions.append(
            Omission(
                ref=candidate.ref,
                alias=self.aliases.alias(candidate.ref),
                binding_id=candidate.binding_id,
                reason=reason,
                required=candidate.required,
                size=size if size is not None else candidate.chars,
                media_type=candidate.media_type,
                detail=detail,
            )
        )

    def _diagnose(
        self,
        code: DiagnosticCode | ProblemCode | NamespacedCode,
        message: str,
        candidate: Candidate,
        severity: Severity = Severity.WARNING,
    ) -> None:
        self.page.diagnostics.append(
            Diagnostic(
                code=code,
                message=message,
                severity=severity,
                binding_id=candidate.binding_id,
                ref=candidate.ref,
            )
        )

    def _block(
        self,
        candidate: Candidate,
        read: ExactRead,
        *,
        content: str | None = None,
        lossy: LossyParts | None = None,
        part_of: PartOf | None = None,
    ) -> None:
        alias = self.aliases.alias(candidate.ref)
        self.page.hold_block(
            build_block(candidate, read, alias, content=content, lossy=lossy, part_of=part_of)
        )
        self.page.note_read(candidate, read)

    def _media_gate(self, candidate: Candidate) -> MediaClass | None:
        """The media class that may enter, or None after recording why it cannot."""
        gate = media_gate(candidate, self.consumer)
        if not isinstance(gate, Refusal):
            return gate
        self.omit(candidate, gate.reason, gate.detail)
        if gate.code is not None:
            severity = Severity.WARNING if candidate.required else Severity.INFO
            self._diagnose(gate.code, gate.message, candidate, severity)
        return None

    def backs_claim(self, candidate: Candidate, read: ExactRead) -> bool:
        """Whether ``read`` is what the candidate's descriptor claimed; if not, the item is
        omitted ``read_failed`` with a diagnostic saying what was claimed and what came."""
        problem = unbacked_claim(candidate, read)
        if problem is None:
            return True
        self.omit(candidate, OmissionReason.READ_FAILED, problem)
        self._diagnose(
            DiagnosticCode.REPRESENTATION_MISMATCH,
            f"reading {candidate.ref.path} failed: {problem}",
            candidate,
            Severity.ERROR if candidate.required else Severity.WARNING,
        )
        return False

    async def _attach(self, candidate: Candidate, *, optional: bool = False) -> OfferOutcome:
        """Attach an image validated and prepared by the consumer's image policy (one
        attachment per segment), or omit it with a reason; fail the read for an image
        that is not valid (``invalid_image``). ``optional``: what does not fit the blocks
        left is omitted (and, when it would fit an empty page, opens the next one)."""
        policy = self.consumer.image_policy()
        if policy is not None and policy.max_images:
            held = sum(1 for a in self.page.attachments if (a.segment or 1) == 1)
            if held >= policy.max_images:
                detail = f"the package holds max_images={policy.max_images} images already"
                self.omit(candidate, OmissionReason.OVER_IMAGE_COUNT, detail)
                return OfferOutcome.SKIPPED
        prepared = await read_image(self.readback, candidate, policy)
        if isinstance(prepared, ImageOmission):
            self.omit(candidate, prepared.reason, prepared.detail)
            return OfferOutcome.SKIPPED
        count = len(prepared.segments)
        if optional and count > self.budget.max_blocks - self.page.used_blocks:
            larger = count > self.budget.max_blocks
            detail = f"its {count} segments need {count} of max_blocks={self.budget.max_blocks}"
            self.omit(candidate, OmissionReason.OVER_BLOCK_BUDGET, detail)
            return OfferOutcome.SKIPPED if larger else OfferOutcome.STOP
        for attachment in attachments_of(prepared, candidate, self.aliases):
            self.page.hold_attachment(attachment)
        self.page.delivered_refs.add(str(candidate.ref))  # the item, whatever its segments
        return OfferOutcome.DELIVERED

    # -- required ------------------------------------------------------------------

    async def _probe(self, candidate: Candidate) -> Candidate:
        """Learn an unindexed explicit ref's media from its source (which authorizes it)."""
        probe = await self.readback.read(candidate, 0)
        return attrs.evolve(
            candidate,
            media_type=probe.media_type,
            representation=probe.representation,
            content_version=probe.content_version,
        )

    async def add_required(self, candidates: Sequence[Candidate]) -> None:
        """Deliver every required candidate whole, as lossy digests, over budget (``deliver``),
        or raise."""
        deliver = self.required_overflow == "deliver"
        limit = None if deliver else self.budget.max_chars + 1
        reads: list[tuple[Candidate, ExactRead]] = []
        for candidate in candidates:
            self.page.required_refs.add(str(candidate.ref))
            try:
                if candidate.explicit and candidate.content_version is None:
                    candidate = await self._probe(candidate)  # not in the index: ask the source
                media = self._media_gate(candidate)
                if media is None:
                    continue
                if media is MediaClass.IMAGE:
                    await self._attach(candidate)
                    continue
                read = await self.readback.read(candidate, limit)
                if self.backs_claim(candidate, read):
                    reads.append((candidate, read))
            except UnsupportedScopeError as exc:
                self.omit(candidate, OmissionReason.UNSUPPORTED_SCOPE, str(exc))
                self._diagnose(
                    DiagnosticCode.UNSUPPORTED_SCOPE, str(exc), candidate, Severity.ERROR
                )
            except NotFoundError as exc:
                self.omit(candidate, OmissionReason.NOT_FOUND, str(exc))
                self._diagnose(
                    DiagnosticCode.NOT_FOUND,
                    f"required ref {candidate.ref} was not found: {exc}",
                    candidate,
                    Severity.ERROR,
                )
        if deliver:
            for candidate, read in reads:
                self._block(candidate, read)
            self._record_excess()
            return
        count = len(reads) + len(self.page.attachments)
        if count > self.budget.max_blocks:
            raise RequiredOverflowError(
                f"{count} required blocks exceed max_blocks={self.budget.max_blocks}; "
                "required blocks are never dropped"
            )
        sizes = [full_chars(read) for _, read in reads]
        if sum(sizes) <= self.budget.max_chars:
            for candidate, read in reads:
                self._block(candidate, read)
            return
        if self.required_overflow != "lossy_digest":
            listing = ", ".join(
                f"{c.ref} ({s} chars)" for (c, _), s in zip(reads, sizes, strict=True)
            )
            raise RequiredOverflowError(
                f"required content needs {sum(sizes)} chars but max_chars="
                f"{self.budget.max_chars}: {listing}. Raise the budget or read with "
                "required_overflow='lossy_digest' or 'deliver'"
            )
        await self._add_lossy(reads, sizes)

    def _record_excess(self) -> None:
        """Record how far the required originals went past the budget, if they did."""
        chars_over = max(0, self.page.used_chars - self.budget.max_chars)
        blocks_over = max(0, self.page.used_blocks - self.budget.max_blocks)
        if not chars_over and not blocks_over:
            return
        self.page.budget_excess = BudgetExcess(chars_over=chars_over, blocks_over=blocks_over)
        self.page.diagnostics.append(
            Diagnostic(
                code=DiagnosticCode.REQUIRED_OVER_BUDGET,
                severity=Severity.WARNING,
                message=f"required originals delivered whole over budget: {chars_over} chars "
                f"over max_chars={self.budget.max_chars}, {blocks_over} blocks over "
                f"max_blocks={self.budget.max_blocks}; nothing optional is on this page",
            )
        )

    async def _add_lossy(self, reads: list[tuple[Candidate, ExactRead]], sizes: list[int]) -> None:
        """Replace the largest required items with outlines until everything fits."""
        lossy, per_item = lossy_plan(sizes, self.budget.max_chars)
        for index, (candidate, read) in enumerate(reads):
            if index not in lossy:
                self._block(candidate, read)
                continue
            outline, section_refs, full_ref = digest_outline(
                candidate, read, self.aliases, per_item
            )
            if len(outline) > per_item:
                raise RequiredOverflowError(
                    f"even the lossy digest of {candidate.ref} ({len(outline)} chars) does not "
                    f"fit the {per_item} chars left for it under max_chars="
                    f"{self.budget.max_chars}"
                )
            self._block(
                candidate, read, content=outline, lossy=(section_refs, full_ref, full_chars(read))
            )
            self.omit(
                candidate,
                OmissionReason.OVER_CHAR_BUDGET,
                "delivered as a lossy digest; read the full ref or section refs",
                size=full_chars(read),
            )

    # -- optional ------------------------------------------------------------------

    async def offer(self, candidate: Candidate) -> OfferOutcome:
        """Try to deliver one optional candidate.

        ``SKIPPED`` candidates are recorded as omissions and never come back on a later
        page; ``STOP`` means the page is full and this candidate opens the next one.
        """
        if self._already_held(candidate):
            return OfferOutcome.SKIPPED
        media = self._media_gate(candidate)
        if media is None:
            return OfferOutcome.SKIPPED
        if self.page.used_blocks >= self.budget.max_blocks:
            self.omit(candidate, OmissionReason.OVER_BLOCK_BUDGET)
            return OfferOutcome.STOP
        if self.page.budget_excess is not None:  # required content already spent the budget
            self.omit(candidate, OmissionReason.OVER_CHAR_BUDGET)
            return OfferOutcome.STOP
        if media is MediaClass.IMAGE:
            return await self._attach(candidate, optional=True)
        return await self._offer_text(candidate)

    def _already_held(self, candidate: Candidate) -> bool:
        """Whether this page or an earlier one already holds the candidate (or its parent,
        or its best sections); an omission says which, except for a repeat on this page."""
        key = str(candidate.ref)
        if key in self.page.delivered_refs or key in self.page.required_refs:
            return True  # already on this page (an explicit ref that also ranked)
        if key in self.disclosed:
            self.omit(candidate, OmissionReason.ALREADY_DISCLOSED)
            return True
        item = (candidate.binding_id, candidate.ref.path)
        if candidate.ref.scope is not None and (
            item in self.page.delivered_complete
            or str(candidate.ref.with_scope(None)) in self.disclosed
        ):
            self.omit(candidate, OmissionReason.COVERED_BY_PARENT)
            return True
        if candidate.ref.scope is None and item in self.page.delivered_sections:
            self.omit(
                candidate,
                OmissionReason.SECTIONS_DELIVERED,
                "the best-matching sections of this item are delivered; its other sections "
                "are reachable by their refs",
            )
            return True
        return False

    async def _offer_text(self, candidate: Candidate) -> OfferOutcome:
        """Deliver a text candidate whole if it fits the room left, a part of it if it is
        larger than a page, else say why not."""
        max_chars = self.budget.max_chars
        room = max_chars - self.page.used_chars
        if candidate.chars is not None and candidate.chars > max_chars:
            return await self._offer_part(candidate, candidate.chars)
        if candidate.chars is not None and candidate.chars > room:
            self.omit(candidate, OmissionReason.OVER_CHAR_BUDGET)
            return OfferOutcome.STOP
        read = await self._read_optional(candidate, room)
        if read is None or not self.backs_claim(candidate, read):
            return OfferOutcome.SKIPPED
        if not read.complete:
            whole = full_chars(read)
            if whole > max_chars:
                return await self._offer_part(candidate, whole)
            self.omit(candidate, OmissionReason.OVER_CHAR_BUDGET, size=whole)
            return OfferOutcome.STOP
        self._block(candidate, read)
        return OfferOutcome.DELIVERED

    async def _read_optional(self, candidate: Candidate, limit: int | None) -> ExactRead | None:
        """Read an optional candidate; a plugin's failure is reported (None), the read goes
        on; a ref gone since the snapshot was pinned fails the read."""
        try:
            return await self.readback.read(candidate, limit)
        except NotFoundError as exc:
            raise StaleReaderError(
                f"{candidate.ref} vanished after the snapshot was pinned: {exc}"
            ) from exc
        except (StaleReaderError, MediaError):
            raise
        except Exception as exc:
            self.omit(candidate, OmissionReason.READ_FAILED, f"{type(exc).__name__}: {exc}")
            self._diagnose(
                DiagnosticCode.READ_FAILED, f"reading {candidate.ref} failed: {exc}", candidate
            )
            return None

    async def _offer_part(self, candidate: Candidate, size: int) -> OfferOutcome:
        """Deliver the part of a candidate larger than a page around what matched the
        query, as a ``chars:S-E`` part of its item marked ``part``; a page with too little
        room left opens the next page for it; with nothing matched it is omitted."""
        max_chars = self.budget.max_chars
        room = max_chars - self.page.used_chars
        larger = f"{size} chars exceed max_chars={max_chars}"
        if not self.terms:
            self.omit(
                candidate,
                OmissionReason.LARGER_THAN_PAGE,
                f"{larger}; read it by section or with a larger budget",
                size=size,
            )
            return OfferOutcome.SKIPPED
        if room < min(PART_MIN_CHARS, max_chars):
            self.omit(candidate, OmissionReason.OVER_CHAR_BUDGET, size=size)
            return OfferOutcome.STOP
        located = await self._locate(candidate)
        if located is None:
            return OfferOutcome.SKIPPED
        whole, start, end = located
        assert whole.text is not None
        taken = self.page.taken_spans(candidate, self.disclosed)
        part = choose_part(whole.text, start, end, room, self.terms, taken=taken)
        if part is None and taken:
            self.omit(
                candidate,
                OmissionReason.SECTIONS_DELIVERED,
                "the part of this item around what matched is delivered; its other parts are "
                "reachable by their refs",
                size=size,
            )
            return OfferOutcome.SKIPPED
        if part is None:
            self.omit(
                candidate,
                OmissionReason.LARGER_THAN_PAGE,
                f"{larger} and no part of it holds a word of the query; read it by section "
                "or with a larger budget",
                size=size,
            )
            return OfferOutcome.SKIPPED
        scope = format_char_scope(part.start, part.end)
        read = slice_part(whole, scope, part.start, part.end, None)
        self.aliases.alias(candidate.ref)  # the whole gets its alias before the part
        self._block(
            attrs.evolve(candidate, ref=candidate.ref.with_scope(scope)),
            read,
            part_of=(candidate.ref, end - start),
        )
        return OfferOutcome.DELIVERED

    async def _locate(self, candidate: Candidate) -> tuple[ExactRead, int, int] | None:
        """The whole item's text and where the candidate's text lies in it, from reads
        that prove the pinned version; None after reporting a read that failed."""
        ref = candidate.ref
        item = candidate if ref.scope is None else attrs.evolve(candidate, ref=ref.with_scope(None))
        whole = await self._read_optional(item, None)
        if whole is None or not self.backs_claim(candidate, whole) or whole.text is None:
            return None
        span = line_span(whole.text, ref.scope)
        if span is None:  # a scope of the source's own: where its text lies in the item's
            scoped = await self._read_optional(candidate, None)
            if scoped is None or scoped.text is None:
                return None
            span = stretch_of(whole.text, scoped.text)
            if span is None:
                self.omit(
                    candidate,
                    OmissionReason.LARGER_THAN_PAGE,
                    f"{len(scoped.text)} chars exceed max_chars={self.budget.max_chars}, and "
                    "its text is not a stretch of its item's, so no part of it can be cut",
                    size=len(scoped.text),
                )
                return None
        return whole, *span

    async def add_optional(self, candidates: Sequence[Candidate], start: int) -> int:
        """Deliver optional candidates in rank order from ``start`` until the budget ends;
        return the position of the first candidate not handled (``len`` when all were)."""
        window = candidates[start : start + self.budget.max_blocks - self.page.used_blocks]
        ahead = wanted_whole(window, self.page, self.budget.max_chars, self.disclosed)
        await self.readback.read_ahead(ahead, self.budget.max_chars)
        position = start
        while position < len(candidates):
            if await self.offer(candidates[position]) is OfferOutcome.STOP:
                break
            position += 1
        return position
