"""Tool inputs and structured outputs (pydantic, frozen): what an MCP client sees.

Outputs name refs by their request-local alias only (``ref_3``); the canonical ref is
the host's, and ``read_ref`` maps an alias back to it. Coverage is the kernel's
``SourceCoverage`` as is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import ConfigDict, Field

from taskctx import (
    Attachment,
    ContextBlock,
    ContextFilters,
    ContextPackage,
    Diagnostic,
    Omission,
    SourceCoverage,
)
from taskctx.model import FrozenModel

__all__ = [
    "AttachmentOutput",
    "BlockOutput",
    "DiagnosticOutput",
    "NoteDeleteInput",
    "NoteDeleteOutput",
    "NoteGetInput",
    "NoteGetOutput",
    "NoteWriteInput",
    "NoteWriteOutput",
    "OmissionOutput",
    "PackageOutput",
    "ReadContextInput",
    "ReadNextInput",
    "ReadRefInput",
    "TaskAddInput",
    "TaskGetInput",
    "TaskListInput",
    "TaskListOutput",
    "TaskOutput",
    "TaskRemoveInput",
    "TaskRemoveOutput",
    "TaskUpdateInput",
]


class _Input(FrozenModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ReadContextInput(_Input):
    """Arguments of ``read_context``: a query, an optional budget, filters and refs."""

    query: str = Field(description="What the agent is looking for.")
    max_chars: int | None = Field(
        default=None, ge=1, description="Characters of delivered text (default: the server's)."
    )
    max_blocks: int | None = Field(
        default=None, ge=1, description="Blocks per page (default: the server's)."
    )
    filters: ContextFilters | None = Field(
        default=None, description="Structural filters: bindings, source_kinds, path_prefix, glob."
    )
    refs: tuple[str, ...] = Field(
        default=(),
        description="Aliases (ref_3) of the latest read, or canonical refs, to deliver whole.",
    )
    required_overflow: Literal["fail", "lossy_digest", "deliver"] = Field(
        default="fail", description="What required content over the budget does."
    )


class ReadNextInput(_Input):
    """Arguments of ``read_next``: the cursor of the previous page."""

    cursor: str = Field(min_length=1, description="The cursor of the previous page.")


class ReadRefInput(_Input):
    """Arguments of ``read_ref``: one alias (or canonical ref, or resource URI) and a scope."""

    ref_or_alias: str = Field(
        min_length=1, description="ref_3 or [[ref:ref_3]] from a read, a ctx:// ref or a URI."
    )
    scope: str | None = Field(
        default=None, min_length=1, description="A scope inside it: lines:10-40, page:3, ..."
    )
    package_id: str | None = Field(
        default=None, description="Resolve the alias in this package (default: the latest read)."
    )
    max_chars: int | None = Field(default=None, ge=1, description="Characters to deliver at most.")


class BlockOutput(FrozenModel):
    """One delivered block, named by its alias."""

    alias: str
    binding_id: str
    source_kind: str
    role: str
    required: bool
    title: str | None = None
    scope: str | None = None
    media_type: str
    representation: str
    completeness: str
    chars: int
    chars_original: int | None = None
    digest: str
    content: str

    @classmethod
    def of(cls, b: ContextBlock) -> BlockOutput:
        """The output of one delivered block."""
        return cls(
            alias=b.alias,
            binding_id=b.binding_id,
            source_kind=b.source_kind,
            role=b.role,
            required=b.required,
            title=b.title,
            scope=b.scope,
            media_type=b.media_type,
            representation=b.representation.value,
            completeness=b.completeness.value,
            chars=b.chars,
            chars_original=b.chars_original,
            digest=b.digest,
            content=b.content,
        )


class AttachmentOutput(FrozenModel):
    """One image attachment (its bytes are an image content item of the result)."""

    alias: str
    media_type: str
    bytes: int
    width: int | None = None
    height: int | None = None
    segment: int | None = None
    """1-based place of this segment of a tall image (None: the whole image)."""
    segments: int | None = None
    original_width: int | None = None
    original_height: int | None = None
    prepared: bool = False
    """True when the bytes are not the source's own (split, scaled or re-encoded)."""

    @classmethod
    def of(cls, a: Attachment) -> AttachmentOutput:
        """The output of one attachment (without its bytes)."""
        return cls(
            alias=a.alias,
            media_type=a.media_type,
            bytes=a.bytes,
            width=a.width,
            height=a.height,
            segment=a.segment,
            segments=a.segments,
            original_width=a.original_width,
            original_height=a.original_height,
            prepared=a.prepared,
        )


class OmissionOutput(FrozenModel):
    """One thing left out, named by its alias (grouped by reason in the package)."""

    alias: str
    binding_id: str
    required: bool = False
    size: int | None = None
    media_type: str | None = None
    detail: str | None = None

    @classmethod
    def of(cls, o: Omission) -> OmissionOutput:
        """The output of one omission."""
        return cls(
            alias=o.alias,
            binding_id=o.binding_id,
            required=o.required,
            size=o.size,
            media_type=o.media_type,
            detail=o.detail,
        )


