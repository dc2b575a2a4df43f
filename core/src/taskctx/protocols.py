"""The five extension points and the values exchanged through them.

Sources do I/O and are async; a FileIOHandler parses bytes it is handed; index
partitions are local and synchronous; selectors may call a model and are async.
"""

from __future__ import annotations

import functools
import inspect
import sys
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, NamedTuple, Protocol, TypeAlias, runtime_checkable

from pydantic import Field, model_validator

from taskctx.codes import CoverageReason, CoverageReasonCode
from taskctx.descriptors import check_texts
from taskctx.model import (
    ContextBudget,
    ContextFilters,
    ContextRef,
    DescriptorPage,
    EnumerationRequest,
    ExactRead,
    FrozenModel,
    Representation,
    SectionInfo,
    SourceDescriptor,
)

__all__ = [
    "ChangeSet",
    "ContextSource",
    "FileIOHandler",
    "IndexDocument",
    "IndexPartition",
    "IndexProvider",
    "ParsedDocument",
    "PartitionKey",
    "ProtocolMember",
    "RequestFilter",
    "ScopedRead",
    "SearchHit",
    "SearchResult",
    "SelectionCandidate",
    "SelectionRequest",
    "Selector",
    "SourceFactory",
    "SupportsChanges",
    "SupportsReadMany",
    "SupportsRebuild",
    "missing_members",
    "protocol_members",
    "protocol_shape",
]


class ChangeSet(FrozenModel):
    """What changed in a source between two revisions (from a change journal or stamps)."""

    since: str
    revision: str
    upserts: tuple[SourceDescriptor, ...] = ()
    deletes: tuple[tuple[str, str | None], ...] = ()
    texts: tuple[str | None, ...] | None = None
    """The whole text of each upsert, in order, as :attr:`DescriptorPage.texts` gives
    them for a page (None: the sync reads it)."""

    @model_validator(mode="after")
    def _one_text_per_upsert(self) -> ChangeSet:
        check_texts(self.texts, self.upserts, "ChangeSet")
        return self


@runtime_checkable
class ContextSource(Protocol):
    """A source of context items: structure by enumeration, content by exact read.

    A source never judges relevance across sources; ranking is the kernel's job.
    ``async_read_exact`` raises ``NotFoundError`` for an unknown ref and never returns
    more than ``limit`` characters of text.

    Every read reports ``content_version``: the version of the whole-item bytes the
    content came from (a scoped read too: the version of the item it sliced). The kernel
    puts the version it pinned in ``ref.version``; a source serves that version (if it
    keeps history), reports the version it really read, or raises ``StaleReaderError``
    early. It never echoes ``ref.version`` back for other bytes. A read whose version
    differs from the pinned one fails closed (``StaleReaderError``), one with none too
    (``UnverifiedReadError``).
    """

    kind: str

    async def async_revision(self) -> str:
        """A cheap revision stamp of everything the source can show (no full rescan)."""
        ...

    async def async_enumerate_descriptors(self, request: EnumerationRequest) -> DescriptorPage:
        """One page of descriptors; every page carries the revision it was taken at."""
        ...

    async def async_read_exact(self, ref: ContextRef, limit: int | None = None) -> ExactRead:
        """Bounded canonical content of ``ref`` with the digest of the whole content and
        the ``content_version`` of the bytes it came from (``ref.version`` is the pin)."""
        ...


SourceFactory: TypeAlias = Callable[..., ContextSource]
"""What ``register_source_kinds`` registers under a kind: ``factory(**options)`` returns
a new ContextSource (a class satisfying the protocol is one)."""


@runtime_checkable
class SupportsChanges(Protocol):
    """Optional: a source that can say what changed since a revision without a rescan."""

    async def async_changes(self, since: str) -> ChangeSet | None:
        """Descriptors changed since ``since``, or None when the source cannot tell."""
        ...


