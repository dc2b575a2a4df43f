"""Values that cross a boundary: pydantic v2, frozen, JSON round-trippable.

Refs, descriptors and exact reads travel between sources and the kernel; budgets,
intents and consumers come from callers; blocks, omissions, coverage and packages go
to the model and back. Reader state and cursors leave the process.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import Enum
from typing import Any, Literal
from urllib.parse import quote, unquote

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from taskctx.digests import sha256_digest
from taskctx.errors import UnknownAliasError
from taskctx.jsonsafe import check_json_depth

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


class FrozenModel(BaseModel):
    """Base of every boundary value: immutable, strict about unknown fields."""

    model_config = ConfigDict(
        frozen=True, extra="forbid", ser_json_bytes="base64", val_json_bytes="base64"
    )


class _Choice(str, Enum):
    """A string enum whose ``str()`` is its value (``partial``, not ``CoverageStatus.PARTIAL``)."""

    def __str__(self) -> str:
        return str(self.value)


class Representation(_Choice):
    """How a block's content relates to the original bytes."""

    TEXT = "text"
    PARSED_TEXT = "parsed_text"
    LOSSY_DIGEST = "lossy_digest"
    REFERENCE_ONLY = "reference_only"


class Completeness(_Choice):
    """Whether a block holds all of what its ref names."""

    COMPLETE = "complete"
    LOSSY = "lossy"
    REFERENCE_ONLY = "reference_only"


class OmissionReason(_Choice):
    """Why a candidate is not in a package."""

    OVER_CHAR_BUDGET = "over_char_budget"
    OVER_BLOCK_BUDGET = "over_block_budget"
    NOT_SELECTED = "not_selected"
    ALREADY_DISCLOSED = "already_disclosed"
    REFERENCE_ONLY = "reference_only"
    UNSUPPORTED_MEDIA = "unsupported_media"
    READ_FAILED = "read_failed"
    FILTERED_OUT = "filtered_out"
    NOT_FOUND = "not_found"
    COVERED_BY_PARENT = "covered_by_parent"
    SELECTION_DISABLED = "selection_disabled"
    LARGER_THAN_PAGE = "larger_than_page"
    UNSUPPORTED_SCOPE = "unsupported_scope"
    SECTIONS_DELIVERED = "sections_delivered"


class Severity(_Choice):
    """How much a diagnostic matters to the caller."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


class CoverageStatus(_Choice):
    """How much of a binding's declared scope a package holds."""

    COMPLETE = "complete"
    PARTIAL = "partial"
    UNKNOWN = "unknown"


class Enumeration(_Choice):
    """How the candidates of a binding were found."""

    EXHAUSTIVE = "exhaustive"
    BOUNDED = "bounded"
    RANKED = "ranked"


class CoverageOutcome(_Choice):
    """Searched with matches, searched with none, not searched, or unavailable."""

    MATCHED = "matched"
    NO_MATCH_IN_SCOPE = "no_match_in_scope"
    NOT_SEARCHED = "not_searched"
    UNAVAILABLE = "unavailable"


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


class SectionInfo(FrozenModel):
    """One section of an item: heading, scope string for a scoped read, level, size.

    ``start``/``end`` are character offsets into the item's (parsed) text when the
    producer knows them, so a scoped read can slice without parsing again.
    """

    title: str
    scope: str
    level: int = 1
    chars: int | None = None
    start: int | None = None
    end: int | None = None


class Problem(FrozenModel):
    """Why an item is reference only: a diagnostic code and a message naming the cause."""

    code: str
    message: str


class SourceDescriptor(FrozenModel):
    """Structure of one item of a source: no content, only what locates and sizes it.

    ``scope`` is set when the descriptor names a section or chunk of a larger item
    (``parent_scope`` None means the parent is the whole item at ``path``).
    """

    path: str
    title: str | None = None
    media_type: str = "text/plain"
    size: int | None = None
    chars: int | None = None
    content_version: str
    representation: Representation = Representation.TEXT
    sections: tuple[SectionInfo, ...] = ()
    scope: str | None = None
    parent_scope: str | None = None
    role: str | None = None
    metadata: Mapping[str, Any] = Field(default_factory=dict)
    problem: Problem | None = None
    position: int | None = None
    """Order of a section among its item's sections (document order); None sorts by scope."""
    required: bool = False
    """The source delivers this item as part of its binding's required core: every read
    holds it (whole, or as a lossy digest when allowed), whatever the query."""
    summary: str | None = None
    """A short description the source vouches for (a skill's description, say): shown
    to a selector instead of a body preview, and at the head of a lossy digest."""

    @property
    def key(self) -> tuple[str, str | None]:
        """Identity of the descriptor inside its source: path and scope."""
        return (self.path, self.scope)

    @field_validator("metadata")
    @classmethod
    def _metadata_depth(cls, value: Mapping[str, Any]) -> Mapping[str, Any]:
        check_json_depth(value, "descriptor metadata")
        return value


