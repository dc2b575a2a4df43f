"""Lossy digests: which required items become outlines, and what an outline says."""

from __future__ import annotations

from collections.abc import Sequence

from taskctx.aliases import AliasTable
from taskctx.candidates import Candidate
from taskctx.markup import label
from taskctx.model import ContextRef, ExactRead, SectionInfo
from taskctx.sections import format_line_scope

__all__ = ["LOSSY_CHUNK_LINES", "MAX_OUTLINE_SECTIONS", "digest_outline", "lossy_plan"]

LOSSY_CHUNK_LINES = 40
MAX_OUTLINE_SECTIONS = 200


def lossy_plan(sizes: Sequence[int], max_chars: int) -> tuple[set[int], int]:
    """Which items (largest first) become outlines so the rest fit, and the characters
    each outline may use."""
    order = sorted(range(len(sizes)), key=lambda i: -sizes[i])
    lossy: set[int] = set()
    total = sum(sizes)
    for index in order:
        if total <= max_chars:
            break
        lossy.add(index)
        total -= sizes[index]
    room = max_chars - total
    return lossy, room // max(1, len(lossy))


def digest_outline(
    candidate: Candidate,
    read: ExactRead,
    aliases: AliasTable,
    max_chars: int,
) -> tuple[str, tuple[ContextRef, ...], ContextRef]:
    """A bounded outline: title, original length, the full ref and ordered section refs."""
    full_ref = candidate.ref.model_copy(update={"version": read.digest})
    sections = read.sections or candidate.sections
    if not sections and read.text is not None:
        total_lines = max(1, len(read.text.splitlines()))
        sections = tuple(
            SectionInfo(
                title=f"lines {first}-{min(first + LOSSY_CHUNK_LINES - 1, total_lines)}",
                scope=format_line_scope(first, min(first + LOSSY_CHUNK_LINES - 1, total_lines)),
            )
            for first in range(1, total_lines + 1, LOSSY_CHUNK_LINES)
        )
    original = read.chars_total if read.chars_total is not None else candidate.chars
    head = (
        f"[lossy digest of {label(candidate.title or candidate.ref.path)}: {original} chars "
        f"not delivered in full; full text at [[ref:{aliases.alias(full_ref)}]]]\n"
    )
    if candidate.summary:
        head += f"summary: {label(candidate.summary)}\n"
    lines = [head, "sections in order:\n"]
    used = len(head) + len(lines[1])
    section_refs: list[ContextRef] = []
    for index, section in enumerate(sections[:MAX_OUTLINE_SECTIONS]):
        ref = candidate.ref.with_scope(section.scope)
        size = f" ({section.chars} chars)" if section.chars is not None else ""
        title = label(section.title)
        line = f"{'  ' * max(0, section.level - 1)}- {title} [[ref:{{alias}}]]{size}\n"
        omitted_note = f"[{len(sections) - index} more sections not listed]\n"
        if used + len(line) + 12 + len(omitted_note) > max_chars:
            lines.append(omitted_note)
            break
        line = line.replace("{alias}", aliases.alias(ref))
        lines.append(line)
        used += len(line)
        section_refs.append(ref)
    else:
        if len(sections) > MAX_OUTLINE_SECTIONS:
            lines.append(f"[{len(sections) - MAX_OUTLINE_SECTIONS} more sections not listed]\n")
    return "".join(lines), tuple(section_refs), full_ref
