"""Exact readback: explicit-ref candidates and the reads of every candidate.

Every read of content goes through :class:`Readback`: direct entries are sliced in
memory, scoped refs go to the source's own scoped read or a registered ScopedRead,
whole items to ``async_read_exact``; a ``chars:S-E`` part the kernel slices itself from
a read of the whole item, for every source. Every read of an item the snapshot pinned at a
content version must report the version of the whole-item bytes it came from, scoped
reads included: a different version fails closed (``StaleReaderError``), a missing one
too (``UnverifiedReadError``), and no source may return more than the limit it was given.

Readback holds a :class:`ReadScope` (entries, bindings, host, a descriptor lookup), never
the TaskContext: a read goes down to the source and returns, it never calls back up.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import attrs

from taskctx.candidates import Candidate, candidate_of
from taskctx.claims import indexes_text
from taskctx.dispatch import ScopedReaders, batched, dispatch_read, dispatch_read_many, slice_part
from taskctx.errors import (
    NotFoundError,
    StaleReaderError,
    UnsupportedScopeError,
    UnverifiedReadError,
)
from taskctx.media import classify, guess_media_type
from taskctx.model import (
    DIRECT_BINDING,
    ContextRef,
    ExactRead,
    Representation,
    SourceDescriptor,
)
from taskctx.protocols import SupportsReadMany, scope_kind
from taskctx.sections import CHAR_SCOPE_KIND, parse_char_scope, parse_line_scope, slice_lines

if TYPE_CHECKING:
    from taskctx.entries import DirectEntry, SourceBinding

__all__ = [
    "READ_COST",
    "DescriptorLookup",
    "ReadReuse",
    "ReadScope",
    "Readback",
    "TextLoading",
]


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


ReuseKey = tuple[str, str, "str | None", str]
READ_COST = 1024
"""What a kept read counts beyond its text: its ExactRead, key and digests take about a
kilobyte, so 45,000 small records would hold 50 MB while counting 4 million characters."""


@attrs.define(slots=True)
class ReadReuse:
    """The whole texts an index sync read during one page read, kept for its delivery.

    A read kept here reported the pinned content version of its candidate, so delivering
    it (cut at the limit asked) proves the snapshot as a new read of that version would;
    it saves reading and hashing the item again. At most ``max_chars`` characters are
    kept, each read counting ``READ_COST`` more than its text (what a read holds stays
    bounded however large the sync, and however small its items); the rest is read again.
    """

    max_chars: int = 4_000_000
    chars: int = 0
    reads: dict[ReuseKey, ExactRead] = attrs.field(factory=dict)

    @staticmethod
    def _key(candidate: Candidate) -> ReuseKey | None:
        version = candidate.content_version
        if version is None:
            return None
        return (candidate.ref.binding, candidate.ref.path, candidate.ref.scope, version)

    def keep(self, candidate: Candidate, read: ExactRead) -> None:
        """Keep a whole text read of ``candidate`` at its pinned version, while room lasts."""
        key = self._key(candidate)
        if key is None or read.content_version != key[3] or read.text is None:
            return
        cost = len(read.text) + READ_COST
        if not read.complete or self.chars + cost > self.max_chars:
            return
        self.reads[key] = read
        self.chars += cost

    def holds(self, candidate: Candidate) -> bool:
        """Whether a read of ``candidate`` at its pinned version is kept."""
        key = self._key(candidate)
        return key is not None and key in self.reads

    def take(self, candidate: Candidate, limit: int | None) -> ExactRead | None:
        """The kept read of ``candidate`` cut at ``limit`` (as a source cuts it), or None."""
        key = self._key(candidate)
        read = self.reads.get(key) if key is not None else None
        if read is None or read.text is None:
            return None
        if limit is not None and len(read.text) > limit:
            return read.model_copy(update={"text": read.text[:limit], "complete": False})
        return read


@attrs.define(slots=True, frozen=True)
class Readback:
    """Reads the candidates of one task, within its :class:`ReadScope`.

    With ``reuse``, the texts its text loader reads for indexing are kept (bounded) and
    delivered from there instead of being read again within the same page read.
    """

    scope: ReadScope
    reuse: ReadReuse | None = None

    def is_text(self, candidate: Candidate) -> bool:
        """Whether a candidate's text may be indexed (:func:`indexes_text`)."""
        return indexes_text(candidate.ref.path, candidate.media_type, candidate.representation)

    async def read(self, candidate: Candidate, limit: int | None) -> ExactRead:
        """Bounded exact content of a candidate (direct, scoped or whole), proven to come
        from the pinned content version: a read of other bytes raises StaleReaderError."""
        kept = self.reuse.take(candidate, limit) if self.reuse is not None else None
        if kept is not None:
            read, served_by = kept, "the read made for indexing"
        else:
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
        binding = self._binding(ref)
        read, served_by = await dispatch_read(
            binding.source, self._pinned(candidate), candidate.media_type, limit, self.scope.host
        )
        return self._checked(candidate, read, served_by, limit), served_by

    async def read_many_reporting_version(
        self, candidates: Sequence[Candidate], limit: int | None
    ) -> list[ExactRead | Exception]:
        """:meth:`read_reporting_version` of many candidates of one binding, in order, each
        a read or the exception its read raised; a source offering ``async_read_exact_many``
        is read once for the lot (:func:`dispatch_read_many`)."""
        if not candidates:
            return []
        refs = [candidate.ref for candidate in candidates]
        if any(ref.binding != refs[0].binding for ref in refs):
            raise ValueError("read_many_reporting_version reads candidates of one binding")
        if refs[0].binding == DIRECT_BINDING:
            return [await self._answer(candidate, limit) for candidate in candidates]
        binding = self._binding(refs[0])
        pairs = [(self._pinned(c), c.media_type) for c in candidates]
        answers = await dispatch_read_many(binding.source, pairs, limit, self.scope.host)
        results: list[ExactRead | Exception] = []
        for candidate, (read, served_by) in zip(candidates, answers, strict=True):
            if isinstance(read, Exception):
                results.append(read)
                continue
            try:
                checked = self._checked(candidate, read, served_by, limit)
            except Exception as exc:
                results.append(exc)
                continue
            if self.reuse is not None and limit is None:
                self.reuse.keep(candidate, checked)
            results.append(checked)
        return results

    async def read_ahead(self, candidates: Sequence[Candidate], limit: int) -> None:
        """Read the pinned candidates of each binding whose source reads in batches in one
        batched read at ``limit``, keeping the whole texts for :meth:`read` (a warm page then
        costs one source call per binding, not one per block).

        Nothing is decided here: a read that failed, was cut or came from other bytes than
        the pinned version is not kept, and :meth:`read` reads that candidate again itself
        (and fails as it would have).
        """
        reuse = self.reuse
        if reuse is None:
            return
        groups: dict[str, list[Candidate]] = {}
        for candidate in candidates:
            ref = candidate.ref
            if candidate.content_version is None or reuse.holds(candidate):
                continue
            binding = self.scope.bindings.get(ref.binding)
            if binding is None or not isinstance(binding.source, SupportsReadMany):
                continue
            if batched(binding.source, ref):
                groups.setdefault(ref.binding, []).append(candidate)
        for group in groups.values():
            if len(group) < 2:  # no batch to save: the read itself reads it
                continue
            try:
                reads = await self.read_many_reporting_version(group, limit)
            except Exception:  # the reads themselves will fail, or not, as they would have
                continue
            for candidate, read in zip(group, reads, strict=True):
                if isinstance(read, ExactRead):
                    reuse.keep(candidate, read)

    async def _answer(self, candidate: Candidate, limit: int | None) -> ExactRead | Exception:
        try:
            return await self.read_reporting_version(candidate, limit)
        except Exception as exc:
            return exc

    def _binding(self, ref: ContextRef) -> SourceBinding:
        binding = self.scope.bindings.get(ref.binding)
        if binding is None:
            raise NotFoundError(
                f"{ref} names no attached binding {ref.binding!r} in task {self.scope.task_id!r}"
            )
        return binding

    @staticmethod
    def _pinned(candidate: Candidate) -> ContextRef:
        # the pinned version goes down so a source can refuse other bytes before slicing
        ref, version = candidate.ref, candidate.content_version
        if ref.version == version:
            return ref
        return ContextRef(binding=ref.binding, path=ref.path, scope=ref.scope, version=version)

    @staticmethod
    def _checked(
        candidate: Candidate, read: ExactRead, served_by: str, limit: int | None
    ) -> ExactRead:
        """``read`` checked against the candidate: its scope, a reported content version
        when one is pinned, and the limit (a longer text is cut)."""
        ref = candidate.ref
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
        return read

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
        if scope_kind(ref.scope) == CHAR_SCOPE_KIND:
            whole = self.read_direct(ref.with_scope(None), None)
            try:
                start, end = parse_char_scope(ref.scope)
            except ValueError as exc:
                raise UnsupportedScopeError(f"{ref}: {exc}") from None
            return slice_part(whole, ref.scope, start, end, limit)
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

    def text_loader(self, binding: SourceBinding) -> TextLoading:
        """Reads descriptors' whole text for a provider that indexes text (None if not
        text), with the content version of the bytes it came from; one by one or many at
        once (one batched source read)."""
        return TextLoading(self, binding)


