"""Records: put, versions, tombstones, exact as-of reads, bounded reads, links, checkpoints."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from taskctx_records import CheckpointConflictError, RecordStore

from taskctx.errors import NotFoundError


@pytest.fixture
def store(store_root: Path | str) -> Iterator[RecordStore]:
    """A fresh store on each backend."""
    with RecordStore(store_root) as store:
        yield store


def test_database_lives_under_taskctx_records(tmp_path: Path) -> None:
    """The database is <root>/.taskctx/records/records.db and no workspace is created."""
    store = RecordStore(tmp_path)
    assert store.path == tmp_path / ".taskctx" / "records" / "records.db"
    assert store.path.is_file()
    assert not (tmp_path / ".taskctx" / "files").exists()


@pytest.mark.parametrize(
    ("content", "content_type", "canonical"),
    [
        ("héllo", "text", "héllo".encode()),
        (b"\x00\x01bin", "bytes", b"\x00\x01bin"),
        ({"b": 1, "a": "é"}, "json", '{"a":"é","b":1}'.encode()),
        ([1, 2, None], "json", b"[1,2,null]"),
    ],
)
def test_put_classifies_and_digests_content(
    store: RecordStore, content: object, content_type: str, canonical: bytes
) -> None:
    """put stores text, bytes or JSON with the sha256 and size of the canonical bytes."""
    ref = store.put(content, collection="c")
    assert ref.content_type == content_type
    assert ref.sha256 == hashlib.sha256(canonical).hexdigest()
    assert ref.size == len(canonical)
    record = store.get(ref.id)
    assert record.content == content
    assert record.content_type == content_type


def test_collection_is_required(store: RecordStore) -> None:
    """put without a collection raises a clear error."""
    with pytest.raises(ValueError, match="collection"):
        store.put("x", collection="")


def test_record_fields(store: RecordStore) -> None:
    """A record carries the fields the source relies on."""
    ref = store.put(
        "t", collection="obs", kind="note", scope={"task_id": "t1"}, source="s", meta={"m": 1}
    )
    record = store.get(ref.id)
    assert (record.id, record.collection, record.kind, record.source) == (
        ref.id,
        "obs",
        "note",
        "s",
    )
    assert dict(record.scope) == {"task_id": "t1"}
    assert dict(record.meta) == {"m": 1}
    assert (record.version, record.revision, record.size) == (1, ref.revision, 1)
    assert record.created_at.tzinfo is not None


def test_ids_are_stable_and_sortable(store: RecordStore) -> None:
    """Ids follow creation order and do not change across versions."""
    first = store.put("a", collection="c")
    second = store.put("b", collection="c")
    assert first.id < second.id
    updated = store.put("a2", collection="c", record_id=first.id)
    assert updated.id == first.id
    assert updated.version == 2


def test_every_write_takes_the_next_revision(store: RecordStore) -> None:
    """put, update, delete, link, checkpoint and event each advance the revision by one."""
    a = store.put("a", collection="c")
    b = store.put("b", collection="c")
    store.put("a2", collection="c", record_id=a.id)
    store.link(a.id, b.id, "cites")
    store.checkpoint("run", {"step": 1})
    store.append_event("s", "t", {})
    store.delete(b.id)
    assert store.revision == 7


def test_as_of_reads_are_exact(store: RecordStore) -> None:
    """get at a revision returns the version alive then; deleted records are absent after."""
    ref = store.put("v1", collection="c")
    store.put("v2", collection="c", record_id=ref.id)
    tomb = store.delete(ref.id)
    assert store.get(ref.id, at_revision=1).content == "v1"
    assert store.get(ref.id, at_revision=2).content == "v2"
    with pytest.raises(NotFoundError):
        store.get(ref.id)
    with pytest.raises(NotFoundError):
        store.get(ref.id, at_revision=tomb.revision)
    with pytest.raises(NotFoundError):
        store.get(ref.id, at_revision=0)


def test_delete_of_absent_record_raises(store: RecordStore) -> None:
    """Deleting a missing or already deleted record raises NotFoundError."""
    with pytest.raises(NotFoundError):
        store.delete("rec_missing")
    ref = store.put("x", collection="c")
    store.delete(ref.id)
    with pytest.raises(NotFoundError):
        store.delete(ref.id)


def test_record_keeps_its_collection(store: RecordStore) -> None:
    """Writing a version into another collection is refused."""
    ref = store.put("x", collection="a")
    with pytest.raises(ValueError, match="keeps its collection"):
        store.put("y", collection="b", record_id=ref.id)


def test_put_many_is_one_transaction(store: RecordStore) -> None:
    """put_many writes all items, or none when one is invalid."""
    refs = store.put_many([{"content": i, "collection": "n"} for i in range(5)])
    assert [store.get(ref.id).content for ref in refs] == [0, 1, 2, 3, 4]
    before = store.revision
    with pytest.raises(ValueError, match="keeps its collection"):
        store.put_many(
            [
                {"content": 1, "collection": "n"},
                {"content": 2, "collection": "x", "record_id": refs[0].id},
            ]
        )
    assert store.revision == before
    assert store.query(collection="n").coverage.considered == 5


def test_put_many_rejects_unknown_keys(store: RecordStore) -> None:
    """A put_many item with an unknown key or no content is refused."""
    with pytest.raises(TypeError, match="unknown"):
        store.put_many([{"content": 1, "collection": "c", "colour": "red"}])
    with pytest.raises(TypeError, match="content"):
        store.put_many([{"collection": "c"}])


def test_read_bounded_text_by_characters(store: RecordStore) -> None:
    """read_bounded slices text by characters and reports the digest of the whole."""
    ref = store.put("héllo wörld", collection="c")
    part = store.read_bounded(ref.id, 1, 4)
    assert part.text == "éllo"
    assert part.eof is False
    assert part.sha256 == ref.sha256
    assert part.size == ref.size
    rest = store.read_bounded(ref.id, 6)
    assert rest.text == "wörld"
    assert rest.eof is True


def test_read_bounded_bytes_and_json(store: RecordStore) -> None:
    """Bytes slice by bytes; JSON slices its canonical text."""
    blob = store.put(b"0123456789", collection="c")
    part = store.read_bounded(blob.id, 8, 5)
    assert part.data == b"89"
    assert part.eof is True
    doc = store.put({"b": 2, "a": 1}, collection="c")
    assert store.read_bounded(doc.id, 0, 7).text == '{"a":1,'


def test_read_bounded_as_of_revision(store: RecordStore) -> None:
    """read_bounded reads the version alive at a revision."""
    ref = store.put("old", collection="c")
    store.put("new text", collection="c", record_id=ref.id)
    assert store.read_bounded(ref.id, at_revision=ref.revision).text == "old"
    assert store.read_bounded(ref.id).text == "new text"


def test_links_both_directions(store: RecordStore) -> None:
    """Links are listed out of and into a record, filtered by relation."""
    a = store.put("a", collection="c")
    b = store.put("b", collection="c")
    c = store.put("c", collection="c")
    store.link(a.id, b.id, "cites", meta={"w": 1})
    store.link(a.id, c.id, "blocks")
    assert [link.target_id for link in store.links(a.id)] == [b.id, c.id]
    assert [link.target_id for link in store.links(a.id, "cites")] == [b.id]
    assert [link.source_id for link in store.links(c.id, direction="in")] == [a.id]
    assert dict(store.links(a.id, "cites")[0].meta) == {"w": 1}
    with pytest.raises(NotFoundError):
        store.link(a.id, "rec_missing", "cites")


def test_checkpoints_and_conflicts(store: RecordStore) -> None:
    """Checkpoints count versions per run; a stale expected version raises a conflict."""
    assert store.latest_checkpoint("run") is None
    first = store.checkpoint("run", {"step": 1}, expected_state_version=0)
    second = store.checkpoint("run", {"step": 2}, expected_state_version=1)
    assert (first.state_version, second.state_version) == (1, 2)
    with pytest.raises(CheckpointConflictError) as conflict:
        store.checkpoint("run", {"step": 3}, expected_state_version=1)
    assert (conflict.value.expected, conflict.value.actual) == (1, 2)
    latest = store.latest_checkpoint("run")
    assert latest is not None
    assert latest.state == {"step": 2}
    assert latest.revision == second.revision


def test_snapshots_keep_last(store: RecordStore) -> None:
    """Snapshots are revision numbers; only the keep_last newest are kept."""
    for i in range(5):
        store.put(i, collection="c")
        store.snapshot(f"s{i}", keep_last=3)
    kept = store.snapshots()
    assert [snap.name for snap in kept] == ["s2", "s3", "s4"]
    assert [snap.revision for snap in kept] == [3, 4, 5]
    auto = store.snapshot()
    assert auto.revision == store.revision
    with pytest.raises(ValueError, match="exists"):
        store.snapshot("s4")


def test_scope_revision_ignores_writes_outside(store: RecordStore) -> None:
    """scope_revision moves with writes in scope (tombstones included), not outside it."""
    ref = store.put("a", collection="obs", scope={"task_id": "t1"})
    assert store.scope_revision({"task_id": "t1"}, None) == ref.revision
    store.put("b", collection="obs", scope={"task_id": "t2"})
    store.put("c", collection="other", scope={"task_id": "t1"})
    store.append_event("s", "t", {})
    assert store.scope_revision({"task_id": "t1"}, ["obs"]) == ref.revision
    tomb = store.delete(ref.id)
    assert store.scope_revision({"task_id": "t1"}, ["obs"]) == tomb.revision
    assert store.scope_revision(None, ["obs"]) == tomb.revision


def test_scope_revision_sees_a_record_leaving_scope(store: RecordStore) -> None:
    """Moving a record out of a scope changes that scope's revision."""
    ref = store.put("a", collection="c", scope={"task_id": "t1", "k": "v"})
    moved = store.put("a", collection="c", scope={"task_id": "t2"}, record_id=ref.id)
    assert store.scope_revision({"task_id": "t1", "k": "v"}, None) == moved.revision
    assert store.query(scope={"task_id": "t1"}).records == ()


def test_iter_visible_keyset(store: RecordStore) -> None:
    """iter_visible pages records alive at a revision in scope, ordered by id."""
    refs = [store.put(i, collection="c", scope={"t": 1}) for i in range(7)]
    store.put("out", collection="c", scope={"t": 2})
    at = store.revision
    store.delete(refs[0].id)
    first = store.iter_visible({"t": 1}, ["c"], at, limit=4)
    rest = store.iter_visible({"t": 1}, ["c"], at, after_id=first[-1].id, limit=4)
    assert [r.id for r in first + rest] == [ref.id for ref in refs]
    now = store.iter_visible({"t": 1}, None, store.revision)
    assert refs[0].id not in {r.id for r in now}
