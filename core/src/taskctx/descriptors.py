"""What sources hand the kernel: descriptors, pages of them, problems and exact reads."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field, field_validator, model_validator

from taskctx.codes import (
    CoverageReasonCode,
    Enumeration,
    ProblemCodeValue,
    Representation,
)
from taskctx.digests import sha256_digest
from taskctx.frozen import FrozenModel
from taskctx.jsonsafe import check_json_depth

__all__ = [
    "DescriptorPage",
    "EnumerationRequest",
    "ExactRead",
    "Problem",
    "SectionInfo",
    "SourceDescriptor",
    "check_texts",
]


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
    """Why an item is reference only: a code programs branch on and a message naming
    the cause. ``code`` is a :class:`ProblemCode` (a string equal to a member's value is
    coerced to it) or a plugin's own code namespaced ``<namespace>:<name>``."""

    code: ProblemCodeValue
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


def check_texts(
    texts: tuple[str | None, ...] | None, descriptors: tuple[SourceDescriptor, ...], owner: str
) -> None:
    """Refuse ``texts`` that are not one per descriptor."""
    if texts is not None and len(texts) != len(descriptors):
        raise ValueError(
            f"{owner}.texts holds {len(texts)} texts for {len(descriptors)} descriptors: "
            "give one per descriptor (None for one the sync should read)"
        )


class DescriptorPage(FrozenModel):
    """A page of descriptors, the source revision it was taken at, and the next cursor."""

    descriptors: tuple[SourceDescriptor, ...]
    revision: str
    next_cursor: str | None = None
    total: int | None = None
    enumeration: Enumeration = Enumeration.EXHAUSTIVE
    reasons: tuple[CoverageReasonCode, ...] = ()
    texts: tuple[str | None, ...] | None = None
    """The whole text of each descriptor, in order, when the source made it while
    enumerating (a record store renders its records to list them): exactly what a read
    of the descriptor's ref would return as text, from the bytes of its content version.
    An index sync indexes these instead of reading the items again; None (for the page,
    or for one descriptor) means the sync reads it."""

    @model_validator(mode="after")
    def _one_text_per_descriptor(self) -> DescriptorPage:
        check_texts(self.texts, self.descriptors, "DescriptorPage")
        return self


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
    notes: tuple[str, ...] = ()
    """What the source or its parser noticed while reading (a repaired cross-reference
    table, a font it could not decode): a delivered block's notes become one ``read_notes``
    diagnostic of the package."""

    @classmethod
    def from_bytes(cls, path: str, data: bytes, **fields: Any) -> ExactRead:
        """A read of bytes that never enter as text (reference only unless ``fields`` say
        otherwise), with the digest of the bytes."""
        fields.setdefault("representation", Representation.REFERENCE_ONLY)
        return cls(path=path, data=data, digest=sha256_digest(data), **fields)

    @classmethod
    def from_text(
        cls,
        path: str,
        text: str,
        limit: int | None,
        *,
        scope: str | None = None,
        digest: str | None = None,
        **fields: Any,
    ) -> ExactRead:
        """A read of ``text`` cut at ``limit`` characters, with the digest of all of it.

        ``digest`` is that digest when the caller already made it (the sha256 of bytes
        that are exactly ``text`` in UTF-8), so one read hashes its bytes once.
        """
        cut = text if limit is None else text[:limit]
        return cls(
            path=path,
            scope=scope,
            text=cut,
            digest=digest if digest is not None else sha256_digest(text),
            chars_total=len(text),
            complete=len(cut) == len(text),
            **fields,
        )
