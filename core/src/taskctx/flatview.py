"""A package as flat metadata and plain words, for frameworks that hold documents.

LangChain, LlamaIndex and Haystack carry a document's facts in a flat metadata mapping
(some stores keep only strings, numbers, booleans and None) and show the model text.
:func:`block_metadata` gives one block's facts in that shape: where it came from (the
canonical ref, binding, source kind), what it is (role, representation, completeness,
digest, scope, characters), which snapshot and package it belongs to, and its binding's
coverage in this package. :func:`coverage_statement` says in words, for the model, what
each binding's coverage was and what was left out and why. Adapters translate these;
they decide nothing about what is delivered.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from taskctx.model import ContextBlock, ContextPackage, Omission, SourceCoverage

__all__ = [
    "COVERAGE_KIND",
    "METADATA_FIELDS",
    "FlatValue",
    "block_metadata",
    "coverage_metadata",
    "coverage_statement",
]

FlatValue = str | int | float | bool | None
"""What a flat metadata value may be."""

METADATA_FIELDS: Mapping[str, str] = {
    "ref": "the canonical ref of the block (ctx://binding/path[?v=version][#scope]); "
    "read it back exactly with the reader or the source",
    "alias": "the request-local alias the package's own view uses (ref_N)",
    "binding_id": "the binding of the task context the block came from",
    "source_kind": "the kind of that source (task_workspace, record_store, ...)",
    "title": "the item's title (a file's path, a record's key), when it has one",
    "role": "the block's role (instruction, evidence, file, record, ...)",
    "required": "whether the block was required (never dropped or cut)",
    "media_type": "the media type of the content as delivered",
    "representation": "text, parsed_text, lossy_digest or reference_only",
    "completeness": "complete, lossy or reference_only: whether this is all of the item",
    "digest": "sha256 of the delivered content",
    "chars": "characters of the delivered content",
    "chars_original": "characters of the original, when the block is a digest or a part",
    "scope": "the bounded scope inside the item (lines:10-40, page:3), when there is one",
    "score": "the ranking score, when the block was ranked",
    "rank": "the block's position in the package, 1 first",
    "package_id": "the package the block was delivered in",
    "task_id": "the task context's id",
    "context_revision": "the pinned revision of the task context (the snapshot)",
    "source_revision": "the pinned revision of the block's source in that snapshot",
    "coverage_status": "the binding's coverage in this package: complete, partial or unknown",
    "coverage_outcome": "matched, no_match_in_scope, not_searched or unavailable",
    "coverage_considered": "items of the binding's declared scope considered (None: unknown)",
    "coverage_delivered": "items of the binding delivered in this package",
    "coverage_omitted": "items of the binding left out (None: unknown)",
    "has_more": "whether another page of the same snapshot can be read",
}
"""Every field :func:`block_metadata` gives, and what it means (the docs show this)."""


def block_metadata(package: ContextPackage, block: ContextBlock, rank: int) -> dict[str, FlatValue]:
    """The flat facts of ``block`` (the ``rank``-th block of ``package``), keyed as
    :data:`METADATA_FIELDS` lists them."""
    coverage = package.source_coverage.get(block.binding_id)
    return {
        "ref": str(block.ref),
        "alias": block.alias,
        "binding_id": block.binding_id,
        "source_kind": block.source_kind,
        "title": block.title,
        "role": block.role,
        "required": block.required,
        "media_type": block.media_type,
        "representation": block.representation.value,
        "completeness": block.completeness.value,
        "digest": block.digest,
        "chars": block.chars,
        "chars_original": block.chars_original,
        "scope": block.scope,
        "score": block.score,
        "rank": rank,
        "package_id": package.package_id,
        "task_id": package.task_id,
        "context_revision": package.snapshot.context_revision,
        "source_revision": package.snapshot.sources.get(block.binding_id),
        **_coverage_fields(coverage),
        "has_more": package.has_more,
    }


COVERAGE_KIND = "coverage"
"""The ``kind`` in the metadata of an adapter's closing coverage document."""


def coverage_metadata(package: ContextPackage) -> dict[str, FlatValue]:
    """The metadata of the closing document that holds :func:`coverage_statement`:
    ``kind`` (:data:`COVERAGE_KIND`), the package, the task, the snapshot, ``has_more``."""
    return {
        "kind": COVERAGE_KIND,
        "package_id": package.package_id,
        "task_id": package.task_id,
        "context_revision": package.snapshot.context_revision,
        "has_more": package.has_more,
    }


def _coverage_fields(coverage: SourceCoverage | None) -> dict[str, FlatValue]:
    if coverage is None:
        return dict.fromkeys(
            ("coverage_status", "coverage_outcome", "coverage_considered", "coverage_delivered",
             "coverage_omitted"),
        )  # fmt: skip
    return {
        "coverage_status": coverage.status.value,
        "coverage_outcome": coverage.outcome.value,
        "coverage_considered": coverage.considered,
        "coverage_delivered": coverage.delivered,
        "coverage_omitted": coverage.omitted,
    }


def _left_out(omissions: list[Omission]) -> str:
    counts = Counter(o.reason.value for o in omissions)
    return ", ".join(f"{reason}: {n}" for reason, n in sorted(counts.items()))


def _binding_line(binding: str, coverage: SourceCoverage, omitted: list[Omission]) -> str:
    considered = "an unknown number" if coverage.considered is None else str(coverage.considered)
    line = (
        f"- {binding} ({coverage.source_kind}): {coverage.status.value}, "
        f"{coverage.outcome.value.replace('_', ' ')}; {coverage.delivered} delivered of "
        f"{considered} considered"
    )
    if coverage.omitted:
        line += f", {coverage.omitted} left out"
    if omitted:
        line += f" (in this package: {_left_out(omitted)})"
    if coverage.reasons:
        line += f"; why: {', '.join(map(str, coverage.reasons))}"
    return line + "."


def coverage_statement(package: ContextPackage) -> str:
    """What the package covers and leaves out, in words for a model: one line per
    binding (status, outcome, counts, omissions by reason, coverage reasons), and
    whether more can be read from the same snapshot."""
    by_binding: dict[str, list[Omission]] = {}
    for omission in package.omissions:
        by_binding.setdefault(omission.binding_id, []).append(omission)
    lines = [
        f"Coverage of package {package.package_id} (task {package.task_id}, snapshot "
        f"{package.snapshot.context_revision}): {len(package.blocks)} blocks delivered."
    ]
    for binding, coverage in package.source_coverage.items():
        lines.append(_binding_line(binding, coverage, by_binding.get(binding, [])))
    lines.append(
        "More of the same snapshot can be read (has_more)."
        if package.has_more
        else "This is the last page of this read."
    )
    return "\n".join(lines)
