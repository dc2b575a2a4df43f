"""Values that cross a boundary: pydantic v2, frozen, JSON round-trippable.

Refs, descriptors and exact reads travel between sources and the kernel; budgets,
intents and consumers come from callers; blocks, omissions, coverage and packages go
to the model and back. Reader state and cursors leave the process. The enums live in
:mod:`taskctx.codes` and the source-side values in :mod:`taskctx.descriptors`; both are
importable from here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal
from urllib.parse import quote, unquote

from pydantic import Field, ValidationError, field_validator, model_validator

from taskctx._imageprep_steps import DEFAULT_IMAGE_POLICY, ImageInputPolicy
from taskctx.codes import (
    Completeness,
    CoverageOutcome,
    CoverageReason,
    CoverageReasonCode,
    CoverageStatus,
    DiagnosticCodeValue,
    Enumeration,
    OmissionReason,
    Representation,
    Severity,
)
from taskctx.descriptors import (
    DescriptorPage,
    EnumerationRequest,
    ExactRead,
    Problem,
    SectionInfo,
    SourceDescriptor,
)
from taskctx.errors import UnknownAliasError
from taskctx.frozen import FrozenModel
from taskctx.jsonsafe import check_json_depth
from taskctx.render import render_package

__all__ = [
    "DIRECT_BINDING",
    "Attachment",
    "BudgetExcess",
    "Completeness",
    "ContextBlock",
    "ContextBudget",
    "ContextConsumer",
    "ContextFilters",
    "ContextPackage",
    "ContextReadIntent",
    "ContextRef",
    "CoverageOutcome",
    "CoverageReason",
    "CoverageStatus",
    "DescriptorPage",
    "Diagnostic",
    "Enumeration",
    "EnumerationRequest",
    "ExactRead",
    "FrozenModel",
    "Omission",
    "OmissionReason",
    "Problem",
    "ReaderState",
    "Representation",
    "SectionInfo",
    "Severity",
    "Snapshot",
    "SourceCoverage",
    "SourceDescriptor",
]

DIRECT_BINDING = "_direct"
"""Binding id of entries put directly on a TaskContext (not a valid user binding id)."""

BINDING_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


_REF_PATTERN = re.compile(
    r"ctx://(?P<binding>[^/?#]+)/(?P<path>[^?#]*)(?:\?v=(?P<version>[^#]*))?(?:#(?P<scope>.*))?"
)
_PATH_SAFE = "/-_.~!$&'()*+,;=:@"
_SCOPE_SAFE = "-_.~!$&'()*+,;=:@/"


class ContextRef(FrozenModel):
    """Canonical address of an item, or of a bounded scope inside it.

    ``str(ref)`` is the canonical form, ``ctx://<binding>/<path>[?v=<version>][#<scope>]``,
    and ``ContextRef.parse(str(ref)) == ref``. ``version`` pins a content version (the
    immutable full-text ref of a lossy digest carries it).
    """

    binding: str
    path: str
    scope: str | None = None
    version: str | None = None

    @field_validator("binding")
    @classmethod
    def _binding_shape(cls, value: str) -> str:
        if value != DIRECT_BINDING and not BINDING_ID_PATTERN.fullmatch(value):
            raise ValueError(f"invalid binding id {value!r}")
        return value

    @field_validator("path")
    @classmethod
    def _path_shape(cls, value: str) -> str:
        if not value or "\x00" in value:
            raise ValueError("a ref path must be non-empty and contain no NUL")
        return value

    @classmethod
    def parse(cls, text: str) -> ContextRef:
        """Parse the canonical string form; raise ValueError naming what is wrong."""
        match = _REF_PATTERN.fullmatch(text)
        if match is None:
            raise ValueError(f"not a canonical context ref: {text!r}")
        scope = match["scope"]
        version = match["version"]
        return cls(
            binding=unquote(match["binding"]),
            path=unquote(match["path"]),
            scope=unquote(scope) if scope is not None else None,
            version=unquote(version) if version is not None else None,
        )

    def __str__(self) -> str:
        text = f"ctx://{quote(self.binding, safe='')}/{quote(self.path, safe=_PATH_SAFE)}"
        if self.version is not None:
            text += f"?v={quote(self.version, safe='')}"
        if self.scope is not None:
            text += f"#{quote(self.scope, safe=_SCOPE_SAFE)}"
        return text

    def with_scope(self, scope: str | None) -> ContextRef:
        """The same item at another scope (None for the whole item)."""
        return self.model_copy(update={"scope": scope})

    def unversioned(self) -> ContextRef:
        """The same address without a pinned content version."""
        return self.model_copy(update={"version": None})


def _coerce_ref(value: object) -> object:
    return ContextRef.parse(value) if isinstance(value, str) else value


_ABSENT: Any = object()
"""Default of a positional parameter not given (so the field's own default applies)."""


def _with_positionals(
    model: str, names: tuple[str, ...], values: tuple[Any, ...], data: dict[str, Any]
) -> dict[str, Any]:
    """``data`` with the positional ``values`` under their field ``names``.

    A field given both positionally and by keyword is a TypeError, as it is for a function.
    """
    for name, value in zip(names, values, strict=True):
        if value is _ABSENT:
            continue
        if name in data:
            raise TypeError(f"{model}() got {name!r} both positionally and by keyword")
        data[name] = value
    return data


class ContextBudget(FrozenModel):
    """What one package may deliver: characters of delivered text and number of blocks.

    ``ContextBudget(6000, 12)`` is ``ContextBudget(max_chars=6000, max_blocks=12)``.
    """

    max_chars: int = Field(default=20_000, ge=1)
    max_blocks: int = Field(default=50, ge=1)

    def __init__(self, max_chars: int = _ABSENT, max_blocks: int = _ABSENT, /, **data: Any) -> None:
        super().__init__(
            **_with_positionals(
                "ContextBudget", ("max_chars", "max_blocks"), (max_chars, max_blocks), data
            )
        )


class ContextFilters(FrozenModel):
    """Structural filters of a read. Unknown keys are refused, never ignored.

    ``bindings`` and ``source_kinds`` name bindings and source kinds attached to the
    context being read (anything else raises when the read starts); None means every
    binding, and an empty tuple is refused (omit the filter to search every binding).
    Bindings they leave out are reported ``not_searched``, never left out of coverage.
    """

    path_prefix: str | None = None
    glob: str | None = None
    bindings: tuple[str, ...] | None = None
    source_kinds: tuple[str, ...] | None = None
    metadata: Mapping[str, Any] = Field(default_factory=dict)
    max_size: int | None = Field(default=None, ge=0)
    include_hidden: bool = False
    media_types: tuple[str, ...] | None = None

    @field_validator("metadata")
    @classmethod
    def _metadata_depth(cls, value: Mapping[str, Any]) -> Mapping[str, Any]:
        check_json_depth(value, "filters metadata")
        return value

    @field_validator("bindings", "source_kinds")
    @classmethod
    def _not_empty(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if value is not None and not value:
            raise ValueError(
                "an empty tuple selects no binding; omit the filter (None) to search every one"
            )
        return value


class ContextReadIntent(FrozenModel):
    """What a read asks for: a query, refs it must have, roles and filters."""

    query: str = ""
    explicit_refs: tuple[ContextRef, ...] = ()
    roles: tuple[str, ...] = ()
    filters: ContextFilters = Field(default_factory=ContextFilters)
    required_overflow: Literal["fail", "lossy_digest", "deliver"] = "fail"
    """Required content over budget: raise (``fail``), outline the largest items
    (``lossy_digest``), or deliver every original whole and record the excess
    (``deliver``: ``ContextPackage.budget_excess`` and a ``required_over_budget``
    diagnostic; nothing optional joins such a page)."""
    optional_selection: Literal["auto", "none"] = "auto"

    @field_validator("explicit_refs", mode="before")
    @classmethod
    def _parse_refs(cls, value: object) -> object:
        if isinstance(value, (list, tuple)):
            return tuple(_coerce_ref(item) for item in value)
        return value


class ContextConsumer(FrozenModel):
    """Who reads a package and what it can take (``{"attachments": {"image": True}}``).

    ``ContextConsumer("visual-reviewer", capabilities={...})`` is
    ``ContextConsumer(name="visual-reviewer", capabilities={...})``.
    """

    name: str
    capabilities: Mapping[str, Any] = Field(default_factory=dict)

    def __init__(
        self, name: str = _ABSENT, capabilities: Mapping[str, Any] = _ABSENT, /, **data: Any
    ) -> None:
        super().__init__(
            **_with_positionals(
                "ContextConsumer", ("name", "capabilities"), (name, capabilities), data
            )
        )

    @field_validator("capabilities")
    @classmethod
    def _capabilities_valid(cls, value: Mapping[str, Any]) -> Mapping[str, Any]:
        check_json_depth(value, "consumer capabilities")
        attachments = value.get("attachments")
        if not isinstance(attachments, Mapping):
            return value
        declared = attachments.get("image_policy")
        if isinstance(declared, ImageInputPolicy):  # kept as JSON, like the rest
            declared = declared.model_dump(mode="json")
            value = {**value, "attachments": {**attachments, "image_policy": declared}}
        _parse_image_policy(declared)
        return value

    def accepts_image_attachments(self) -> bool:
        """Whether this consumer declared it takes image attachments."""
        attachments = self.capabilities.get("attachments")
        return isinstance(attachments, Mapping) and attachments.get("image") is True

    def image_policy(self) -> ImageInputPolicy | None:
        """How images are prepared for this consumer: its ``attachments.image_policy``
        (fields it leaves out take their defaults; omitted: every default), or None when
        it takes no images or declared ``"image_policy": None`` (validated only)."""
        if not self.accepts_image_attachments():
            return None
        attachments = self.capabilities["attachments"]
        if "image_policy" not in attachments:
            return DEFAULT_IMAGE_POLICY
        return _parse_image_policy(attachments["image_policy"])


def _parse_image_policy(declared: object) -> ImageInputPolicy | None:
    """A consumer's declared image policy; a ValueError names each field that is wrong."""
    if declared is None:
        return None
    if not isinstance(declared, Mapping):
        raise ValueError(
            "capabilities.attachments.image_policy must be a mapping of ImageInputPolicy "
            f"fields or None, not {type(declared).__name__}"
        )
    try:
        return ImageInputPolicy.model_validate(dict(declared))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'policy'}: {error['msg']}"
            for error in exc.errors()
        )
        raise ValueError(f"capabilities.attachments.image_policy is invalid: {problems}") from None