@runtime_checkable
class SupportsReadMany(Protocol):
    """Optional: a source that reads many refs in one call (one query, one file read).

    ``async_read_exact_many(refs, limit)`` returns one entry per ref, in the order given:
    what the source's own read of that ref returns (``async_read_scoped`` for a scoped
    ref when the source has it, else ``async_read_exact``), or the exception that read
    would raise (``NotFoundError``, ``StaleReaderError``...), never raising it for one
    ref. Every rule of a single read holds for each entry: the pin in ``ref.version``,
    ``content_version``, ``limit``. The kernel reads one by one from sources without it;
    the conformance kit checks that both ways give the same answers.
    """

    async def async_read_exact_many(
        self, refs: Sequence[ContextRef], limit: int | None = None
    ) -> Sequence[ExactRead | Exception]:
        """One read (or the exception it raises) per ref, in the order of ``refs``."""
        ...


@runtime_checkable
class SupportsRebuild(Protocol):
    """Optional: a source that can say how to make it again, for ``TaskContext.restore``.

    ``rebuild_options()`` returns the JSON-safe keyword options that
    ``host.source(source.kind, **options)`` takes to make an equivalent source (same
    ``identity``, same items at the same revisions), or None when this instance cannot be
    made again from options (it wraps an object that lives only in this process). A
    source without the method, or answering None, is exported as not rebuildable and
    fails the restore with an error naming its binding id and kind.
    """

    def rebuild_options(self) -> Mapping[str, Any] | None:
        """Factory options that make this source again, or None."""
        ...


@runtime_checkable
class ScopedRead(Protocol):
    """Locates a deterministic bounded range inside an already-selected, authorized ref.

    ``scope_kinds`` lists the scope prefixes it serves (``lines``, ``page``, ``sheet``...);
    ``media_types`` the media types (empty: any text type). The read it returns reports
    the ``content_version`` of the whole item it sliced (the one its read of the item
    reported), so the kernel can prove it is the pinned one; without it the read fails.
    A source's own ``async_read_scoped(ref, limit)`` keeps the same rule.
    """

    @property
    def name(self) -> str:
        """Unique reader name."""
        ...

    @property
    def scope_kinds(self) -> tuple[str, ...]:
        """Scope prefixes served (``lines``, ``page``, ...)."""
        ...

    @property
    def media_types(self) -> tuple[str, ...]:
        """Media types served; empty means any text type."""
        ...

    async def async_read_scoped(
        self, source: ContextSource, ref: ContextRef, limit: int | None
    ) -> ExactRead:
        """Read ``ref.scope`` of ``ref`` from ``source`` (pass ``ref.version`` on to the
        source's read); report the content version of the whole item it sliced."""
        ...


class ParsedDocument(FrozenModel):
    """Text parsed from a document's bytes, with its sections as scoped refs."""

    text: str
    media_type: str
    sections: tuple[SectionInfo, ...] = ()
    representation: Representation = Representation.PARSED_TEXT
    metadata: Mapping[str, Any] = Field(default_factory=dict)


@runtime_checkable
class FileIOHandler(Protocol):
    """Parses the bytes of a document format into text with sections."""

    @property
    def name(self) -> str:
        """Unique handler name."""
        ...

    @property
    def suffixes(self) -> tuple[str, ...]:
        """File suffixes handled, without the dot (``pdf``, ``docx``)."""
        ...

    @property
    def media_types(self) -> tuple[str, ...]:
        """Media types handled."""
        ...

    def parse(self, data: bytes, path: str) -> ParsedDocument:
        """Parse ``data``; raise ``MediaError`` with a ``code`` for bad input.

        Codes: ``encrypted``, ``parse_failed`` (malformed; the message names the error),
        ``no_text`` (nothing extractable), ``too_large`` and ``timeout`` (limits). A
        handler may expose ``version: str``; callers key their parse caches on it.
        """
        ...