@attrs.define(slots=True, frozen=True)
class TextLoading:
    """The text loader of one binding: ``await loader(descriptor)`` reads one descriptor,
    ``await loader.many(descriptors)`` many in one batched read (each answer a read, None
    for what is not text, or the exception its read raised). The index compares the
    version each read reports with the descriptor's before storing its text."""

    readback: Readback
    binding: SourceBinding

    async def __call__(self, descriptor: SourceDescriptor) -> ExactRead | None:
        """The descriptor's whole text (None: not text)."""
        candidate = candidate_of(self.binding, descriptor, None)
        if not self.readback.is_text(candidate):
            return None
        return await self.readback.read_reporting_version(candidate, None)

    async def many(
        self, descriptors: Sequence[SourceDescriptor]
    ) -> list[ExactRead | Exception | None]:
        """The whole text of each descriptor, in order (None: not text; an exception: what
        its read raised)."""
        # pinned refs: the batched read sends them down as they are, made once per item
        candidates = [candidate_of(self.binding, d, None, pinned=True) for d in descriptors]
        texts = [i for i, c in enumerate(candidates) if self.readback.is_text(c)]
        reads = await self.readback.read_many_reporting_version(
            [candidates[i] for i in texts], None
        )
        answers: list[ExactRead | Exception | None] = [None] * len(descriptors)
        for i, read in zip(texts, reads, strict=True):
            answers[i] = read
        return answers