class EnumerationRequest(FrozenModel):
    """One page request to ``async_enumerate_descriptors``."""

    cursor: str | None = None
    page_size: int = Field(default=500, ge=1, le=100_000)
    revision: str | None = None
    path_prefix: str | None = None


class DescriptorPage(FrozenModel):
    """A page of descriptors, the source revision it was taken at, and the next cursor."""

    descriptors: tuple[SourceDescriptor, ...]
    revision: str
    next_cursor: str | None = None
    total: int | None = None
    enumeration: Enumeration = Enumeration.EXHAUSTIVE
    reasons: tuple[str, ...] = ()


class ExactRead(FrozenModel):
    """Bounded canonical content of one ref with the digest of the whole content.

    ``chars_total`` is the length of the whole canonical text; ``complete`` is False when
    ``limit`` cut it (always at a character boundary). Binary content comes as ``data``.
    """

    path: str
    scope: str | None = None
    text: str | None = None
    data: bytes | None = None
    media_type: str = "text/plain"
    representation: Representation = Representation.TEXT
    digest: str
    chars_total: int | None = None
    complete: bool = True
    content_version: str | None = None
    sections: tuple[SectionInfo, ...] = ()

    @classmethod
    def from_bytes(cls, path: str, data: bytes, **fields: Any) -> ExactRead:
        """A read of bytes that never enter as text (reference only unless ``fields`` say
        otherwise), with the digest of the bytes."""
        fields.setdefault("representation", Representation.REFERENCE_ONLY)
        return cls(path=path, data=data, digest=sha256_digest(data), **fields)

    @classmethod
    def from_text(
        cls, path: str, text: str, limit: int | None, *, scope: str | None = None, **fields: Any
    ) -> ExactRead:
        """A read of ``text`` cut at ``limit`` characters, with the digest of all of it."""
        cut = text if limit is None else text[:limit]
        return cls(
            path=path,
            scope=scope,
            text=cut,
            digest=sha256_digest(text),
            chars_total=len(text),
            complete=len(cut) == len(text),
            **fields,
        )


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
    def _capabilities_depth(cls, value: Mapping[str, Any]) -> Mapping[str, Any]:
        check_json_depth(value, "consumer capabilities")
        return value

    def accepts_image_attachments(self) -> bool:
        """Whether this consumer declared it takes image attachments."""
        attachments = self.capabilities.get("attachments")
        return isinstance(attachments, Mapping) and attachments.get("image") is True


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
    """A validated binary attachment (an image) for a consumer that declared it takes one."""

    ref: ContextRef
    alias: str
    media_type: str
    data_base64: str
    bytes: int
    width: int | None = None
    height: int | None = None


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
    """Something the caller should know about a read (a failed source, a fallback)."""

    code: str
    message: str
    severity: Severity = Severity.WARNING
    binding_id: str | None = None
    ref: ContextRef | None = None


class CoverageReason(_Choice):
    """Codes the kernel puts in ``SourceCoverage.reasons`` (providers may add their own)."""

    NO_LEXICAL_PROVIDER = "no_lexical_provider"
    BINDING_EXCLUDED = "binding_excluded"
    SOURCE_UNAVAILABLE = "source_unavailable"
    SELECTION_DISABLED = "selection_disabled"
    QUERY_NOT_SEARCHABLE = "query_not_searchable"
    MATCHING_SET_NOT_COUNTED = "matching_set_not_counted"
    BOUNDED_ENUMERATION = "bounded_enumeration"
    PAGED_RESULT = "paged_result"
    SOURCE_KIND_EXCLUDED = "source_kind_excluded"
    STREAMING_SCAN_UNMEASURED = "streaming_scan_unmeasured"
    """The operation examined more than it returned, or cannot say how much it examined:
    ``considered`` is None rather than a count smaller than what was looked at."""


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
    reasons: tuple[str, ...] = ()
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

    def render(self) -> str:
        """The model's view: blocks, attachments and omissions with aliases, and coverage."""
        from taskctx.render import render_package

        return render_package(self)


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