class ContextBlock(FrozenModel):
    """One delivered piece of context with its canonical ref and request-local alias."""

    block_id: str
    alias: str
    ref: ContextRef
    binding_id: str
    source_kind: str
    role: str
    required: bool
    content: str
    media_type: str
    representation: Representation
    completeness: Completeness
    digest: str
    chars: int
    scope: str | None = None
    title: str | None = None
    chars_original: int | None = None
    full_ref: ContextRef | None = None
    section_refs: tuple[ContextRef, ...] = ()
    score: float | None = None


class Attachment(FrozenModel):
    """A validated binary attachment (an image) for a consumer that declared it takes one.

    Prepared by the consumer's image policy (:mod:`taskctx.imageprep`), a tall image is
    one attachment per segment, in order, each under its own ``segment:<i>/<n>`` ref;
    ``original_*`` describe the source's image, ``prepared`` says the bytes are not the
    source's own (split, downscaled, re-encoded or turned upright).
    """

    ref: ContextRef
    alias: str
    media_type: str
    data_base64: str
    bytes: int
    width: int | None = None
    height: int | None = None
    original_width: int | None = None
    """Width of the source's image (after its EXIF orientation)."""
    original_height: int | None = None
    original_bytes: int | None = None
    """Encoded size of the source's image."""
    segment: int | None = None
    """1-based position of this segment (None: the image was not split)."""
    segments: int | None = None
    """How many segments the image was split into (None: not split)."""
    top: int | None = None
    """First row of the original this segment covers."""
    bottom: int | None = None
    """One past the last row it covers."""
    prepared: bool = False