class PartitionKey(FrozenModel):
    """Identity of an index partition: binding, source identity, profile and provider."""

    binding_id: str
    source_identity: str
    profile: str = "default"
    provider: str
    provider_version: str = "1"

    def slug(self) -> str:
        """A filesystem-safe, stable name for this key."""
        import hashlib

        digest = hashlib.sha256(self.model_dump_json().encode()).hexdigest()[:24]
        return f"{self.provider}-{digest}"


class IndexDocument(FrozenModel):
    """One indexable unit: a descriptor with (for text-needing providers) its text."""

    doc_id: str
    path: str
    scope: str | None = None
    title: str | None = None
    text: str | None = None
    content_version: str
    media_type: str = "text/plain"
    metadata: Mapping[str, Any] = Field(default_factory=dict)


class SearchHit(FrozenModel):
    """A matching document and its score (higher is better)."""

    doc_id: str
    score: float


class SearchResult(FrozenModel):
    """Ranked hits, how many matched, and whether the query could be searched at all.

    ``reasons`` are coverage codes (``CoverageReason`` members or namespaced
    ``<namespace>:<name>`` codes); ``warnings`` are
    messages the reader turns into diagnostics (a fused provider that lost a member).
    """

    hits: tuple[SearchHit, ...]
    considered: int | None
    searchable: bool = True
    reasons: tuple[CoverageReasonCode, ...] = ()
    warnings: tuple[str, ...] = ()

    @classmethod
    def not_searchable(cls) -> SearchResult:
        """The answer to a query without a searchable term: not searched at all, which is
        not zero matches (coverage says ``query_not_searchable``)."""
        return cls(
            hits=(),
            considered=None,
            searchable=False,
            reasons=(CoverageReason.QUERY_NOT_SEARCHABLE,),
        )

    @classmethod
    def no_matches(cls) -> SearchResult:
        """Searched, and nothing matched (an empty partition or an empty restriction)."""
        return cls(hits=(), considered=0)


@runtime_checkable
class IndexPartition(Protocol):
    """An open partition of one provider for one binding and profile."""

    def indexed_versions(self) -> Mapping[str, str]:
        """doc_id -> content version of what the partition holds (for incremental sync)."""
        ...

    def apply(self, upserts: Sequence[IndexDocument], deletes: Sequence[str]) -> None:
        """Insert or replace ``upserts`` and remove ``deletes`` (doc ids), atomically.

        One sync may call it several times: the kernel hands documents over in chunks
        of bounded text (``taskctx.indexfeed.ApplyBound``), the deletes with the first
        call. Each call must be whole on its own; what earlier calls applied stays when
        a later one fails or the sync stops, and ``indexed_versions()`` tells the next
        sync what is held.
        """
        ...

    def search(self, query: str, doc_ids: Sequence[str] | None, limit: int | None) -> SearchResult:
        """Rank documents for ``query``, restricted to ``doc_ids`` when given."""
        ...

    def stats(self) -> Mapping[str, Any]:
        """Size facts: documents, bytes on disk, last apply."""
        ...

    def close(self) -> None:
        """Release files and connections."""
        ...

    # Optional: ``generation() -> str`` that moves whenever anyone (another context or
    # process) applies to the partition, or it is rebuilt; the kernel then re-diffs
    # before trusting it. Persistent partitions shared by several contexts should have it.


@runtime_checkable
class IndexProvider(Protocol):
    """An index backend: structural, lexical or vector."""

    @property
    def name(self) -> str:
        """Unique provider name (``structural``, ``fts``, ...)."""
        ...

    @property
    def kind(self) -> Literal["structural", "lexical", "vector", "hybrid"]:
        """What the provider does; the first ``lexical`` one is a TaskContext's default."""
        ...

    @property
    def needs_text(self) -> bool:
        """Whether ``apply`` needs each document's text (structural providers do not)."""
        ...

    def open_partition(self, key: PartitionKey, directory: Path | None) -> IndexPartition:
        """Open (or create) the partition for ``key``, persisted under ``directory``."""
        ...


