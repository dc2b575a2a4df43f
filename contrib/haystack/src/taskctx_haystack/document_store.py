"""A Haystack DocumentStore over a taskctx RecordStore (one collection of it).

Each Document is one record of ``collection`` (kind ``haystack_document``): the record's
text content is the Document's content, and its record meta holds the Document's id,
meta, embedding, sparse embedding and blob. Filters are Haystack's own semantics
(:func:`haystack.utils.filters.document_matches_filter`) evaluated over the records read
from the store: a filtered read reads the whole collection. Deleting writes the
RecordStore's tombstone version; the history stays in the store.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

from haystack import default_from_dict, default_to_dict
from haystack.dataclasses import ByteStream, Document, SparseEmbedding
from haystack.document_stores.errors import DuplicateDocumentError
from haystack.document_stores.types import DuplicatePolicy
from haystack.utils.filters import document_matches_filter
from taskctx_records import Record, RecordStore

from taskctx.errors import NotFoundError

__all__ = ["DOCUMENT_KIND", "RecordDocumentStore"]

DOCUMENT_KIND = "haystack_document"
"""The record kind of a stored Document (other records of the collection are ignored)."""

_PAGE = 500


class RecordDocumentStore:
    """Haystack's DocumentStore protocol on one collection of a taskctx RecordStore."""

    def __init__(self, store: RecordStore, collection: str = "haystack_documents") -> None:
        """Keep Documents in ``collection`` of ``store`` (the caller owns and closes it)."""
        if not collection:
            raise ValueError("collection must be a non-empty name")
        self.store = store
        self.collection = collection

    # -- serialization ---------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The store's folder (or database URL) and collection."""
        return default_to_dict(self, root=str(self.store.location), collection=self.collection)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RecordDocumentStore:
        """Open the RecordStore ``to_dict`` named (read_write) over the same collection."""
        params = dict(data.get("init_parameters", {}))
        root = params.pop("root")
        store = RecordStore(_store_root(str(root)))
        rebuilt: RecordDocumentStore = default_from_dict(
            cls, {**data, "init_parameters": {**params, "store": store}}
        )
        return rebuilt

    # -- reading ---------------------------------------------------------------------------

    def _record_id(self, document_id: str) -> str:
        return f"{self.collection}:{document_id}"

    def _records(self) -> Iterator[Record]:
        """Every live Document record of the collection, pinned to one revision, in the
        order they were written (an overwrite moves a Document to the end)."""
        page = self.store.query(collection=self.collection, kind=DOCUMENT_KIND, page_size=_PAGE)
        records = list(page.records)
        while page.has_more and page.cursor is not None:
            page = self.store.query_continue(page.cursor)
            records.extend(page.records)
        return iter(sorted(records, key=lambda record: record.revision))

    def count_documents(self) -> int:
        """The number of Documents in the collection (a count query, no records read)."""
        page = self.store.query(collection=self.collection, kind=DOCUMENT_KIND, page_size=1)
        considered = page.coverage.considered
        return considered if considered is not None else sum(1 for _ in self._records())

    def filter_documents(self, filters: dict[str, Any] | None = None) -> list[Document]:
        """The Documents matching Haystack ``filters`` (all of them without), in write order.

        Reads the whole collection and evaluates the filters with Haystack's own
        ``document_matches_filter``; a malformed filter raises FilterError (or ValueError,
        as Haystack's in-memory store does) even on an empty collection.
        """
        if filters:
            _check_filters(filters)
        documents = (_document_of(record) for record in self._records())
        if not filters:
            return list(documents)
        return [doc for doc in documents if document_matches_filter(filters, doc)]

    # -- writing ---------------------------------------------------------------------------

    def write_documents(
        self, documents: list[Document], policy: DuplicatePolicy = DuplicatePolicy.NONE
    ) -> int:
        """Write ``documents`` in one transaction; the number written.

        ``NONE`` means ``FAIL``: DuplicateDocumentError, before anything is written, when an
        id is already stored or repeated. ``SKIP`` leaves those out; ``OVERWRITE`` writes a
        new version of the record (the last of repeated ids wins).
        """
        if not isinstance(documents, list) or not all(isinstance(d, Document) for d in documents):
            raise ValueError("write_documents takes a list of Documents")
        if policy == DuplicatePolicy.NONE:
            policy = DuplicatePolicy.FAIL
        stored = self._stored_ids([doc.id for doc in documents])
        chosen: list[Document] = []
        seen: set[str] = set()
        for doc in documents:
            duplicate = doc.id in stored or doc.id in seen
            if duplicate and policy == DuplicatePolicy.FAIL:
                raise DuplicateDocumentError(f"ID '{doc.id}' already exists.")
            if duplicate and policy == DuplicatePolicy.SKIP:
                continue
            seen.add(doc.id)
            chosen.append(doc)
        if chosen:
            self.store.put_many([self._item(doc) for doc in chosen])
        return len(chosen)

    def _stored_ids(self, document_ids: list[str]) -> set[str]:
        """Which of ``document_ids`` name a live record of this store (one query)."""
        found = self.store.get_many([(self._record_id(i), None) for i in document_ids])
        return {i for i, got in zip(document_ids, found, strict=True) if isinstance(got, Record)}

    def _item(self, doc: Document) -> dict[str, Any]:
        """The ``put_many`` item of ``doc``."""
        return {
            "content": doc.content if doc.content is not None else "",
            "collection": self.collection,
            "kind": DOCUMENT_KIND,
            "meta": _record_meta(doc),
            "record_id": self._record_id(doc.id),
        }

    def delete_documents(self, document_ids: list[str]) -> None:
        """Delete the Documents with these ids (a tombstone each); unknown ids are ignored."""
        for document_id in self._stored_ids(list(dict.fromkeys(document_ids))):
            try:
                self.store.delete(self._record_id(document_id))
            except NotFoundError:  # deleted meanwhile by another writer
                continue

    # -- beyond the protocol: what the extended mixins test --------------------------------

    def delete_all_documents(self) -> None:
        """Delete every Document of the collection (reads the collection)."""
        self.delete_documents([doc.id for doc in self.filter_documents()])

    def delete_by_filter(self, filters: dict[str, Any]) -> int:
        """Delete the Documents matching ``filters``; how many were deleted."""
        matched = [doc.id for doc in self.filter_documents(filters)]
        self.delete_documents(matched)
        return len(matched)

    def count_documents_by_filter(self, filters: dict[str, Any]) -> int:
        """How many Documents match ``filters`` (reads the collection)."""
        return len(self.filter_documents(filters))

    def update_by_filter(self, filters: dict[str, Any], meta: dict[str, Any]) -> int:
        """Merge ``meta`` into the meta of every Document matching ``filters`` (a new
        version of each record, ids unchanged); how many were updated."""
        matched = [replace(d, meta={**d.meta, **meta}) for d in self.filter_documents(filters)]
        if matched:
            self.store.put_many([self._item(doc) for doc in matched])
        return len(matched)


