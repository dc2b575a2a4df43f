"""The model's view of a package: one XML 1.0 document whose structure only this module writes.

Canonical refs never appear here: every ref is a request-local ``[[ref:ref_N]]`` alias
the host maps back with ``ContextPackage.resolve_alias``. Every value that came from a
source or a caller (content, titles, scopes, details, reasons, messages) is escaped by
:mod:`taskctx.markup`, so none of it can open or close an element or show an alias.
The only raw ``[[ref:...]]`` in the view are the kernel's: in ``ref`` attributes and in
the lines of a lossy digest that point at the digest's own full and section refs.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from taskctx.markup import attrs, escape_attr, escape_text
from taskctx.model import Completeness, ContextBlock, Representation

if TYPE_CHECKING:
    from taskctx.model import ContextPackage

__all__ = ["MORE_TEXT", "render_package"]

MORE_TEXT = "another page of this snapshot is available"
"""The text of the ``<more>`` element of a package with another page."""

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


def render_package(package: ContextPackage) -> str:
    """Render ``package`` as the XML document a model reads (see docs/concepts.md)."""
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
        out.append(f'<block ref="{_ref(block.alias)}" {head}>\n{_content(block, alias_of)}</block>')
    for attachment in package.attachments:
        head = attrs(
            media_type=attachment.media_type,
            width=attachment.width,
            height=attachment.height,
        )
        out.append(f'<attachment ref="{_ref(attachment.alias)}" {head}/>')
    for omission in package.omissions:
        head = attrs(
            reason=omission.reason.value,
            required="true" if omission.required else None,
            size=omission.size,
            media_type=omission.media_type,
            detail=omission.detail,
        )
        out.append(f'<omitted ref="{_ref(omission.alias)}" {head}/>')
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
    for diagnostic in package.diagnostics:
        head = attrs(code=diagnostic.code, severity=diagnostic.severity.value)
        out.append(f"<diagnostic {head}>{escape_text(diagnostic.message)}</diagnostic>")
    if package.has_more:
        out.append(f"<more>{MORE_TEXT}</more>")
    out.append("</context>")
    return "\n".join(out)
