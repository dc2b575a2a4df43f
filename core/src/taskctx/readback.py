"""Exact readback: explicit-ref candidates and the reads of every candidate.

Every read of content goes through :class:`Readback`: direct entries are sliced in
memory, scoped refs go to the source's own scoped read or a registered ScopedRead,
whole items to ``async_read_exact``. Every read of an item the snapshot pinned at a
content version must report the version of the whole-item bytes it came from, scoped
reads included: a different version fails closed (``StaleReaderError``), a missing one
too (``UnverifiedReadError``), and no source may return more than the limit it was given.

Readback holds a :class:`ReadScope` (entries, bindings, host, a descriptor lookup), never
the TaskContext: a read goes down to the source and returns, it never calls back up.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Protocol

import attrs

from taskctx.candidates import Candidate, candidate_of
from taskctx.claims import PARSEABLE
from taskctx.errors import (
    NotFoundError,
    StaleReaderError,
    UnsupportedScopeError,
    UnverifiedReadError,
)
from taskctx.media import MediaClass, classify, guess_media_type
from taskctx.model import (
    DIRECT_BINDING,
    ContextRef,
    ExactRead,
    Representation,
    SourceDescriptor,
)
from taskctx.protocols import ContextSource, ScopedRead, scope_kind
from taskctx.sections import parse_line_scope, slice_lines

if TYPE_CHECKING:
    from taskctx.entries import DirectEntry, SourceBinding
    from taskctx.index import TextLoader

__all__ = ["DescriptorLookup", "ReadScope", "Readback", "ScopedReaders", "dispatch_read"]


class ScopedReaders(Protocol):
    """Who serves a scope kind for a media type (``PluginHost`` is one)."""

    def scoped_reader_for(self, scope_kind: str, media_type: str | None) -> ScopedRead | None:
        """The registered ScopedRead for ``scope_kind`` and ``media_type``, if any."""
        ...


DescriptorLookup = Callable[[str, str, "str | None"], "SourceDescriptor | None"]
"""``(binding_id, path, scope)`` -> the synced descriptor of that item (or of the whole
item when the scope has none of its own), or None when the index has not seen it."""


@attrs.define(slots=True, frozen=True)
class ReadScope:
    """What readback may see of a task: its entries, bindings, host and synced descriptors.

    Built by ``TaskContext.read_scope()``; the mappings are the context's read-only views.
    """

    task_id: str
    entries: Mapping[str, DirectEntry]
    bindings: Mapping[str, SourceBinding]
    host: ScopedReaders
    descriptor: DescriptorLookup


async def dispatch_read(
    source: ContextSource,
    ref: ContextRef,
    media_type: str | None,
    limit: int | None,
    host: ScopedReaders,
) -> tuple[ExactRead, str]:
    """The one dispatch of a read to whoever serves it, and who that was.

    A whole item goes to ``async_read_exact``; a scoped ref to the source's own
    ``async_read_scoped``, else to the ScopedRead ``host`` registers for the scope kind
    and ``media_type``, else to ``async_read_exact``. ``ref.version`` is passed on as
    given (the pin). Nothing is checked here: the kernel's readback checks the read, and
    the source conformance kit checks the source through this same path.
    """
    if ref.scope is None:
        return await source.async_read_exact(ref, limit), _served(source, "async_read_exact")
    own_scoped = getattr(source, "async_read_scoped", None)
    if own_scoped is not None:
        read: ExactRead = await own_scoped(ref, limit)
        return read, _served(source, "async_read_scoped")
    reader = host.scoped_reader_for(scope_kind(ref.scope), media_type)
    if reader is not None:
        served_by = f"scoped reader {reader.name!r} over source {source.kind!r}"
        return await reader.async_read_scoped(source, ref, limit), served_by
    return await source.async_read_exact(ref, limit), _served(source, "async_read_exact")


def _served(source: ContextSource, method: str) -> str:
    return f"source {source.kind!r} ({method})"


@attrs.define(slots=True, frozen=True)
class Readback:
    """Reads the candidates of one task, within its :class:`ReadScope`."""

    scope: ReadScope

    def is_text(self, candidate: Candidate) -> bool:
        """Whether a candidate's text may be indexed: text media (reference-only text
        included, for search), or parsed text of a document, never of an image."""
        media = classify(candidate.ref.path, candidate.media_type).media_class
        if candidate.representation is Representation.PARSED_TEXT:
            return media in PARSEABLE
        return media is MediaClass.TEXT

    async def read(self, candidate: Candidate, limit: int | None) -> ExactRead:
        """Bounded exact content of a candidate (direct, scoped or whole), proven to come
        from the pinned content version: a read of other bytes raises StaleReaderError."""
        read, served_by = await self._route(candidate, limit)
        if (
            candidate.content_version is not None
            and read.content_version != candidate.content_version
        ):
            raise StaleReaderError(
                f"{candidate.ref} changed since the snapshot: {served_by} read content version "
                f"{read.content_version!r}, the snapshot pinned {candidate.content_version!r}"
            )
        return read

    async def read_reporting_version(self, candidate: Candidate, limit: int | None) -> ExactRead:
        """Like :meth:`read`, but a read of another version than the pinned one is returned,
        not refused: the index stores text only under the version it was made from."""
        read, _ = await self._route(candidate, limit)
        return read

    async def _route(self, candidate: Candidate, limit: int | None) -> tuple[ExactRead, str]:
        """The read of a candidate and who served it; a read of an item pinned at a content
        version must report the version of the whole-item bytes it came from."""
        ref = candidate.ref
        if ref.binding == DIRECT_BINDING:
            return self.read_direct(ref, limit), "the direct entry"
        binding = self.scope.bindings.get(ref.binding)
        if binding is None:
            raise NotFoundError(
                f"{ref} names no attached binding {ref.binding!r} in task {self.scope.task_id!r}"
            )
        # the pinned version goes down so a source can refuse other bytes before slicing
        pinned = ref.model_copy(update={"version": candidate.content_version})
        read, served_by = await dispatch_read(
            binding.source, pinned, candidate.media_type, limit, self.scope.host
        )
        if ref.scope is not None and read.scope != ref.scope:
            raise UnsupportedScopeError(
                f"nothing serves scope {ref.scope!r} of {ref.with_scope(None)}: no scoped reader "
                f"for {scope_kind(ref.scope)!r} on {candidate.media_type} and the source "
                f"returned scope {read.scope!r}"
            )
        if candidate.content_version is not None and read.content_version is None:
            raise UnverifiedReadError(
                f"{ref}: {served_by} reported no content version, so nothing proves the read "
                f"came from the pinned version {candidate.content_version!r}; every read, "
                "scoped ones included, must report the content version of the whole-item "
                "bytes it read"
            )
        if limit is not None and read.text is not None and len(read.text) > limit:
            read = read.model_copy(update={"text": read.text[:limit], "complete": False})
        return read, served_by

    def read_direct(self, ref: ContextRef, limit: int | None) -> ExactRead:
        """A direct entry, whole or by line scope."""
        entry = self.scope.entries.get(ref.path)
        if entry is None:
            raise NotFoundError(f"no direct entry {ref.path!r}")
        fields = {"media_type": entry.media_type, "content_version": entry.digest}
        if entry.text is None:
            return ExactRead(path=ref.path, data=entry.data, digest=entry.digest, **fields)
        if ref.scope is None:
            return ExactRead.from_text(
                ref.path, entry.text, limit, sections=entry.sections, **fields
            )
        first, last = parse_line_scope(ref.scope)
        text = slice_lines(entry.text, first, last)
        return ExactRead.from_text(ref.path, text, limit, scope=ref.scope, **fields)

    def explicit(self, ref: ContextRef) -> Candidate:
        """The required candidate of an explicitly requested ref (it may not exist)."""
        if ref.binding == DIRECT_BINDING:
            entry = self.scope.entries.get(ref.path)
            return Candidate(
                ref=ref.unversioned(),
                binding_id=DIRECT_BINDING,
                source_kind="direct",
                role=entry.role if entry else "information",
                required=True,
                media_type=entry.media_type if entry else "text/plain",
                representation=Representation.TEXT,
                chars=None,
                explicit=True,
                sections=entry.sections if entry else (),
            )
        binding = self.scope.bindings.get(ref.binding)
        if binding is None:
            return Candidate(
                ref=ref,
                binding_id=ref.binding,
                source_kind="unknown",
                role="information",
                required=True,
                media_type="text/plain",
                representation=Representation.TEXT,
                chars=None,
                explicit=True,
            )
        descriptor = self.scope.descriptor(binding.binding_id, ref.path, ref.scope)
        if descriptor is None:
            return Candidate(
                ref=ref.unversioned(),
                binding_id=binding.binding_id,
                source_kind=binding.kind,
                role=binding.role,
                required=True,
                media_type=classify(ref.path, guess_media_type(ref.path)).media_type,
                representation=Representation.TEXT,
                chars=None,
                explicit=True,
            )
        found = candidate_of(binding, descriptor, None, required=True, explicit=True)
        return attrs.evolve(found, ref=ref.unversioned(), chars=None)

    def text_loader(self, binding: SourceBinding) -> TextLoader:
        """Reads a descriptor's whole text for a provider that indexes text (None if not
        text), with the content version of the bytes it came from."""

        async def load_text(descriptor: SourceDescriptor) -> ExactRead | None:
            candidate = candidate_of(binding, descriptor, None)
            if not self.is_text(candidate):
                return None
            # the index compares the version read with the descriptor's before storing
            return await self.read_reporting_version(candidate, None)

        return load_text
