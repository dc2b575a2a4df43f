"""Every enum a program branches on, and the rule for the codes plugins add.

Two kinds live here. Closed value sets (``Representation``, ``Completeness``,
``OmissionReason``, ``Severity``, ``CoverageStatus``, ``Enumeration``,
``CoverageOutcome``) take only their members. Code families (``ProblemCode``,
``DiagnosticCode``, ``CoverageReason``) may be extended by plugins, by one rule: a kernel
code is a member of its enum (a string equal to a member's value is coerced to the
member), and any other code is a plugin's own, namespaced ``<namespace>:<name>``
(``records:row_too_large``); a bare code that is neither is refused with a ValueError
naming it and the rule. A code is what a program compares; the sentence a person reads
travels beside it (``Problem.message``, ``Diagnostic.message``,
:data:`taskctx.coverage.REASON_SENTENCES`).
"""

from __future__ import annotations

import re
from enum import Enum
from typing import Annotated, NewType

from pydantic import BeforeValidator

__all__ = [
    "NAMESPACED_CODE",
    "UNSUPPORTED_MEDIA_CODES",
    "Completeness",
    "CoverageOutcome",
    "CoverageReason",
    "CoverageReasonCode",
    "CoverageStatus",
    "DiagnosticCode",
    "DiagnosticCodeValue",
    "Enumeration",
    "NamespacedCode",
    "OmissionReason",
    "ProblemCode",
    "ProblemCodeValue",
    "Representation",
    "Severity",
    "StrChoice",
    "parse_code",
    "parse_coverage_reason",
    "parse_diagnostic_code",
    "parse_problem_code",
]


class StrChoice(str, Enum):
    """A string enum whose ``str()`` is its value (``partial``, not ``CoverageStatus.PARTIAL``)."""

    def __str__(self) -> str:
        return str(self.value)


class Representation(StrChoice):
    """How a block's content relates to the original bytes."""

    TEXT = "text"
    PARSED_TEXT = "parsed_text"
    LOSSY_DIGEST = "lossy_digest"
    REFERENCE_ONLY = "reference_only"


class Completeness(StrChoice):
    """Whether a block holds all of what its ref names."""

    COMPLETE = "complete"
    LOSSY = "lossy"
    REFERENCE_ONLY = "reference_only"
    PART = "part"
    """All of its ``chars:S-E`` ref, which is a part of a larger candidate: the stretch
    around what matched, where the candidate is larger than a page. ``full_ref`` names
    the candidate, ``chars_original`` its size."""


class OmissionReason(StrChoice):
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
    IMAGE_OVER_LIMITS = "image_over_limits"
    """An image the consumer's image policy cannot bring within its side and byte limits
    (or an animated image over them, which is never resized); ``detail`` says why."""
    IMAGE_UNSUPPORTED = "image_unsupported"
    """An image of a format the consumer's image policy refuses (a GIF under
    ``support_gif=False``)."""
    OVER_IMAGE_COUNT = "over_image_count"
    """An image past the first ``max_images`` of the package."""


class Severity(StrChoice):
    """How much a diagnostic matters to the caller."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


class CoverageStatus(StrChoice):
    """How much of a binding's declared scope a package holds."""

    COMPLETE = "complete"
    PARTIAL = "partial"
    UNKNOWN = "unknown"


class Enumeration(StrChoice):
    """How the candidates of a binding were found."""

    EXHAUSTIVE = "exhaustive"
    BOUNDED = "bounded"
    RANKED = "ranked"


class CoverageOutcome(StrChoice):
    """Searched with matches, searched with none, not searched, or unavailable."""

    MATCHED = "matched"
    NO_MATCH_IN_SCOPE = "no_match_in_scope"
    NOT_SEARCHED = "not_searched"
    UNAVAILABLE = "unavailable"


class ProblemCode(StrChoice):
    """Why an item is reference only, or why media cannot be delivered as what it claims.

    ``Problem.code`` and ``MediaError.code`` share it: a MediaError caught while
    describing an item becomes the item's Problem.
    """

    PARSE_FAILED = "parse_failed"
    """The bytes claim a format the parser cannot read (corrupt, truncated, garbage)."""
    TOO_LARGE = "too_large"
    """Parsing would go past a size, count or expansion limit."""
    TIMEOUT = "timeout"
    """Parsing took longer than its time limit (not cached: a later try may succeed)."""
    ENCRYPTED = "encrypted"
    """The document is encrypted or password protected."""
    NO_TEXT = "no_text"
    """The document parsed but holds no extractable text (a scanned PDF, say)."""
    INVALID_TEXT = "invalid_text"
    """Text-named bytes are not valid UTF-8."""
    INVALID_IMAGE = "invalid_image"
    """Image bytes fail validation (format, dimensions, what the source declared)."""
    INVALID_MEDIA = "invalid_media"
    """Content is not what it claims to be (the default of ``MediaError``)."""
    NOT_TEXT = "not_text"
    """A text operation met content that is not text."""
    NOT_A_DOCUMENT = "not_a_document"
    """A document operation met content no document parser claims."""
    HANDLER_MISSING = "handler_missing"
    """No installed FileIOHandler parses the document's media type."""
    SYMLINK = "symlink"
    """The item is a symbolic link, which is never followed."""
    SUBMODULE = "submodule"
    """The item is a submodule (a pointer to another repository), not content."""


