"""The model's view of a package: one XML 1.0 document whose structure only this module writes.

Canonical refs never appear here: every ref is a request-local ``[[ref:ref_N]]`` alias
the host maps back with ``ContextPackage.resolve_alias``. Every value that came from a
source or a caller (content, titles, scopes, details, reasons, messages) is escaped by
:mod:`taskctx.markup`, so none of it can open or close an element or show an alias.
The only raw ``[[ref:...]]`` in the view are the kernel's: in ``ref`` attributes and in
the lines of a lossy digest that point at the digest's own full and section refs.

The view is for a model, the package is the audit record: omitted and attached items
show their canonical name (the ref's path), never a source-provided title; MIME types,
digests and byte sizes of non-text media stay in the package. Optional omissions and
informational diagnostics are listed up to :data:`LISTED_PER_REASON` per reason or code,
then counted; required omissions, warnings and errors are always listed whole.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, TypeVar

from taskctx.codes import Completeness, OmissionReason, Representation, Severity
from taskctx.markup import attrs, escape_attr, escape_text
from taskctx.media import MediaClass, classify

if TYPE_CHECKING:
    from taskctx.model import Attachment, ContextBlock, ContextPackage, Diagnostic, Omission

__all__ = ["LISTED_PER_REASON", "MORE_TEXT", "QUALITY_TEXT", "render_package"]

MORE_TEXT = "another page of this snapshot is available"
"""The text of the ``<more>`` element of a package with another page."""

QUALITY_TEXT = (
    "mechanical delivery: nothing evaluated whether this material suffices for the task, "
    "and what sources claim about it is no proof that it does"
)
"""The text of the ``<quality evaluated="false">`` element every view ends with."""

LISTED_PER_REASON = 8
"""Optional omissions listed one by one per reason (and informational diagnostics per
code) before the rest are only counted in an ``<omitted-summary>``
(``<diagnostic-summary>``) element."""

_NON_TEXT_REASONS = frozenset({OmissionReason.REFERENCE_ONLY, OmissionReason.UNSUPPORTED_MEDIA})

_ALIAS_TOKEN = re.compile(r"\[\[ref:([^\[\]]*)\]\]")


def _ref(alias: str) -> str:
    return f"[[ref:{escape_attr(alias)}]]"


def _digest_aliases(block: ContextBlock, alias_of: dict[str, str]) -> frozenset[str]:
    """The aliases a kernel-written lossy digest may show raw: its full and section refs."""
    if block.completeness is not Completeness.LOSSY or block.full_ref is None:
        return frozenset()
    if block.representation is not Representation.LOSSY_DIGEST:
        return frozenset()
    refs = (block.full_ref, *block.section_refs)
    return frozenset(alias_of[str(ref)] for ref in refs if str(ref) in alias_of)


def _part_of(block: ContextBlock, alias_of: dict[str, str]) -> str:
    """The ``part_of`` attribute naming the candidate a part was cut from ("" for other
    blocks)."""
    if block.completeness is not Completeness.PART or block.full_ref is None:
        return ""
    alias = alias_of.get(str(block.full_ref))
    return f' part_of="{_ref(alias)}"' if alias is not None else ""


def _content(block: ContextBlock, alias_of: dict[str, str]) -> str:
    """The escaped content of ``block``, ending with a newline."""
    own = _digest_aliases(block, alias_of)
    if not own:
        body = escape_text(block.content)
    else:
        parts: list[str] = []
        last = 0
        for match in _ALIAS_TOKEN.finditer(block.content):
            if match[1] in own:
                parts.append(escape_text(block.content[last : match.start()]))
                parts.append(f"[[ref:{match[1]}]]")
                last = match.end()
        parts.append(escape_text(block.content[last:]))
        body = "".join(parts)
    return body if body.endswith("\n") else body + "\n"


def _is_text(omission: Omission) -> bool:
    """Whether an omitted item is text (or a parsed document): its size may be shown."""
    if omission.reason in _NON_TEXT_REASONS:
        return False
    media_class = classify(omission.ref.path, omission.media_type).media_class
    return media_class in (MediaClass.TEXT, MediaClass.DOCUMENT)


_Item = TypeVar("_Item")
_Key = TypeVar("_Key", bound=Hashable)


def _capped(
    items: Sequence[_Item], key: Callable[[_Item], _Key], capped: Callable[[_Item], bool]
) -> tuple[list[_Item], list[tuple[_Key, int, int]]]:
    """The items shown one by one (at most :data:`LISTED_PER_REASON` capped ones per key),
    and, when some were only counted, ``(key, count, listed)`` for every key present."""
    shown: list[_Item] = []
    per_key: Counter[_Key] = Counter()
    for item in items:
        limited = capped(item)
        if not limited or per_key[key(item)] < LISTED_PER_REASON:
            shown.append(item)
            per_key[key(item)] += limited
    if len(shown) == len(items):
        return shown, []
    totals = Counter(key(item) for item in items)
    listed = Counter(key(item) for item in shown)
    return shown, [(k, count, listed[k]) for k, count in totals.items()]


def _listed_omissions(omissions: Sequence[Omission]) -> tuple[list[Omission], list[str]]:
    """The omissions shown one by one (required ones always), and the summary lines (one
    per reason present) when some optional ones were only counted."""
    shown, counts = _capped(omissions, lambda o: o.reason, lambda o: not o.required)
    summary = [
        f"<omitted-summary {attrs(reason=reason.value, count=count, listed=listed)}/>"
        for reason, count, listed in counts
    ]
    return shown, summary


def _listed_diagnostics(
    diagnostics: Sequence[Diagnostic],
) -> tuple[list[Diagnostic], list[str]]:
    """The diagnostics shown one by one (informational ones capped per code), and the
    summary lines of the codes some of whose diagnostics were only counted."""
    shown, counts = _capped(diagnostics, lambda d: d.code, lambda d: d.severity is Severity.INFO)
    summary = [
        f"<diagnostic-summary {attrs(code=code, count=count, listed=listed)}/>"
        for code, count, listed in counts
        if count > listed
    ]
    return shown, summary


def _attachment(attachment: Attachment) -> str:
    """An attachment's element: its name and size; a segment's place in its image, and a
    prepared image's original size (the image it shows is not the source's own)."""
    prepared = attachment.prepared
    head = attrs(
        name=attachment.ref.path,
        width=attachment.width,
        height=attachment.height,
        segment=attachment.segment,
        segments=attachment.segments,
        top=attachment.top,
        bottom=attachment.bottom,
        original_width=attachment.original_width if prepared else None,
        original_height=attachment.original_height if prepared else None,
        prepared=True if prepared else None,
    )
    return f'<attachment ref="{_ref(attachment.alias)}" {head}/>'


def render_package(package: ContextPackage, *, next_step: str | None = None) -> str:
    """Render ``package`` as the XML document a model reads (see docs/concepts.md).

    ``next_step`` says how to get the next page where the reader knows (the command
    line: the command to run); it follows the ``<more>`` text."""
    alias_of = {str(ref): alias for alias, ref in package.aliases.items()}
    out = [f"<context {attrs(task=package.task_id, page=package.page)}>"]
    for block in package.blocks:
        head = attrs(
            role=block.role,
            required="true" if block.required else None,
            title=block.title,
            completeness=block.completeness.value,
            representation=block.representation.value,
            chars=block.chars,
            chars_original=block.chars_original if block.chars_original != block.chars else None,
        )
        head += _part_of(block, alias_of)
        out.append(f'<block ref="{_ref(block.alias)}" {head}>\n{_content(block, alias_of)}</block>')
    out.extend(_attachment(attachment) for attachment in package.attachments)
    omissions, omission_summary = _listed_omissions(package.omissions)
    for omission in omissions:
        head = attrs(
            name=omission.ref.path,
            reason=omission.reason.value,
            required="true" if omission.required else None,
            size=omission.size if _is_text(omission) else None,
            detail=omission.detail,
        )
        out.append(f'<omitted ref="{_ref(omission.alias)}" {head}/>')
    out.extend(omission_summary)
    for binding_id, cov in package.source_coverage.items():
        head = attrs(
            binding=binding_id,
            status=cov.status.value,
            outcome=cov.outcome.value,
            enumeration=cov.enumeration.value,
            considered=cov.considered,
            delivered=cov.delivered,
            omitted=cov.omitted,
            reasons="; ".join(cov.reasons) or None,
        )
        out.append(f"<coverage {head}/>")
    diagnostics, diagnostic_summary = _listed_diagnostics(package.diagnostics)
    for diagnostic in diagnostics:
        head = attrs(code=diagnostic.code, severity=diagnostic.severity.value)
        out.append(f"<diagnostic {head}>{escape_text(diagnostic.message)}</diagnostic>")
    out.extend(diagnostic_summary)
    out.append(f'<quality evaluated="false">{QUALITY_TEXT}</quality>')
    if package.has_more:
        step = f": {escape_text(next_step)}" if next_step else ""
        out.append(f"<more>{MORE_TEXT}{step}</more>")
    out.append("</context>")
    return "\n".join(out)
