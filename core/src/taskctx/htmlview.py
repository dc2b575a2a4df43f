"""One self-contained HTML page of one or more packages, for a person to look at.

``taskctx inspect PACKAGE.json`` and ``taskctx read --html FILE`` write it. The page
holds, per package: the blocks as the model sees them (their attributes and content),
attachments, omissions grouped by reason, coverage per binding as a small bar chart,
the pinned snapshot, diagnostics, the aliases with links between an alias and its
canonical ref, and the model's view as rendered (``ContextPackage.render()``).

Everything a source or a caller wrote is escaped: the page has no script, and its
Content-Security-Policy allows no fetch at all (styles inline, images only as
``data:`` URIs), so opening it contacts nothing and hostile content cannot run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from html import escape

from taskctx.model import ContextBlock, ContextPackage, SourceCoverage

__all__ = ["CONTENT_SECURITY_POLICY", "package_html"]

CONTENT_SECURITY_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
"""What the page may load: nothing but its inline style and ``data:`` images."""

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:72rem;padding:1rem 2rem}
h1{font-size:1.4rem}h2{font-size:1.15rem;border-bottom:1px solid #d0d7de;padding-bottom:.2rem}
h3{font-size:1rem;margin:.2rem 0}table{border-collapse:collapse;margin:.4rem 0}
td,th{border:1px solid #d0d7de;padding:.2rem .5rem;text-align:left;vertical-align:top}
pre{background:#f6f8fa;padding:.6rem;overflow:auto;white-space:pre-wrap;word-break:break-word}
.block{border:1px solid #d0d7de;border-radius:6px;padding:.5rem .8rem;margin:.6rem 0}
.block:target,.alias:target{outline:3px solid #54aeff}.meta{color:#57606a;font-size:.9em}
.tag{display:inline-block;border-radius:1em;padding:0 .5em;margin-right:.3em;background:#eaeef2}
.part{background:#fff8c5}.lossy{background:#ffebe9}.required{background:#ddf4ff}
svg text{font-size:11px}
"""


def package_html(packages: Sequence[ContextPackage], *, title: str | None = None) -> str:
    """The HTML page of ``packages`` (the pages of one result, or any packages)."""
    if not packages:
        raise ValueError("no package to show")
    heading = title or f"taskctx package{'s' if len(packages) > 1 else ''}"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(heading)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{escape(heading)}</h1>",
    ]
    for number, package in enumerate(packages, start=1):
        parts.append(_package(package, f"p{number}"))
    parts.append("</body></html>")
    return "\n".join(parts)


def _package(package: ContextPackage, prefix: str) -> str:
    """One package's sections; element ids start with ``prefix`` so pages never clash."""
    alias_of = {str(ref): alias for alias, ref in package.aliases.items()}
    out = [
        f'<article class="package" id="{prefix}" data-package="{escape(package.package_id)}">',
        f"<h2>Page {package.page} of task {escape(package.task_id)}</h2>",
        _summary(package),
        "<h2>Blocks</h2>",
    ]
    out += [_block(block, prefix, alias_of) for block in package.blocks] or ["<p>none</p>"]
    if package.attachments:
        out.append("<h2>Attachments</h2>")
        for item in package.attachments:
            out.append(
                f'<div class="block" id="{prefix}-{escape(item.alias)}" data-alias='
                f'"{escape(item.alias)}"><h3>{_alias_link(item.alias, prefix)} '
                f'{escape(str(item.ref))}</h3><img alt="{escape(item.ref.path)}" '
                f'src="data:{escape(item.media_type)};base64,{escape(item.data_base64)}">'
                "</div>"
            )
    out += [_omissions(package, prefix), _coverage(package.source_coverage)]
    out += [_diagnostics(package, prefix), _snapshot(package), _aliases(package, prefix)]
    out.append(f"<h2>The model's view</h2><pre>{escape(package.render())}</pre></article>")
    return "\n".join(out)


def _summary(package: ContextPackage) -> str:
    rows = [
        ("package", package.package_id),
        ("consumer", package.consumer.name),
        ("query", package.intent.query or "(none)"),
        (
            "budget",
            f"{package.used_chars:,} of {package.budget.max_chars:,} chars, "
            f"{len(package.blocks) + len(package.attachments)} of {package.budget.max_blocks} "
            "blocks",
        ),
        ("more pages", "yes" if package.has_more else "no"),
    ]
    if package.budget_excess is not None:
        rows.append(("over budget", package.budget_excess.model_dump_json()))
    return _table(("", ""), rows, header=False)


def _block(block: ContextBlock, prefix: str, alias_of: dict[str, str]) -> str:
    tags = [block.role, block.completeness.value, block.representation.value]
    if block.required:
        tags.insert(0, "required")
    part_of = ""
    if block.full_ref is not None and str(block.full_ref) in alias_of:
        whole = alias_of[str(block.full_ref)]
        part_of = f" part of {_alias_link(whole, prefix)}"
    size = f"{block.chars:,} chars"
    if block.chars_original is not None and block.chars_original != block.chars:
        size += f" of {block.chars_original:,}"
    return (
        f'<section class="block {escape(block.completeness.value)}'
        f'{" required" if block.required else ""}" '
        f'id="{prefix}-{escape(block.alias)}" data-alias="{escape(block.alias)}">'
        f"<h3>{_alias_link(block.alias, prefix)} {escape(block.title or block.ref.path)}</h3>"
        f'<div class="meta">{"".join(f"<span class=tag>{escape(t)}</span>" for t in tags)}'
        f"{escape(size)}{part_of} &middot; <code>{escape(str(block.ref))}</code></div>"
        f"<pre>{escape(block.content)}</pre></section>"
    )


