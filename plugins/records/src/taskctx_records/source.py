"""The ``record_store`` ContextSource: the records visible through a scope, one per item.

The revision is the highest store revision of any record version (tombstones included)
visible through the scope, so writes outside it never make a reader stale. The store
is append-only, so every page and exact read of one read is taken "as of" the pinned
revision: a consistent snapshot without holding a transaction open, and later pages
of a result continue that snapshot even after new writes (``serves_pinned_revisions``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from taskctx.codes import ProblemCode
from taskctx.errors import NotFoundError, PolicyError
from taskctx.frozen import Builder
from taskctx.jsonsafe import check_json_depth
from taskctx.media import classify_bytes, text_nul
from taskctx.model import (
    ContextRef,
    DescriptorPage,
    EnumerationRequest,
    ExactRead,
    Problem,
    Representation,
    SourceDescriptor,
)
from taskctx.protocols import ChangeSet
from taskctx.statefiles import StateDir
from taskctx_records.backend import Row
from taskctx_records.content import decode, loads_stored, pretty_json, unchecked_canonical_json
from taskctx_records.rendered import Rendered
from taskctx_records.values import (
    format_content_version,
    format_revision,
    parse_content_version,
    parse_revision,
)

if TYPE_CHECKING:
    from taskctx.policy import RunConfiguration
    from taskctx_records.store import RecordStore
    from taskctx_records.values import Record

__all__ = ["RecordSource", "record_text"]


def record_text(record: Record) -> str | None:
    """What a model reads of a record: text as is, JSON pretty-printed, bytes: nothing."""
    return _text_of(record.content_type, record.content)


def _text_of(content_type: str, content: Any) -> str | None:
    """:func:`record_text` of decoded content of ``content_type``."""
    if content_type == "text":
        return str(content)
    if content_type == "json":
        return pretty_json(content) + "\n"
    return None


def _deliverable(
    record_id: str, content_type: str, content: Any
) -> tuple[str | None, bytes, Problem | None]:
    """A record's text when it may enter as text, its bytes when it may not, and why.

    Text holding a NUL character never enters (plain text never holds NUL): it is
    reference only, like bytes, with an ``invalid_text`` problem naming the offset.
    Deliverable text comes with no bytes (nothing reads them: a read of text is text).
    """
    text = _text_of(content_type, content)
    if text is None:
        data = content if isinstance(content, bytes) else b""
        return None, data, None
    nul = text_nul(text)
    if nul is None:
        return text, b"", None
    problem = Problem(
        code=ProblemCode.INVALID_TEXT,
        message=f"record {record_id}: its text holds a NUL character at offset {nul}",
    )
    return None, text.encode("utf-8"), problem


def _revision_of(content_version: str | None) -> int | None:
    """The revision a ref's content version pins, or None (read the current version)."""
    if content_version is None:
        return None
    try:
        return parse_content_version(content_version)
    except ValueError:
        return None


_DESCRIPTORS = Builder(
    SourceDescriptor,
    (
        "path",
        "title",
        "media_type",
        "size",
        "chars",
        "content_version",
        "representation",
        "problem",
        "metadata",
    ),
)
"""Every descriptor this source makes, unvalidated: each value is of its field's type by
construction (the row's TEXT and INTEGER columns, a Representation, a Problem or None,
metadata decoded from JSON the store checked when it wrote it), and
``tests/plugins/records`` checks them equal to the validated descriptors."""

SHARED_METADATA = 4096
"""The most distinct (collection, kind, scope, meta) a source remembers while enumerating."""


def _metadata(
    collection: str, kind: str | None, scope: Mapping[str, Any], meta: Mapping[str, Any]
) -> dict[str, Any]:
    """The metadata of a record version's descriptor."""
    return {"collection": collection, "kind": kind, "scope": scope, "meta": meta}


