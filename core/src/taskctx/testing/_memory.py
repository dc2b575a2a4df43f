"""MemorySource: a complete ContextSource held in memory, with a change journal."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from taskctx.errors import NotFoundError
from taskctx.media import classify, classify_bytes, guess_media_type
from taskctx.model import (
    ContextRef,
    DescriptorPage,
    EnumerationRequest,
    ExactRead,
    SourceDescriptor,
)
from taskctx.policy import RunConfiguration
from taskctx.protocols import ChangeSet
from taskctx.sections import markdown_sections
from taskctx.testing._common import sha256_of

__all__ = ["MemorySource"]


class MemorySource:
    """A source of named items held in memory; every change bumps the revision.

    ``keep_history=True`` keeps every revision so readers continue a pinned snapshot
    after changes (like a record store); otherwise old revisions are gone.
    """

    kind = "memory"

    def __init__(
        self,
        items: Mapping[str, str | bytes] | None = None,
        *,
        identity: str | None = None,
        keep_history: bool = False,
        page_size: int = 1000,
    ) -> None:
        self.identity = identity
        self.serves_pinned_revisions = keep_history
        self._page_size = page_size
        self._revision = 0
        self._items: dict[str, str | bytes] = {}
        self._history: dict[int, dict[str, str | bytes]] = {}
        self._journal: list[tuple[int, str]] = []
        self._keep_history = keep_history
        self.enumerations = 0
        self.reads = 0
        for path, content in (items or {}).items():
            self._items[path] = content
        self._commit_snapshot()

    def _commit_snapshot(self) -> None:
        if self._keep_history:
            self._history[self._revision] = dict(self._items)

    def put(self, path: str, content: str | bytes) -> None:
        """Add or replace one item (a new revision)."""
        self._items[path] = content
        self._revision += 1
        self._journal.append((self._revision, path))
        self._commit_snapshot()

    def delete(self, path: str) -> None:
        """Remove one item (a new revision)."""
        del self._items[path]
        self._revision += 1
        self._journal.append((self._revision, path))
        self._commit_snapshot()

    def _view(self, revision: str | None) -> tuple[int, dict[str, str | bytes]]:
        if revision is None or revision == f"r{self._revision}":
            return self._revision, self._items
        number = int(revision[1:]) if revision.startswith("r") and revision[1:].isdigit() else -1
        if number in self._history:
            return number, self._history[number]
        return self._revision, self._items  # cannot serve it: the page says which it is

    def _descriptor(self, path: str, content: str | bytes) -> SourceDescriptor:
        text = content if isinstance(content, str) else None
        media = (
            classify_bytes(path, content, guess_media_type(path))
            if isinstance(content, bytes)
            else classify(path, content_kind="text")
        )
        return SourceDescriptor(
            path=path,
            title=path.rsplit("/", 1)[-1],
            media_type=media.media_type,
            size=len(content.encode() if isinstance(content, str) else content),
            chars=len(text) if text is not None else None,
            content_version=sha256_of(content),
            sections=markdown_sections(text) if text is not None else (),
        )

    def with_configuration(self, configuration: RunConfiguration) -> MemorySource:
        """Itself, under any configuration: items held in memory contact no host."""
        return self

    async def async_revision(self) -> str:
        """``r<N>``: the number of changes so far."""
        return f"r{self._revision}"

    async def async_enumerate_descriptors(self, request: EnumerationRequest) -> DescriptorPage:
        """Items in path order, ``page_size`` at a time; the cursor is an offset."""
        self.enumerations += 1
        number, items = self._view(request.revision)
        paths = sorted(
            p for p in items if request.path_prefix is None or p.startswith(request.path_prefix)
        )
        start = int(request.cursor) if request.cursor else 0
        size = min(request.page_size, self._page_size)
        chunk = paths[start : start + size]
        end = start + len(chunk)
        return DescriptorPage(
            descriptors=tuple(self._descriptor(p, items[p]) for p in chunk),
            revision=f"r{number}",
            next_cursor=str(end) if end < len(paths) else None,
            total=len(paths),
        )

    async def async_read_exact(self, ref: ContextRef, limit: int | None = None) -> ExactRead:
        """The item's text (cut at ``limit`` characters) or bytes, with the full digest."""
        self.reads += 1
        items = self._items
        if ref.version is not None and self._keep_history:
            for snapshot in (self._items, *reversed(self._history.values())):
                content = snapshot.get(ref.path)
                if content is not None and sha256_of(content) == ref.version:
                    items = snapshot
                    break
        content = items.get(ref.path)
        if content is None:
            raise NotFoundError(f"memory source has no item {ref.path!r}")
        descriptor = self._descriptor(ref.path, content)
        if isinstance(content, bytes):
            return ExactRead(
                path=ref.path,
                data=content,
                media_type=descriptor.media_type,
                digest=sha256_of(content),
                content_version=sha256_of(content),
            )
        return ExactRead.from_text(
            ref.path,
            content,
            limit,
            media_type=descriptor.media_type,
            content_version=sha256_of(content),
            sections=descriptor.sections,
        )

    async def async_read_exact_many(
        self, refs: Sequence[ContextRef], limit: int | None = None
    ) -> list[ExactRead | Exception]:
        """Each ref read as ``async_read_exact`` reads it: one answer per ref, in order, a
        read or the exception it raised (``taskctx.SupportsReadMany``)."""
        answers: list[ExactRead | Exception] = []
        for ref in refs:
            try:
                answers.append(await self.async_read_exact(ref, limit))
            except Exception as exc:  # one ref's failure is its answer
                answers.append(exc)
        return answers

    async def async_changes(self, since: str) -> ChangeSet | None:
        """What changed since ``since``, from the journal (None if unknown)."""
        if not since.startswith("r") or not since[1:].isdigit():
            return None
        start = int(since[1:])
        touched = sorted({path for number, path in self._journal if number > start})
        upserts = tuple(self._descriptor(p, self._items[p]) for p in touched if p in self._items)
        deletes = tuple((p, None) for p in touched if p not in self._items)
        return ChangeSet(
            since=since, revision=f"r{self._revision}", upserts=upserts, deletes=deletes
        )