class Omission(FrozenModel):
    """A candidate that is not in the package, and why."""

    ref: ContextRef
    alias: str
    binding_id: str
    reason: OmissionReason
    required: bool = False
    size: int | None = None
    media_type: str | None = None
    detail: str | None = None


class Diagnostic(FrozenModel):
    """Something the caller should know about a read (a failed source, a fallback).

    ``code`` is a :class:`DiagnosticCode`, the :class:`ProblemCode` of the item it
    reports, or a plugin's own code namespaced ``<namespace>:<name>``."""

    code: DiagnosticCodeValue
    message: str
    severity: Severity = Severity.WARNING
    binding_id: str | None = None
    ref: ContextRef | None = None


class SourceCoverage(FrozenModel):
    """How much of one binding's declared scope this package holds."""

    binding_id: str
    source_kind: str
    status: CoverageStatus
    enumeration: Enumeration
    outcome: CoverageOutcome
    considered: int | None
    delivered: int
    omitted: int | None
    reasons: tuple[CoverageReasonCode, ...] = ()
    revision: str | None = None

    @model_validator(mode="after")
    def _counts_agree(self) -> SourceCoverage:
        if self.considered is None:
            if self.status is CoverageStatus.COMPLETE:
                raise ValueError("coverage cannot be complete when considered is unknown")
        elif self.omitted is not None and self.omitted != self.considered - self.delivered:
            raise ValueError("omitted must equal considered - delivered")
        return self


