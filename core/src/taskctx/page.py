"""What one package holds while it is assembled: blocks, attachments, omissions."""

from __future__ import annotations

from collections.abc import Sequence, Set

import attrs

from taskctx.candidates import Candidate
from taskctx.codes import DiagnosticCode
from taskctx.digests import sha256_hex
from taskctx.media import MediaClass, classify
from taskctx.model import (
    Attachment,
    BudgetExcess,
    Completeness,
    ContextBlock,
    ContextRef,
    Diagnostic,
    ExactRead,
    Omission,
    Representation,
    Severity,
)
from taskctx.sections import parse_char_scope

__all__ = ["LossyParts", "Page", "PartOf", "build_block", "full_chars", "wanted_whole"]

LossyParts = tuple[tuple[ContextRef, ...], ContextRef, "int | None"]
"""A lossy digest's section refs, full ref and original length."""

MAX_NOTES_SHOWN = 3
"""How many of an item's read notes its ``read_notes`` diagnostic quotes."""

PartOf = tuple[ContextRef, int]
"""The candidate a part was cut from: its ref and its length in characters."""


@attrs.define(slots=True)
class Page:
    """What one package holds, before it becomes a ContextPackage.

    Paging (where the next page starts) is not the page's: ``taskctx.paging`` owns it.
    """

    blocks: list[ContextBlock] = attrs.field(factory=list)
    attachments: list[Attachment] = attrs.field(factory=list)
    omissions: list[Omission] = attrs.field(factory=list)
    diagnostics: list[Diagnostic] = attrs.field(factory=list)
    used_chars: int = 0
    delivered_complete: set[tuple[str, str]] = attrs.field(factory=set)
    delivered_refs: set[str] = attrs.field(factory=set)
    delivered_sections: set[tuple[str, str]] = attrs.field(factory=set)
    required_refs: set[str] = attrs.field(factory=set)
    """Refs handled as required on this page (delivered or omitted): never offered again."""
    noted: set[tuple[str, str]] = attrs.field(factory=set)
    """(binding, path) of the items whose read notes this page reported already."""
    part_spans: dict[tuple[str, str], list[tuple[int, int]]] = attrs.field(factory=dict)
    """(binding, path) -> the ``chars:S-E`` spans of its parts on this page."""
    budget_excess: BudgetExcess | None = None
    """How far required originals delivered whole went past the budget (``deliver``)."""

    @property
    def used_blocks(self) -> int:
        """Blocks and attachments both count against ``max_blocks``."""
        return len(self.blocks) + len(self.attachments)

    def hold_block(self, block: ContextBlock) -> None:
        """Put ``block`` on the page and remember what it delivers."""
        self.blocks.append(block)
        self.used_chars += block.chars
        self.delivered_refs.add(str(block.ref))
        if block.completeness is Completeness.COMPLETE and block.ref.scope is None:
            self.delivered_complete.add((block.binding_id, block.ref.path))
        elif block.ref.scope is not None:
            self.delivered_sections.add((block.binding_id, block.ref.path))
            if block.completeness is Completeness.PART:
                span = parse_char_scope(block.ref.scope)
                self.part_spans.setdefault((block.binding_id, block.ref.path), []).append(span)

    def taken_spans(self, candidate: Candidate, disclosed: Set[str]) -> list[tuple[int, int]]:
        """The ``chars:S-E`` spans of the candidate's item that its parts on this page or
        on earlier pages (``disclosed`` refs) hold: a new part must not repeat them."""
        item = candidate.ref.with_scope(None)
        spans = list(self.part_spans.get((candidate.binding_id, candidate.ref.path), ()))
        prefix = str(item)
        for key in disclosed:
            if key.startswith(prefix) and "#chars:" in key:
                ref = ContextRef.parse(key)
                if ref.scope is not None and ref.with_scope(None) == item:
                    spans.append(parse_char_scope(ref.scope))
        return spans

    def note_read(self, candidate: Candidate, read: ExactRead) -> None:
        """Report what reading a delivered item noted (``read.notes``), once per item."""
        item = (candidate.binding_id, candidate.ref.path)
        if not read.notes or item in self.noted:
            return
        self.noted.add(item)
        shown = "; ".join(read.notes[:MAX_NOTES_SHOWN])
        more = len(read.notes) - MAX_NOTES_SHOWN
        self.diagnostics.append(
            Diagnostic(
                code=DiagnosticCode.READ_NOTES,
                message=f"reading {candidate.ref.path} noted: {shown}"
                + (f" (and {more} more)" if more > 0 else ""),
                severity=Severity.INFO,
                binding_id=candidate.binding_id,
                ref=candidate.ref.with_scope(None),
            )
        )

    def hold_attachment(self, attachment: Attachment) -> None:
        """Put a validated attachment on the page."""
        self.attachments.append(attachment)
        self.delivered_refs.add(str(attachment.ref))


def _block_id(ref: ContextRef, digest: str) -> str:
    return "blk_" + sha256_hex(f"{ref}|{digest}")[:16]


def build_block(
    candidate: Candidate,
    read: ExactRead,
    alias: str,
    *,
    content: str | None = None,
    lossy: LossyParts | None = None,
    part_of: PartOf | None = None,
) -> ContextBlock:
    """The block of a candidate's read (or of its lossy outline ``content``, or of a part
    of the candidate ``part_of`` names)."""
    text = content if content is not None else (read.text or "")
    representation = read.representation
    completeness = Completeness.COMPLETE
    section_refs: tuple[ContextRef, ...] = ()
    full_ref = None
    chars_original = read.chars_total
    if lossy is not None:
        section_refs, full_ref, chars_original = lossy
        representation, completeness = Representation.LOSSY_DIGEST, Completeness.LOSSY
    if part_of is not None:
        (full_ref, chars_original), completeness = part_of, Completeness.PART
    return ContextBlock(
        block_id=_block_id(candidate.ref, read.digest),
        alias=alias,
        ref=candidate.ref,
        binding_id=candidate.binding_id,
        source_kind=candidate.source_kind,
        role=candidate.role,
        required=candidate.required,
        content=text,
        media_type=read.media_type,
        representation=representation,
        completeness=completeness,
        digest=read.digest,
        chars=len(text),
        scope=candidate.ref.scope,
        title=candidate.title,
        chars_original=chars_original,
        full_ref=full_ref,
        section_refs=section_refs,
        score=candidate.score,
    )


def full_chars(read: ExactRead) -> int:
    """The whole item's length in characters, as far as the read knows it."""
    if read.chars_total is not None:
        return read.chars_total
    return len(read.text or "")


def wanted_whole(
    window: Sequence[Candidate], page: Page, max_chars: int, disclosed: Set[str]
) -> list[Candidate]:
    """The text candidates of ``window`` the page may still deliver whole: not held on it
    or disclosed already, none known to be larger than a page (what to read ahead)."""
    wanted: list[Candidate] = []
    for candidate in window:
        key = str(candidate.ref)
        if key in page.delivered_refs or key in page.required_refs or key in disclosed:
            continue
        if candidate.problem is not None or candidate.representation is not Representation.TEXT:
            continue
        if classify(candidate.ref.path, candidate.media_type).media_class is not MediaClass.TEXT:
            continue
        if candidate.chars is None or candidate.chars <= max_chars:
            wanted.append(candidate)
    return wanted