class SelectionCandidate(FrozenModel):
    """What a selector sees of one optional candidate: a host-issued key and a preview."""

    key: str
    title: str | None = None
    preview: str
    chars: int
    role: str
    binding_id: str


class SelectionRequest(FrozenModel):
    """The question put to a selector."""

    query: str
    consumer: str
    phase: str | None = None
    candidates: tuple[SelectionCandidate, ...]
    budget: ContextBudget
    filters: ContextFilters = Field(default_factory=ContextFilters)


@runtime_checkable
class Selector(Protocol):
    """Chooses among optional candidates by host-issued keys; the host validates them."""

    @property
    def name(self) -> str:
        """Unique selector name."""
        ...

    async def async_select(self, request: SelectionRequest) -> Sequence[str]:
        """Return the keys of the chosen candidates, best first."""
        ...


@runtime_checkable
class RequestFilter(Protocol):
    """Changes one model request before it is sent, never the stored history.

    The kernel only registers filters; the request and context types belong to the
    distribution that builds requests (``taskctx-conversation``), which calls
    ``async_apply`` in ascending ``order``. An ``automatic`` filter runs in every
    pipeline unless the pipeline turns it off or composes its own instance by ``name``.
    """

    @property
    def name(self) -> str:
        """Unique filter name; a filter composed explicitly replaces the automatic one."""
        ...

    @property
    def order(self) -> int:
        """Where the filter runs: lower first."""
        ...

    @property
    def automatic(self) -> bool:
        """Whether pipelines run it when nobody composed it (the defaults are on)."""
        ...

    async def async_apply(self, request: Any, context: Any) -> Any:
        """Return the request with this filter's changes (a new value, never a mutation)."""
        ...


def scope_kind(scope: str) -> str:
    """The prefix of a scope string (``lines`` of ``lines:10-40``)."""
    return scope.split(":", 1)[0]


class ProtocolMember(NamedTuple):
    """One member a protocol declares: its name, what it is and (for a property or an
    annotated attribute) the type it gives."""

    name: str
    kind: Literal["attribute", "property", "method"]
    returns: Any = None


def _protocol_bases(protocol: type) -> list[type]:
    if not getattr(protocol, "_is_protocol", False) or protocol is Protocol:
        raise TypeError(f"{protocol!r} is not a typing.Protocol class")
    return [
        base
        for base in reversed(protocol.__mro__)
        if base is not Protocol and getattr(base, "_is_protocol", False)
    ]


@functools.cache
def protocol_shape(protocol: type) -> tuple[ProtocolMember, ...]:
    """The public members ``protocol`` declares (its protocol bases' first), in order.

    A check derived from this (host registration, ``TaskContext.attach``) follows the
    protocol: a member added to it is checked everywhere. Annotations are resolved in
    the protocol's module, so a property's ``returns`` is a real type.
    """
    members: dict[str, ProtocolMember] = {}
    for base in _protocol_bases(protocol):
        module = vars(sys.modules[base.__module__])
        hints = typing.get_type_hints(base, globalns=module)
        own = inspect.get_annotations(base)
        for name in (*own, *vars(base)):
            if name.startswith("_") or name in members:
                continue
            value = vars(base).get(name)
            if isinstance(value, property) and value.fget is not None:
                returns = typing.get_type_hints(value.fget, globalns=module).get("return")
                members[name] = ProtocolMember(name, "property", returns)
            elif callable(value):
                members[name] = ProtocolMember(name, "method")
            else:
                members[name] = ProtocolMember(name, "attribute", hints.get(name))
    return tuple(members.values())


def protocol_members(protocol: type) -> tuple[str, ...]:
    """The names of the public members ``protocol`` declares, in declaration order
    (``typing.get_protocol_members``, ordered, on every supported Python)."""
    return tuple(member.name for member in protocol_shape(protocol))


def missing_members(obj: object, protocol: type) -> tuple[str, ...]:
    """The members of ``protocol`` that ``obj`` does not have, in declaration order."""
    return tuple(name for name in protocol_members(protocol) if not hasattr(obj, name))