class RecordSource:
    """Records of one store through a scope (JSON key/values) and collections."""

    kind = "record_store"
    serves_pinned_revisions = True

    def __init__(
        self,
        store: RecordStore,
        *,
        scope: Mapping[str, Any] | None = None,
        collections: Sequence[str] | None = None,
    ) -> None:
        self.store = store
        self.scope = dict(scope or {})
        check_json_depth(self.scope, "record_store source scope")
        # canonical JSON, as listing and revisions compare: True is not 1, 1 is not 1.0
        self._scope_json = tuple(
            (key, unchecked_canonical_json(value)) for key, value in self.scope.items()
        )
        self.collections = tuple(collections) if collections is not None else None
        fingerprint = json.dumps(
            {"scope": self.scope, "collections": self.collections}, sort_keys=True
        )
        digest = hashlib.sha256(fingerprint.encode()).hexdigest()[:12]
        self.identity = f"record_store:{store.backend.identity}:{digest}"
        self.index_directory = StateDir(store.root, (".taskctx", "index"))
        self._metadata: dict[
            tuple[str, str | None, str, str], tuple[Mapping[str, Any], Mapping[str, Any]]
        ] = {}

    def with_configuration(self, configuration: RunConfiguration) -> RecordSource:
        """Itself, under any configuration: a record store is local SQLite; it contacts no host."""
        return self

    def describe(self) -> dict[str, Any]:
        """Catalog facts: the store, the scope and the collections."""
        return {
            **self.store.backend.describe(),
            "scope": self.scope,
            "collections": list(self.collections) if self.collections is not None else None,
        }

    def rebuild_options(self) -> dict[str, Any]:
        """``host.source("record_store", **options)`` makes this source again: the same
        store (absolute root, opened read-only), scope and collections."""
        return {
            "root": self.store.backend.reopen,
            "scope": self.scope or None,
            "collections": list(self.collections) if self.collections is not None else None,
        }

    async def async_revision(self) -> str:
        """``r<N>``: the last revision that touched a record visible through the scope."""
        return await asyncio.to_thread(
            lambda: format_revision(self.store.scope_revision(self.scope or None, self.collections))
        )

    def _at(self, revision: str | None) -> int:
        if revision is not None:
            with contextlib.suppress(ValueError):
                return parse_revision(revision)
        return self.store.scope_revision(self.scope or None, self.collections)

    def _render(self, record: Record) -> Rendered:
        """The record's descriptor and deliverable text or bytes, made once for both."""
        return self._rendered(
            record.id,
            record.collection,
            record.scope,
            _metadata(record.collection, record.kind, record.scope, record.meta),
            record.content_type,
            record.content,
            record.sha256,
            record.size,
            record.revision,
        )

    def _render_row(self, row: Row) -> Rendered:
        """:meth:`_render` of the Record ``row`` makes (a row of ``RECORD_COLUMNS``), from
        only the columns a rendering needs: no Record is validated, no timestamp parsed."""
        content_type = row["content_type"]
        scope, metadata = self._shared_metadata(row)
        return self._rendered(
            row["id"],
            row["collection"],
            scope,
            metadata,
            content_type,
            decode(content_type, row["content"]),
            row["sha256"],
            row["size"],
            row["revision"],
        )

    def _shared_metadata(self, row: Row) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
        """The scope and descriptor metadata of a row: one pair for every row of the same
        collection, kind, scope and meta (most rows of a store share them; a partition
        keeps every descriptor's metadata, 400 bytes each when parsed per row)."""
        key = (row["collection"], row["kind"], row["scope"], row["meta"])
        shared = self._metadata.get(key)
        if shared is None:
            if len(self._metadata) >= SHARED_METADATA:
                self._metadata.clear()
            scope = loads_stored(key[2])
            metadata = _metadata(key[0], key[1], scope, loads_stored(key[3]))
            shared = self._metadata[key] = (scope, metadata)
        return shared

    def _rendered(
        self,
        record_id: str,
        collection: str,
        scope: Mapping[str, Any],
        metadata: Mapping[str, Any],
        content_type: str,
        content: Any,
        sha256: str,
        size: int,
        revision: int,
    ) -> Rendered:
        """The rendering of the version with these fields (``content`` decoded)."""
        text, data, problem = _deliverable(record_id, content_type, content)
        if text is not None:
            media_type = "application/json" if content_type == "json" else "text/plain"
            representation = Representation.TEXT
        else:
            media_type = classify_bytes(None, data).media_type
            representation = Representation.REFERENCE_ONLY
        kind = metadata["kind"]
        title = f"{collection}/{kind}" if kind else collection
        descriptor = _DESCRIPTORS.build(  # one metadata dict for records that share it
            path=record_id,
            title=f"{title} {record_id}",
            media_type=media_type,
            size=size,
            chars=len(text) if text is not None else None,
            content_version=format_content_version(revision, sha256),
            representation=representation,
            problem=problem,
            metadata=metadata,
        )
        return Rendered(descriptor, collection=collection, scope=scope, text=text, data=data)

    async def async_enumerate_descriptors(self, request: EnumerationRequest) -> DescriptorPage:
        """Records alive at the revision asked for (else the current one), by id; ids starting
        with ``request.path_prefix`` only, when one is given. The page hands over the
        text each record is delivered as, rendered to list it (``DescriptorPage.texts``)."""

        def page() -> DescriptorPage:
            at = self._at(request.revision)
            listed = self.store.visible_rows(
                self.scope or None,
                self.collections,
                at,
                after_id=request.cursor,
                limit=request.page_size + 1,
            )
            more = len(listed) > request.page_size
            listed = listed[: request.page_size]
            prefix = request.path_prefix or ""
            rendered = [self._render_row(row) for row in listed if row["id"].startswith(prefix)]
            return DescriptorPage(
                descriptors=tuple(r.descriptor for r in rendered),
                texts=tuple(r.text for r in rendered),
                revision=format_revision(at),
                next_cursor=listed[-1]["id"] if more and listed else None,
            )

        return await asyncio.to_thread(page)

    async def async_changes(self, since: str) -> ChangeSet | None:
        """Records touched since ``since`` in this scope: a journal, not a rescan."""
        try:
            start = parse_revision(since)
        except ValueError:
            return None

        def changes() -> ChangeSet:
            until = self.store.scope_revision(self.scope or None, self.collections)
            upserts: list[Rendered] = []
            deletes: list[tuple[str, str | None]] = []
            for record_id in self.store.touched_ids(start, until):
                now = self._alive(record_id, until)
                if now is not None:
                    upserts.append(self._render(now))
                elif self._alive(record_id, start) is not None:
                    deletes.append((record_id, None))
            return ChangeSet(
                since=since,
                revision=format_revision(until),
                upserts=tuple(r.descriptor for r in upserts),
                deletes=tuple(deletes),
                texts=tuple(r.text for r in upserts),
            )

        return await asyncio.to_thread(changes)

    def _alive(self, record_id: str, at: int) -> Record | None:
        """The record as of ``at`` if it exists then and is visible through the scope."""
        try:
            record = self.store.get(record_id, at_revision=at)
        except NotFoundError:
            return None
        return record if self._visible(record.collection, record.scope) else None

    def _visible(self, collection: str, record_scope: Mapping[str, Any]) -> bool:
        if self.collections is not None and collection not in self.collections:
            return False
        scope = record_scope if isinstance(record_scope, Mapping) else {}
        for key, value_json in self._scope_json:
            if key not in scope or unchecked_canonical_json(scope[key]) != value_json:
                return False
        return True

    async def async_read_exact(self, ref: ContextRef, limit: int | None = None) -> ExactRead:
        """The record (as of the pinned version, when the ref carries one), bounded."""

        def read() -> ExactRead:
            try:
                record = self.store.get(ref.path, at_revision=_revision_of(ref.version))
            except NotFoundError:
                raise NotFoundError(f"record {ref.path!r} is not in the store") from None
            return self._exact(ref, self._render(record), limit)

        return await asyncio.to_thread(read)

    async def async_read_exact_many(
        self, refs: Sequence[ContextRef], limit: int | None = None
    ) -> list[ExactRead | Exception]:
        """Each ref read as ``async_read_exact`` reads it, in one thread hop and one SQL
        query per few hundred records (each as of the version its ref pins)."""

        def read_all() -> list[ExactRead | Exception]:
            records = self.store.get_many([(ref.path, _revision_of(ref.version)) for ref in refs])
            answers: list[ExactRead | Exception] = []
            for ref, record in zip(refs, records, strict=True):
                try:
                    if isinstance(record, NotFoundError):
                        raise NotFoundError(f"record {ref.path!r} is not in the store")
                    if isinstance(record, Exception):
                        raise record
                    answers.append(self._exact(ref, self._render(record), limit))
                except Exception as exc:  # one ref's failure is its answer
                    answers.append(exc)
            return answers

        return await asyncio.to_thread(read_all)

    def _exact(self, ref: ContextRef, rendered: Rendered, limit: int | None) -> ExactRead:
        """The read of a rendered record for ``ref``: refused outside the scope, else bounded."""
        if not self._visible(rendered.collection, rendered.scope):
            raise PolicyError(
                f"record {ref.path!r} is outside this source's scope "
                f"{self.scope or '{}'} / collections {self.collections}"
            )
        descriptor = rendered.descriptor
        text = rendered.text
        if text is None:  # bytes are never text; images may still attach
            return ExactRead.from_bytes(
                descriptor.path,
                rendered.data,
                media_type=descriptor.media_type,
                content_version=descriptor.content_version,
            )
        return ExactRead.from_text(
            descriptor.path,
            text,
            limit,
            media_type=descriptor.media_type,
            content_version=descriptor.content_version,
        )
