"""Haystack's own document store test suites, run on RecordDocumentStore over a real
RecordStore, plus what those suites do not check (persistence, serialization, tombstones)."""

from __future__ import annotations

from pathlib import Path

import pytest
from haystack.dataclasses import ByteStream, Document, SparseEmbedding
from haystack.document_stores.errors import DuplicateDocumentError
from haystack.errors import FilterError
from haystack.testing.document_store import (
    CountDocumentsByFilterTest,
    DocumentStoreBaseExtendedTests,
)
from taskctx_haystack import DOCUMENT_KIND, RecordDocumentStore
from taskctx_records import RecordStore


class TestRecordDocumentStore(DocumentStoreBaseExtendedTests, CountDocumentsByFilterTest):
    """Count, Write, Delete, Filter, DeleteAll, DeleteByFilter, UpdateByFilter and
    CountDocumentsByFilter from haystack.testing.document_store."""

    @pytest.fixture
    def document_store(self, record_store: RecordStore) -> RecordDocumentStore:
        """The store under test, on a fresh RecordStore."""
        return RecordDocumentStore(record_store, collection="docs")

    def test_write_documents(self, document_store: RecordDocumentStore) -> None:  # type: ignore[override]
        """The default policy (NONE) is FAIL: a second write of the same id raises."""
        doc = Document(content="test doc")
        assert document_store.write_documents([doc]) == 1
        with pytest.raises(DuplicateDocumentError):
            document_store.write_documents([doc])
        assert document_store.filter_documents() == [doc]


def test_a_failed_batch_writes_nothing(record_store: RecordStore) -> None:
    """FAIL checks the whole batch before the one write transaction."""
    store = RecordDocumentStore(record_store)
    store.write_documents([Document(id="a", content="a")])
    with pytest.raises(DuplicateDocumentError):
        store.write_documents([Document(id="b", content="b"), Document(id="a", content="a2")])
    assert [d.id for d in store.filter_documents()] == ["a"]


def test_every_field_round_trips_and_persists(tmp_path: Path) -> None:
    """Content None, blob, embedding, sparse embedding and nested meta survive a reopen."""
    doc = Document(
        id="full",
        content=None,
        blob=ByteStream(data=b"\x00\x01png", mime_type="image/png", meta={"page": 2}),
        meta={"nested": {"a": [1, 2.5]}, "flag": True, "none": None},
        embedding=[0.1, 0.2, 1e-9],
        sparse_embedding=SparseEmbedding(indices=[3, 7], values=[0.5, 0.25]),
    )
    with RecordStore(tmp_path) as first:
        RecordDocumentStore(first).write_documents([doc])
    with RecordStore(tmp_path) as second:
        assert RecordDocumentStore(second).filter_documents() == [doc]


def test_delete_is_a_tombstone_and_collections_are_separate(record_store: RecordStore) -> None:
    """A deleted Document is gone, its record history stays; another collection (and
    records of another kind in the same one) are not Documents of this store."""
    one = RecordDocumentStore(record_store, collection="one")
    two = RecordDocumentStore(record_store, collection="two")
    one.write_documents([Document(id="x", content="in one")])
    two.write_documents([Document(id="x", content="in two")])
    record_store.put("a note, not a Document", collection="one", kind="note")
    assert (one.count_documents(), two.count_documents()) == (1, 1)
    before = record_store.revision
    one.delete_documents(["x"])
    assert one.count_documents() == 0
    assert [d.content for d in two.filter_documents()] == ["in two"]
    assert record_store.get("one:x", at_revision=before).kind == DOCUMENT_KIND


def test_malformed_filter_fails_on_an_empty_store(record_store: RecordStore) -> None:
    """Filter syntax is checked before reading, not only when a record is evaluated."""
    store = RecordDocumentStore(record_store)
    with pytest.raises(FilterError):
        store.filter_documents({"operator": "AND", "conditions": [{"operator": "=="}]})
    with pytest.raises(ValueError, match="filter syntax"):
        store.filter_documents({"field": "meta.a"})


def test_to_dict_and_from_dict_reopen_the_same_store(record_store: RecordStore) -> None:
    """The serialized store names the RecordStore and collection; from_dict reopens them."""
    store = RecordDocumentStore(record_store, collection="c")
    store.write_documents([Document(id="d", content="kept")])
    data = store.to_dict()
    assert data["init_parameters"]["collection"] == "c"
    again = RecordDocumentStore.from_dict(data)
    try:
        assert [d.content for d in again.filter_documents()] == ["kept"]
    finally:
        again.store.close()