UNSUPPORTED_MEDIA_CODES: frozenset[ProblemCode] = frozenset(
    {ProblemCode.HANDLER_MISSING, ProblemCode.ENCRYPTED, ProblemCode.PARSE_FAILED}
)
"""Problems that make a format undeliverable here: such an item is omitted
``unsupported_media``; any other problem omits it ``reference_only``."""


class DiagnosticCode(StrChoice):
    """What a diagnostic reports, besides the item problems it carries (``ProblemCode``)."""

    INDEX_DEGRADED = "index_degraded"
    """A fused index lost an optional member for this search."""
    REQUIRED_OVER_BUDGET = "required_over_budget"
    """Required originals were delivered whole past the budget (``required_overflow="deliver"``)."""
    SELECTOR_FAILED = "selector_failed"
    """The selector raised; the read fell back to rank order."""
    SELECTION_INVALID = "selection_invalid"
    """The selector answered with keys the host did not issue; rank order was used."""
    SOURCE_UNAVAILABLE = "source_unavailable"
    """A source could not answer; its coverage is unknown."""
    REPRESENTATION_MISMATCH = "representation_mismatch"
    """A descriptor or read claims a representation it cannot back."""
    UNSUPPORTED_SCOPE = "unsupported_scope"
    """No scoped reader serves the scope a required ref asks for."""
    NOT_FOUND = "not_found"
    """A required ref names no item."""
    READ_FAILED = "read_failed"
    """Reading an item failed."""
    READ_NOTES = "read_notes"
    """What the source or its parser noticed reading a delivered item (``ExactRead.notes``:
    a repaired PDF, a missing font); the item was delivered."""


class CoverageReason(StrChoice):
    """Why a binding's coverage numbers are what they are (``SourceCoverage.reasons``).

    Sources (``DescriptorPage.reasons``) and index providers (``SearchResult.reasons``)
    use these members, or codes of their own namespaced ``<namespace>:<name>``.
    """

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
    INDEX_REBUILT = "index_rebuilt"
    """The index provider found its index damaged and rebuilt it during this search:
    matches are unknown (``considered`` is None) until the source is indexed again."""


NamespacedCode = NewType("NamespacedCode", str)
"""A plugin's own code, ``<namespace>:<name>`` (see :data:`NAMESPACED_CODE`)."""

NAMESPACED_CODE = re.compile(r"[a-z][a-z0-9_.-]*:[a-z][a-z0-9_]*")
"""The rule for a code that is not a kernel member: a namespace (the plugin's name, its
entry-point name or source kind: lower case letters, digits, ``_``, ``.`` or ``-``), a
colon, and a snake_case name. Nothing else, so a code never carries prose or markup."""


def parse_code(value: object, *families: type[StrChoice]) -> StrChoice | str:
    """``value`` as a member of the first of ``families`` that has it, or as a namespaced
    plugin code; a ValueError names a bad code and the rule."""
    name = families[0].__name__
    if isinstance(value, families):
        return value
    if not isinstance(value, str):
        raise ValueError(f"a {name} must be a string, got {type(value).__name__}")
    for family in families:
        try:
            return family(value)
        except ValueError:
            continue
    if NAMESPACED_CODE.fullmatch(value):
        return value
    raise ValueError(
        f"unknown {name} {value!r}: a code that is not a kernel member must be "
        "namespaced '<namespace>:<name>' (e.g. 'records:row_too_large')"
    )


def parse_problem_code(value: object) -> ProblemCode | NamespacedCode:
    """A ``ProblemCode`` member or a namespaced plugin code (ValueError otherwise)."""
    code = parse_code(value, ProblemCode)
    return code if isinstance(code, ProblemCode) else NamespacedCode(code)


def parse_diagnostic_code(value: object) -> DiagnosticCode | ProblemCode | NamespacedCode:
    """A ``DiagnosticCode`` or ``ProblemCode`` member (a diagnostic may report an item's
    problem), or a namespaced plugin code (ValueError otherwise)."""
    code = parse_code(value, DiagnosticCode, ProblemCode)
    if isinstance(code, (DiagnosticCode, ProblemCode)):
        return code
    return NamespacedCode(code)


def parse_coverage_reason(value: object) -> CoverageReason | NamespacedCode:
    """A ``CoverageReason`` member or a namespaced plugin code (ValueError otherwise)."""
    code = parse_code(value, CoverageReason)
    return code if isinstance(code, CoverageReason) else NamespacedCode(code)


ProblemCodeValue = Annotated[ProblemCode | NamespacedCode, BeforeValidator(parse_problem_code)]
"""Field type of a problem code: kernel strings coerce to members, others must be namespaced."""

DiagnosticCodeValue = Annotated[
    DiagnosticCode | ProblemCode | NamespacedCode, BeforeValidator(parse_diagnostic_code)
]
"""Field type of a diagnostic code (a diagnostic code, or the problem code it reports)."""

CoverageReasonCode = Annotated[
    CoverageReason | NamespacedCode, BeforeValidator(parse_coverage_reason)
]
"""Field type of a coverage reason: a ``CoverageReason`` member or a namespaced code."""