def _omissions(package: ContextPackage, prefix: str) -> str:
    if not package.omissions:
        return "<h2>Omissions</h2><p>none</p>"
    by_reason: dict[str, list[str]] = {}
    for item in package.omissions:
        size = f", {item.size:,} chars" if item.size is not None else ""
        detail = f": {escape(item.detail)}" if item.detail else ""
        by_reason.setdefault(item.reason.value, []).append(
            f'<li class="omission" id="{prefix}-{escape(item.alias)}" data-alias='
            f'"{escape(item.alias)}">{_alias_link(item.alias, prefix)} '
            f"<code>{escape(str(item.ref))}</code>{escape(size)}{detail}</li>"
        )
    out = ["<h2>Omissions</h2>"]
    for reason, items in sorted(by_reason.items()):
        out.append(
            f'<details open data-reason="{escape(reason)}"><summary>{escape(reason)} '
            f"({len(items)})</summary><ul>{''.join(items)}</ul></details>"
        )
    return "\n".join(out)


def _coverage(coverage: Mapping[str, SourceCoverage]) -> str:
    """Coverage per binding: delivered of considered as bars, then the full table."""
    items = list(coverage.values())
    if not items:
        return "<h2>Coverage</h2><p>no bindings</p>"
    width, bar = 360, 14
    height = (bar + 10) * len(items) + 10
    svg = [
        f'<svg role="img" aria-label="coverage per binding" width="{width + 200}" '
        f'height="{height}" xmlns="http://www.w3.org/2000/svg">'
    ]
    rows = []
    for index, item in enumerate(items):
        considered = item.considered or (item.delivered + (item.omitted or 0)) or 1
        delivered = round(width * min(item.delivered / considered, 1.0))
        y = 10 + index * (bar + 10)
        svg.append(
            f'<text x="0" y="{y + 11}">{escape(item.binding_id)[:24]}</text>'
            f'<rect x="180" y="{y}" width="{width}" height="{bar}" fill="#eaeef2"/>'
            f'<rect x="180" y="{y}" width="{delivered}" height="{bar}" fill="#2da44e"/>'
            f'<text x="{186 + width}" y="{y + 11}">{item.delivered}/{considered}</text>'
        )
        rows.append(
            (
                item.binding_id,
                item.source_kind,
                item.status.value,
                item.outcome.value,
                item.enumeration.value,
                str(item.considered),
                str(item.delivered),
                str(item.omitted),
                ", ".join(map(str, item.reasons)),
            )
        )
    svg.append("</svg>")
    head = (
        "binding",
        "kind",
        "status",
        "outcome",
        "enumeration",
        "considered",
        "delivered",
        "omitted",
        "reasons",
    )
    return "<h2>Coverage</h2>" + "".join(svg) + _table(head, rows)


def _diagnostics(package: ContextPackage, prefix: str) -> str:
    if not package.diagnostics:
        return "<h2>Diagnostics</h2><p>none</p>"
    alias_of = {str(ref): alias for alias, ref in package.aliases.items()}
    rows = []
    for item in package.diagnostics:
        ref = str(item.ref) if item.ref is not None else ""
        rows.append((item.severity.value, str(item.code), item.message, ref, alias_of.get(ref)))
    out = [
        "<h2>Diagnostics</h2><table><tr><th>severity</th><th>code</th><th>message</th>"
        "<th>ref</th></tr>"
    ]
    for severity, code, message, ref, alias in rows:
        where = _alias_link(alias, prefix) if alias else escape(ref)
        out.append(
            f'<tr class="diagnostic"><td>{escape(severity)}</td><td>{escape(code)}</td>'
            f"<td>{escape(message)}</td><td>{where}</td></tr>"
        )
    out.append("</table>")
    return "".join(out)


def _snapshot(package: ContextPackage) -> str:
    snapshot = package.snapshot
    rows = [("(context)", snapshot.context_revision)]
    rows += sorted(snapshot.sources.items())
    return "<h2>Pinned snapshot</h2>" + _table(("binding", "revision"), rows)


def _aliases(package: ContextPackage, prefix: str) -> str:
    out = ["<h2>Aliases</h2><table><tr><th>alias</th><th>canonical ref</th></tr>"]
    for alias, ref in package.aliases.items():
        out.append(
            f'<tr class="alias" id="{prefix}-alias-{escape(alias)}"><td>'
            f'<a href="#{prefix}-{escape(alias)}">[[ref:{escape(alias)}]]</a></td>'
            f"<td><code>{escape(str(ref))}</code></td></tr>"
        )
    out.append("</table>")
    return "".join(out)


def _alias_link(alias: str, prefix: str) -> str:
    """The alias, linked to its row in the alias table (which links back to its item)."""
    return f'<a href="#{prefix}-alias-{escape(alias)}">[[ref:{escape(alias)}]]</a>'


def _table(
    head: Sequence[str], rows: Iterable[Sequence[str | None]], *, header: bool = True
) -> str:
    out = ["<table>"]
    if header:
        out.append("<tr>" + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr>")
    for row in rows:
        out.append("<tr>" + "".join(f"<td>{escape(str(c or ''))}</td>" for c in row) + "</tr>")
    out.append("</table>")
    return "".join(out)