class Snapshot(FrozenModel):
    """The pinned revisions a package was read from."""

    context_revision: str
    sources: Mapping[str, str] = Field(default_factory=dict)


class BudgetExcess(FrozenModel):
    """How far required originals delivered whole (``required_overflow="deliver"``) went
    past the package budget."""

    chars_over: int = Field(ge=0)
    blocks_over: int = Field(ge=0)


class ContextPackage(FrozenModel):
    """What one read delivers: blocks, attachments, omissions, coverage and a cursor.

    ``quality_evaluated`` is always False from the kernel: a package is mechanical
    delivery, and what sources claim is no proof that the material suffices for the task.
    """

    package_id: str
    task_id: str
    consumer: ContextConsumer
    phase: str | None = None
    snapshot: Snapshot
    intent: ContextReadIntent
    budget: ContextBudget
    page: int = 1
    blocks: tuple[ContextBlock, ...] = ()
    attachments: tuple[Attachment, ...] = ()
    omissions: tuple[Omission, ...] = ()
    diagnostics: tuple[Diagnostic, ...] = ()
    source_coverage: Mapping[str, SourceCoverage] = Field(default_factory=dict)
    has_more: bool = False
    cursor: str | None = None
    used_chars: int = 0
    aliases: Mapping[str, ContextRef] = Field(default_factory=dict)
    budget_excess: BudgetExcess | None = None
    quality_evaluated: Literal[False] = False

    def resolve_alias(self, alias: str) -> ContextRef:
        """Map a request-local alias (``ref_3`` or ``[[ref:ref_3]]``) to its canonical ref."""
        key = alias.strip()
        if key.startswith("[[ref:") and key.endswith("]]"):
            key = key[6:-2]
        try:
            return self.aliases[key]
        except KeyError:
            raise UnknownAliasError(
                f"alias {alias!r} was not issued in package {self.package_id}"
            ) from None

    def render(self, *, next_step: str | None = None) -> str:
        """The model's view: blocks, attachments and omissions with aliases, and coverage;
        ``next_step`` (how to get the next page) follows its ``<more>`` text."""
        return render_package(self, next_step=next_step)


class ReaderState(FrozenModel):
    """Exported state of a ContextReader, enough to restore it in a new process."""

    version: Literal[1] = 1
    task_id: str
    consumer: ContextConsumer
    phase: str | None = None
    budget: ContextBudget
    snapshot: Snapshot
    aliases: Mapping[str, ContextRef] = Field(default_factory=dict)
    disclosed: tuple[str, ...] = ()
    selector: str | None = None
    packages_issued: int = 0
