"""The ``session_memory`` ContextSource: a session's notes and tasks, and global memory.

Items are the notes and tasks of the session's namespace and (``include_global``) of
global memory, at paths ``session/<session id>/notes/<key>``,
``session/<session id>/tasks/<id>``, ``global/notes/<key>`` and ``global/tasks/<id>``,
built and authorised as :mod:`taskctx_memory.items` says (shared with the provider
mode's :class:`~taskctx_memory.provider_source.ProviderMemorySource`).

Every exact read is authorised against those namespaces: a path of another session
raises :class:`~taskctx.errors.PolicyError` (whether or not it exists), a path of no
item :class:`~taskctx.errors.NotFoundError`. The revision is the highest store revision
that touched a record of those namespaces, so writes to other sessions never move it.
The store is append-only: descriptors and reads are taken as of the pinned revision,
and later pages continue that snapshot after new writes (``serves_pinned_revisions``).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from taskctx_records import Record, RecordStore, format_content_version, parse_content_version

from taskctx.errors import NotFoundError
from taskctx.model import (
    ContextRef,
    DescriptorPage,
    EnumerationRequest,
    ExactRead,
    SourceDescriptor,
)
from taskctx.protocols import ChangeSet
from taskctx.statefiles import StateDir
from taskctx_memory.backends import note_of, task_of
from taskctx_memory.items import (
    MEDIA_TYPE,
    MemoryItem,
    authorise,
    namespaces_of,
    note_item,
    task_item,
    task_text,
)
from taskctx_memory.namespace import COLLECTION, Namespace, ParsedPath

if TYPE_CHECKING:
    from taskctx.policy import RunConfiguration

__all__ = ["SessionMemorySource", "task_text"]


def _revision_of(version: str | None) -> int | None:
    """The store revision of a ``r<N>:<sha256>`` content version; None for anything else."""
    try:
        return parse_content_version(version) if version else None
    except ValueError:
        return None


def _exact(item: MemoryItem, limit: int | None) -> ExactRead:
    """The bounded read of one item, with its content version."""
    return ExactRead.from_text(
        item.path, item.text, limit, media_type=MEDIA_TYPE, content_version=item.content_version
    )


def _item_of(namespace: Namespace, record: Record) -> MemoryItem | None:
    """The item of a record of ``namespace``; None if it is no well-formed note or task."""
    version = format_content_version(record.revision, record.sha256)
    note = note_of(record)
    if note is not None:
        return note_item(namespace, *note, version=version)
    task = task_of(record)
    if task is not None:
        return task_item(namespace, task[1], task[0], version=version)
    return None


class SessionMemorySource:
    """The ``session_memory`` source of one session (``session_id=None``: global only)."""

    kind = "session_memory"
    serves_pinned_revisions = True

    def __init__(
        self,
        store: RecordStore | str | Path,
        session_id: str | None,
        *,
        include_global: bool = True,
    ) -> None:
        self.namespaces: tuple[Namespace, ...] = namespaces_of(session_id, include_global)
        self.session_id = session_id
        self.include_global = include_global
        self.store = store if isinstance(store, RecordStore) else RecordStore(store, "read_only")
        fingerprint = json.dumps({"session": session_id, "global": include_global})
        digest = hashlib.sha256(fingerprint.encode()).hexdigest()[:12]
        # the absolute root: a relative one would name another store from another folder
        self.identity = f"session_memory:{self.store.root.resolve()}:{digest}"
        self.index_directory = StateDir(self.store.root, (".taskctx", "index"))

    def with_configuration(self, configuration: RunConfiguration) -> SessionMemorySource:
        """Itself, under any configuration: memory is a local record store; it contacts no host."""
        return self

    def describe(self) -> dict[str, Any]:
        """Catalog facts: the store, the session and whether global memory is included."""
        return {
            "root": str(self.store.root),
            "session_id": self.session_id,
            "include_global": self.include_global,
        }

    def rebuild_options(self) -> dict[str, Any]:
        """``host.source("session_memory", **options)`` makes this source again: the same
        store (absolute root, opened read-only), session and global setting."""
        return {
            "root": str(self.store.root.resolve()),
            "session_id": self.session_id,
            "include_global": self.include_global,
        }

    def _revision(self) -> int:
        return max(self.store.scope_revision(ns.scope, [COLLECTION]) for ns in self.namespaces)

    async def async_revision(self) -> str:
        """``r<N>``: the last store revision that touched a note or task of these scopes."""
        return await asyncio.to_thread(lambda: f"r{self._revision()}")

    def _at(self, revision: str | None) -> int:
        if revision is not None and revision.startswith("r") and revision[1:].isdigit():
            return int(revision[1:])
        return self._revision()

    async def async_enumerate_descriptors(self, request: EnumerationRequest) -> DescriptorPage:
        """Items alive at the revision asked for (else the current one): session, then global.

        The cursor is ``<namespace index>:<last record id>``.
        """
        return await asyncio.to_thread(self._page, request)

    def _page(self, request: EnumerationRequest) -> DescriptorPage:
        at = self._at(request.revision)
        index, after = 0, None
        if request.cursor:
            head, _, tail = request.cursor.partition(":")
            index, after = (int(head) if head.isdigit() else 0), (tail or None)
        found: list[SourceDescriptor] = []
        next_cursor: str | None = None
        while index < len(self.namespaces):
            want = request.page_size - len(found)
            records = self.store.iter_visible(
                self.namespaces[index].scope, [COLLECTION], at, after_id=after, limit=want + 1
            )
            for record in records[:want]:
                after = record.id
                item = self._item(index, record)
                if item is not None and item.path.startswith(request.path_prefix or ""):
                    found.append(item.descriptor())
            if len(records) > want:
                next_cursor = f"{index}:{after}"
                break
            index, after = index + 1, None
            if len(found) >= request.page_size:
                if any(self._has_items(i, at) for i in range(index, len(self.namespaces))):
                    next_cursor = f"{index}:"
                break
        return DescriptorPage(descriptors=tuple(found), revision=f"r{at}", next_cursor=next_cursor)

    def _has_items(self, index: int, at: int) -> bool:
        return bool(
            self.store.iter_visible(self.namespaces[index].scope, [COLLECTION], at, limit=1)
        )

    def _item(self, index: int, record: Record) -> MemoryItem | None:
        return _item_of(self.namespaces[index], record)  # a malformed record is no item

    def _alive(self, parsed: ParsedPath, at: int | None) -> MemoryItem | None:
        record_id = parsed.namespace.record_id(parsed.kind, parsed.key)
        try:
            record = self.store.get(record_id, at_revision=at)
        except (NotFoundError, ValueError):  # ValueError: a version beyond this store's revision
            return None
        return self._item_in(parsed, record)

    @staticmethod
    def _item_in(parsed: ParsedPath, record: Record) -> MemoryItem | None:
        """The item ``record`` is at ``parsed``'s path, or None if it is no such item."""
        if record.collection != COLLECTION or dict(record.scope) != parsed.namespace.scope:
            return None
        item = _item_of(parsed.namespace, record)
        if item is None or (item.kind, item.key) != (parsed.kind, parsed.key):
            return None
        return item

    async def async_read_exact(self, ref: ContextRef, limit: int | None = None) -> ExactRead:
        """The note or task (as of the pinned version when the ref carries one), bounded."""

        def read() -> ExactRead:
            parsed = authorise(ref.path, self.namespaces)
            item = self._alive(parsed, _revision_of(ref.version))
            if item is None:
                raise NotFoundError(f"no {parsed.kind} at {ref.path!r}")
            return _exact(item, limit)

        return await asyncio.to_thread(read)

    async def async_read_exact_many(
        self, refs: Sequence[ContextRef], limit: int | None = None
    ) -> list[ExactRead | Exception]:
        """Each ref read as ``async_read_exact`` reads it, in one thread hop and one store
        query per few hundred items (each as of the version its ref pins)."""

        def read_all() -> list[ExactRead | Exception]:
            answers: list[ExactRead | Exception | None] = []
            asked: list[tuple[int, ParsedPath]] = []
            for ref in refs:
                try:
                    asked.append((len(answers), authorise(ref.path, self.namespaces)))
                    answers.append(None)
                except Exception as exc:  # PolicyError, NotFoundError: this ref's answer
                    answers.append(exc)
            wanted: list[tuple[str, int | None]] = []
            for i, parsed in asked:
                record_id = parsed.namespace.record_id(parsed.kind, parsed.key)
                wanted.append((record_id, _revision_of(refs[i].version)))
            records = self.store.get_many(wanted)
            for (i, parsed), record in zip(asked, records, strict=True):
                item = None if isinstance(record, Exception) else self._item_in(parsed, record)
                if item is None:
                    answers[i] = NotFoundError(f"no {parsed.kind} at {refs[i].path!r}")
                else:
                    answers[i] = _exact(item, limit)
            return [answer for answer in answers if answer is not None]

        return await asyncio.to_thread(read_all)

    async def async_changes(self, since: str) -> ChangeSet | None:
        """Items touched since ``since`` in these namespaces: from the store's journal."""
        if not (since.startswith("r") and since[1:].isdigit()):
            return None
        start = int(since[1:])

        def changes() -> ChangeSet:
            until = self._revision()
            upserts: list[SourceDescriptor] = []
            deletes: list[tuple[str, str | None]] = []
            for record_id in self.store.touched_ids(start, until):
                now, then = self._owned(record_id, until), self._owned(record_id, start)
                if now is not None:
                    upserts.append(now.descriptor())
                if then is not None and (now is None or now.path != then.path):
                    deletes.append((then.path, None))
            return ChangeSet(
                since=since, revision=f"r{until}", upserts=tuple(upserts), deletes=tuple(deletes)
            )

        return await asyncio.to_thread(changes)

    def _owned(self, record_id: str, at: int) -> MemoryItem | None:
        """The item of record ``record_id`` as of ``at`` if it is in one of these namespaces."""
        try:
            record = self.store.get(record_id, at_revision=at)
        except NotFoundError:
            return None
        if record.collection != COLLECTION:
            return None
        for namespace in self.namespaces:
            if dict(record.scope) == namespace.scope:
                return _item_of(namespace, record)
        return None