class DiagnosticOutput(FrozenModel):
    """Something the caller should know about the read."""

    code: str
    severity: str
    message: str
    binding_id: str | None = None
    alias: str | None = None

    @classmethod
    def of(cls, d: Diagnostic, alias_of: Mapping[str, str]) -> DiagnosticOutput:
        """The output of one diagnostic; its ref, if any, by alias (``alias_of``)."""
        return cls(
            code=d.code,
            severity=d.severity.value,
            message=d.message,
            binding_id=d.binding_id,
            alias=alias_of.get(str(d.ref)) if d.ref is not None else None,
        )


class PackageOutput(FrozenModel):
    """A context package as a tool result: the model's view plus its structure."""

    package_id: str
    page: int
    view: str = Field(description="The package as the model sees it (render()).")
    blocks: tuple[BlockOutput, ...]
    attachments: tuple[AttachmentOutput, ...] = ()
    omissions: Mapping[str, tuple[OmissionOutput, ...]] = Field(
        description="What was left out, by reason."
    )
    diagnostics: tuple[DiagnosticOutput, ...] = ()
    coverage: Mapping[str, SourceCoverage] = Field(description="Per binding.")
    snapshot: Mapping[str, str] = Field(description="The pinned revision of each binding.")
    has_more: bool
    cursor: str | None = None
    used_chars: int

    @classmethod
    def of(cls, package: ContextPackage) -> PackageOutput:
        """The structured output of one package."""
        alias_of = {str(ref): alias for alias, ref in package.aliases.items()}
        omissions: dict[str, list[OmissionOutput]] = {}
        for omission in package.omissions:
            omissions.setdefault(omission.reason.value, []).append(OmissionOutput.of(omission))
        return cls(
            package_id=package.package_id,
            page=package.page,
            view=package.render(),
            blocks=tuple(map(BlockOutput.of, package.blocks)),
            attachments=tuple(map(AttachmentOutput.of, package.attachments)),
            omissions={reason: tuple(items) for reason, items in omissions.items()},
            diagnostics=tuple(DiagnosticOutput.of(d, alias_of) for d in package.diagnostics),
            coverage=dict(package.source_coverage),
            snapshot=dict(package.snapshot.sources),
            has_more=package.has_more,
            cursor=package.cursor,
            used_chars=package.used_chars,
        )


# -- working state (session memory) ----------------------------------------------------


class NoteWriteInput(_Input):
    """Arguments of ``note_write``."""

    key: str = Field(description="The note's key.")
    value: str = Field(description="The whole value (kept whole).")


class NoteWriteOutput(FrozenModel):
    """``created`` or ``updated``."""

    key: str
    result: Literal["created", "updated"]


class NoteDeleteInput(_Input):
    """Arguments of ``note_delete``."""

    key: str


class NoteDeleteOutput(FrozenModel):
    """``deleted``, or ``already_absent`` (deleting twice is not an error)."""

    key: str
    result: Literal["deleted", "already_absent"]


class NoteGetInput(_Input):
    """Arguments of ``note_get``: a key, or none for the sorted keys and their count."""

    key: str | None = None


class NoteGetOutput(FrozenModel):
    """One note's whole value, or (no key asked) the sorted keys and their count."""

    key: str | None = None
    value: str | None = None
    keys: tuple[str, ...] | None = None
    count: int | None = None


class TaskAddInput(_Input):
    """Arguments of ``task_add``."""

    title: str
    status: str = "pending"
    notes: str = ""
    task_id: str | None = None


class TaskUpdateInput(_Input):
    """Arguments of ``task_update``: fields not given are kept."""

    task_id: str
    title: str | None = None
    status: str | None = None
    notes: str | None = None


class TaskGetInput(_Input):
    """Arguments of ``task_get``."""

    task_id: str


class TaskListInput(_Input):
    """Arguments of ``task_list``: optionally only tasks of one status."""

    status: str | None = None


class TaskRemoveInput(_Input):
    """Arguments of ``task_remove``."""

    task_id: str


class TaskOutput(FrozenModel):
    """One task."""

    id: str
    title: str
    status: str
    notes: str

    @classmethod
    def of(cls, task: Any) -> TaskOutput:
        """From a ``taskctx_memory.Task``."""
        return cls(id=task.id, title=task.title, status=str(task.status.value), notes=task.notes)


class TaskListOutput(FrozenModel):
    """Tasks in creation order and their count."""

    tasks: tuple[TaskOutput, ...]
    count: int


class TaskRemoveOutput(FrozenModel):
    """``deleted``, or ``already_absent``."""

    task_id: str
    result: Literal["deleted", "already_absent"]
