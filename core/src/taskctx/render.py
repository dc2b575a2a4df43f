"""The model's view of a package: blocks, attachments and omissions by alias, and coverage.

Canonical refs never appear here: every ref is a request-local ``[[ref:ref_N]]`` alias
the host maps back with ``ContextPackage.resolve_alias``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from xml.sax.saxutils import quoteattr

if TYPE_CHECKING:
    from taskctx.model import ContextPackage

__all__ = ["render_package"]


def _attrs(**values: object) -> str:
    return " ".join(f"{k}={quoteattr(str(v))}" for k, v in values.items() if v is not None)


def render_package(package: ContextPackage) -> str:
    """Render ``package`` as tagged text for a model."""
    out = [f"<context {_attrs(task=package.task_id, page=package.page)}>"]
    for block in package.blocks:
        head = _attrs(
            ref=f"[[ref:{block.alias}]]",
            role=block.role,
            required="true" if block.required else None,
            title=block.title,
            completeness=block.completeness.value,
            representation=block.representation.value,
            chars=block.chars,
            chars_original=block.chars_original if block.chars_original != block.chars else None,
        )
        body = block.content if block.content.endswith("\n") else block.content + "\n"
        out.append(f"<block {head}>\n{body}</block>")
    for attachment in package.attachments:
        head = _attrs(
            ref=f"[[ref:{attachment.alias}]]",
            media_type=attachment.media_type,
            width=attachment.width,
            height=attachment.height,
        )
        out.append(f"<attachment {head}/>")
    for omission in package.omissions:
        out.append(
            "<omitted "
            + _attrs(
                ref=f"[[ref:{omission.alias}]]",
                reason=omission.reason.value,
                required="true" if omission.required else None,
                size=omission.size,
                media_type=omission.media_type,
                detail=omission.detail,
            )
            + "/>"
        )
    for binding_id, cov in package.source_coverage.items():
        out.append(
            "<coverage "
            + _attrs(
                binding=binding_id,
                status=cov.status.value,
                outcome=cov.outcome.value,
                enumeration=cov.enumeration.value,
                considered=cov.considered,
                delivered=cov.delivered,
                omitted=cov.omitted,
                reasons="; ".join(cov.reasons) or None,
            )
            + "/>"
        )
    for diagnostic in package.diagnostics:
        head = _attrs(code=diagnostic.code, severity=diagnostic.severity.value)
        out.append(f"<diagnostic {head}>{diagnostic.message}</diagnostic>")
    if package.has_more:
        out.append("<more>another page of this snapshot is available</more>")
    out.append("</context>")
    return "\n".join(out)