def _store_root(location: str) -> str:
    """The ``RecordStore`` root of a ``location`` (a SQLite file's folder, or a URL)."""
    if "://" in location:
        return location
    from pathlib import Path

    path = Path(location)
    for parent in path.parents:
        if parent.name == ".taskctx":
            return str(parent.parent)
    return str(path.parent)


def _check_filters(filters: dict[str, Any]) -> None:
    """Fail on a malformed filter before reading: Haystack's in-memory store's syntax
    check, then an evaluation against an empty Document (raises FilterError on a missing
    key or an unknown operator on the paths it evaluates)."""
    if "operator" not in filters and "conditions" not in filters:
        raise ValueError("Invalid filter syntax: a filter needs 'operator' (and 'conditions').")
    document_matches_filter(filters, Document(id="filter-check"))


def _record_meta(doc: Document) -> dict[str, Any]:
    """What the record meta keeps of ``doc`` besides its content."""
    blob = None
    if doc.blob is not None:
        blob = {
            "data": base64.b64encode(doc.blob.data).decode("ascii"),
            "mime_type": doc.blob.mime_type,
            "meta": doc.blob.meta,
        }
    sparse = None if doc.sparse_embedding is None else doc.sparse_embedding.to_dict()
    return {
        "document_id": doc.id,
        "content_is_none": doc.content is None,
        "meta": doc.meta,
        "embedding": doc.embedding,
        "sparse_embedding": sparse,
        "blob": blob,
    }


def _document_of(record: Record) -> Document:
    """The Document a record written by :class:`RecordDocumentStore` holds."""
    kept: Mapping[str, Any] = record.meta
    blob = kept.get("blob")
    sparse = kept.get("sparse_embedding")
    return Document(
        id=str(kept["document_id"]),
        content=None if kept.get("content_is_none") else str(record.content),
        meta=dict(kept.get("meta") or {}),
        embedding=kept.get("embedding"),
        sparse_embedding=None if sparse is None else SparseEmbedding.from_dict(dict(sparse)),
        blob=None
        if blob is None
        else ByteStream(
            data=base64.b64decode(blob["data"]),
            mime_type=blob.get("mime_type"),
            meta=dict(blob.get("meta") or {}),
        ),
    )
