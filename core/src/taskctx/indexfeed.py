"""The index feed: changed descriptors read and handed to a partition in bounded chunks.

A sync reads what it indexes in batches of about ``READ_BATCH`` descriptors and turns
each read into an ``IndexDocument``; documents go to the partition in chunks of at most
``ApplyBound.chars`` characters of text and ``ApplyBound.documents`` documents, one
``apply`` call (one provider transaction) per chunk. A chunk's texts are released once
it is applied, so a first sync of a large corpus holds one chunk of texts at a time, not
the corpus.

A source that made its items' texts while enumerating hands them over with the
descriptors (``DescriptorPage.texts``, ``ChangeSet.texts``): the sync keeps them, within
``SOURCE_TEXT_CHARS``, in :class:`SourceTexts` and indexes them without reading those
items again. When the room runs out during an enumeration, the sync indexes what it
holds and keeps on (``taskctx.index``), so no handed text is read again however large
the source.

Text is handed over only under the content version of the bytes it was read from: a
read that reports another version is left out and its descriptor returned, so the sync
stops (``taskctx.index``). What was applied before stays: each chunk is whole on its own,
and ``indexed_versions()`` says what the partition holds for the next sync.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from typing import Protocol, runtime_checkable

import attrs

from taskctx.claims import indexes_text
from taskctx.errors import StaleReaderError
from taskctx.frozen import Packer
from taskctx.model import ExactRead, SourceDescriptor
from taskctx.partition import DescriptorKey, PackedDescriptor, doc_id_of, unpack
from taskctx.protocols import IndexDocument, IndexPartition

__all__ = [
    "APPLY_CHARS",
    "APPLY_DOCUMENTS",
    "DEFAULT_BOUND",
    "READ_BATCH",
    "SOURCE_TEXT_CHARS",
    "TEXT_ENTRY_CHARS",
    "ApplyBound",
    "BatchTextLoader",
    "DocumentChunks",
    "EarlyFeed",
    "Progress",
    "SourceTexts",
    "TextLoader",
    "chunked",
    "feed",
]

TextLoader = Callable[[SourceDescriptor], Awaitable[ExactRead | None]]
"""Reads a descriptor's whole text for a provider that indexes text (None: not text).

The read reports the content version of the bytes it came from (or raises
StaleReaderError when the source refuses the pinned version); the index stores its text
only when that is the descriptor's version."""
READ_BATCH = 256
"""How many documents a sync reads for indexing in one batched read (the descriptors of
one item are never split across batches, so a file is read once for all its sections)."""
APPLY_CHARS = 16_000_000
"""Characters of text one ``apply`` call is handed at most (unless one document alone
holds more): what a sync holds in texts at once, before the provider's own copies."""
APPLY_DOCUMENTS = 10_000
"""Documents one ``apply`` call is handed at most (many small records hold little text
but each document costs about a kilobyte of objects)."""
SOURCE_TEXT_CHARS = 16_000_000
"""Characters of the texts a source handed with its descriptors that one sync holds at
once (each text counting ``TEXT_ENTRY_CHARS`` more): some tens of MB; when they are
reached, the sync indexes them before it keeps more."""
TEXT_ENTRY_CHARS = 256
"""What a kept text counts beyond its characters (its key, version and objects)."""
Progress = Callable[[int, int], None]
"""Called with (documents prepared, documents to prepare) while a sync indexes."""


@runtime_checkable
class BatchTextLoader(Protocol):
    """A TextLoader that also reads many descriptors at once (``Readback.text_loader``).

    ``many`` answers each descriptor in order: its read, None (not text) or the exception
    its read raised. A sync reads in batches through it; a plain TextLoader one by one.
    """

    async def __call__(self, descriptor: SourceDescriptor) -> ExactRead | None:
        """One descriptor's whole text (None: not text)."""
        ...

    async def many(
        self, descriptors: Sequence[SourceDescriptor]
    ) -> Sequence[ExactRead | Exception | None]:
        """The whole text of each descriptor, in order."""
        ...


@attrs.define(slots=True, frozen=True)
class ApplyBound:
    """The most one ``apply`` call is handed: characters of text and documents."""

    chars: int = APPLY_CHARS
    documents: int = APPLY_DOCUMENTS

    def __attrs_post_init__(self) -> None:
        if self.chars < 1 or self.documents < 1:
            raise ValueError(f"an apply bound must be positive, got {self!r}")


DEFAULT_BOUND = ApplyBound()
"""``APPLY_CHARS`` characters and ``APPLY_DOCUMENTS`` documents."""


@attrs.define(slots=True)
class SourceTexts:
    """The texts a source handed with its descriptors, kept for one sync's feed.

    Texts are kept in the order they come until ``max_chars`` is reached; :meth:`keep`
    then says where it stopped, so a sync can index what it holds (handing it all out),
    :meth:`clear` and go on keeping. A text is handed out once, and only for the content
    version it came with; none is kept for an item ``indexed`` already holds at that
    version (doc id -> content version), nor one that alone exceeds ``max_chars``.
    """

    max_chars: int = SOURCE_TEXT_CHARS
    indexed: Mapping[str, str] = attrs.field(factory=dict)
    chars: int = 0
    texts: dict[DescriptorKey, tuple[str, str]] = attrs.field(factory=dict)

    def keep(
        self,
        descriptors: Sequence[SourceDescriptor],
        texts: Sequence[str | None] | None,
        start: int = 0,
    ) -> int:
        """Keep the text of each descriptor from ``start`` on (``texts`` in the same
        order) while room lasts; the position of the first one not looked at (the
        length of ``descriptors`` when room lasted)."""
        if texts is None or not self.max_chars:
            return len(descriptors)
        kept, chars, room, indexed = self.texts, self.chars, self.max_chars, self.indexed
        for position in range(start, len(descriptors)):
            text = texts[position]
            if text is None:
                continue
            descriptor = descriptors[position]
            if indexed and indexed.get(doc_id_of(*descriptor.key)) == descriptor.content_version:
                continue
            size = len(text) + TEXT_ENTRY_CHARS
            if chars + size > room:
                if chars == 0:
                    continue  # never fits: read as any other item
                self.chars = chars
                return position
            kept[descriptor.path, descriptor.scope] = (descriptor.content_version, text)
            chars += size
        self.chars = chars
        return len(descriptors)

    def take(self, descriptor: SourceDescriptor) -> str | None:
        """The kept text of ``descriptor`` at its content version (once), or None."""
        kept = self.texts.pop(descriptor.key, None)
        if kept is None or kept[0] != descriptor.content_version:
            return None
        return kept[1]

    def clear(self) -> None:
        """Forget every kept text: the room is whole again."""
        self.texts.clear()
        self.chars = 0


@attrs.define(slots=True)
class EarlyFeed:
    """Indexes the texts a sync holds when their room runs out mid-enumeration, so none
    is read again: ``apply`` feeds the held descriptors (each with its text) and returns
    those read at another version (a source that listed one key twice), kept in
    ``moved`` for the sync to stop on. ``known`` (doc id -> indexed version) learns each
    version fed; ``fed`` and ``added`` count them (``added``: new doc ids)."""

    apply: Callable[[Sequence[SourceDescriptor]], Awaitable[Sequence[SourceDescriptor]]]
    known: dict[str, str]
    fed: int = 0
    added: int = 0
    moved: list[SourceDescriptor] = attrs.field(factory=list)

    async def __call__(
        self, rows: Mapping[DescriptorKey, PackedDescriptor], texts: SourceTexts
    ) -> None:
        """Index every text ``texts`` holds (the descriptors packed in ``rows``); empty it."""
        held = [unpack(rows[key]) for key in texts.texts]
        self.moved += await self.apply(held)
        texts.clear()
        for descriptor in held:
            doc_id = doc_id_of(*descriptor.key)
            self.added += doc_id not in self.known
            self.known[doc_id] = descriptor.content_version
        self.fed += len(held)


@attrs.define(slots=True)
class DocumentChunks:
    """Collects documents into chunks within ``bound``; a document larger than the
    character bound goes alone."""

    bound: ApplyBound = DEFAULT_BOUND
    documents: list[IndexDocument] = attrs.field(factory=list)
    chars: int = 0

    def add(self, document: IndexDocument) -> list[IndexDocument] | None:
        """Add ``document``; return the chunk it closed (not holding it), if any."""
        size = len(document.text or "")
        closed = None
        if self.documents and (
            self.chars + size > self.bound.chars or len(self.documents) >= self.bound.documents
        ):
            closed = self.take()
        self.documents.append(document)
        self.chars += size
        return closed

    def take(self) -> list[IndexDocument]:
        """The documents collected so far (possibly none); the collection starts over."""
        taken, self.documents, self.chars = self.documents, [], 0
        return taken


def chunked(
    documents: Iterable[IndexDocument], bound: ApplyBound = DEFAULT_BOUND
) -> Iterator[list[IndexDocument]]:
    """``documents`` in order, in the chunks a sync would hand to ``apply``."""
    chunks = DocumentChunks(bound)
    for document in documents:
        closed = chunks.add(document)
        if closed is not None:
            yield closed
    last = chunks.take()
    if last:
        yield last


@attrs.define(slots=True)
class _Feed:
    """One sync's apply calls: deletes go with the first call, and only once."""

    partition: IndexPartition
    deletes: list[str]

    def apply(self, documents: Sequence[IndexDocument]) -> None:
        if not documents and not self.deletes:
            return
        deletes, self.deletes = self.deletes, []
        self.partition.apply(documents, deletes)


async def feed(
    partition: IndexPartition,
    needs_text: bool,
    upserts: Sequence[SourceDescriptor],
    deletes: Sequence[DescriptorKey],
    load_text: TextLoader,
    progress: Progress | None = None,
    bound: ApplyBound = DEFAULT_BOUND,
    texts: SourceTexts | None = None,
) -> list[SourceDescriptor]:
    """Hand changed documents (with text when ``needs_text``) to ``partition`` in chunks.

    ``texts`` holds the texts the source handed with the descriptors: those items are
    not read (an item whose media is not indexed as text gets none, as a read gives it).

    A document whose read came from other bytes than its descriptor's content version
    is not handed over (text is never stored under a version it was not made from);
    those descriptors are returned, and the caller stops the sync. A read that raised
    stops the feed at once; the chunks applied before it stay applied.
    """
    out = _Feed(partition, [doc_id_of(*key) for key in deletes])
    chunks = DocumentChunks(bound)
    moved: list[SourceDescriptor] = []
    done = 0
    for batch in _batches(upserts):
        given = _given(batch, texts) if needs_text and texts is not None else {}
        unread = [d for i, d in enumerate(batch) if i not in given] if needs_text else []
        reads = iter(await _read_batch(unread, load_text) if unread else ())
        for position, descriptor in enumerate(batch):
            done += 1
            if progress is not None:
                progress(done, len(upserts))
            text = None
            if position in given:
                text = given[position]
            elif needs_text:
                read = next(reads)
                if isinstance(read, StaleReaderError):  # the source refused the pin
                    moved.append(descriptor)
                    continue
                if isinstance(read, Exception):
                    raise read
                if read is not None and read.content_version != descriptor.content_version:
                    moved.append(descriptor)
                    continue
                text = read.text if read is not None else None
            closed = chunks.add(_document(descriptor, text))
            if closed is not None:
                out.apply(closed)
        del reads  # this batch's texts live on only in the open chunk
    out.apply(chunks.take())
    return moved


def _given(batch: Sequence[SourceDescriptor], texts: SourceTexts) -> dict[int, str | None]:
    """Position -> text of each descriptor of ``batch`` whose text the source handed
    over (None: its media is not indexed as text)."""
    given: dict[int, str | None] = {}
    for position, descriptor in enumerate(batch):
        text = texts.take(descriptor)
        if text is not None:
            media, representation = descriptor.media_type, descriptor.representation
            given[position] = text if indexes_text(descriptor.path, media, representation) else None
    return given


_DOCUMENT_FIELDS = (
    "doc_id", "path", "scope", "title", "text", "content_version", "media_type", "metadata"
)  # fmt: skip
if tuple(IndexDocument.model_fields) != _DOCUMENT_FIELDS:
    raise RuntimeError("IndexDocument's fields changed: update indexfeed._document")
_DOCUMENTS = Packer(IndexDocument)
_EVERY_FIELD = set(_DOCUMENT_FIELDS)
"""The fields set of every document ``_document`` makes (one set, never changed)."""


def _document(descriptor: SourceDescriptor, text: str | None) -> IndexDocument:
    """The document of a descriptor and its text (None: no text), equal to the validated
    ``IndexDocument(...)`` of the same fields. Built as ``Packer.unpack`` builds a model,
    not validated again: every value is a validated descriptor's, or text that was
    validated as a read's or a page's."""
    return _DOCUMENTS.unpack(
        (
            doc_id_of(descriptor.path, descriptor.scope),
            descriptor.path,
            descriptor.scope,
            descriptor.title,
            text,
            descriptor.content_version,
            descriptor.media_type,
            descriptor.metadata,
            _EVERY_FIELD,
        )
    )


def _batches(descriptors: Iterable[SourceDescriptor]) -> Iterator[list[SourceDescriptor]]:
    """``descriptors`` in batches of about READ_BATCH, never splitting one item's run;
    made as the feed goes (a partition's packed descriptors are unpacked one batch at a
    time, not all at once)."""
    batch: list[SourceDescriptor] = []
    for descriptor in descriptors:
        if len(batch) >= READ_BATCH and descriptor.path != batch[-1].path:
            yield batch
            batch = []
        batch.append(descriptor)
    if batch:
        yield batch


async def _read_batch(
    batch: Sequence[SourceDescriptor], load_text: TextLoader
) -> Sequence[ExactRead | Exception | None]:
    """The reads of one batch: one batched read, or one by one for a plain TextLoader
    (whose exceptions other than StaleReaderError stop the sync as they are raised)."""
    if isinstance(load_text, BatchTextLoader):
        return await load_text.many(batch)
    reads: list[ExactRead | Exception | None] = []
    for descriptor in batch:
        try:
            reads.append(await load_text(descriptor))
        except StaleReaderError as stale:
            reads.append(stale)
    return reads
