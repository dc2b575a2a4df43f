"""The `record_store` source: scope-aware revisions, pinned snapshots, media rules."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from taskctx_records import RecordStore
from taskctx_records.source import RecordSource

from taskctx import (
    ContextBudget,
    ContextReadIntent,
    PluginHost,
    PolicyError,
    StaleReaderError,
    TaskContext,
)
from taskctx.model import CoverageStatus, OmissionReason
from taskctx.protocols import ContextSource
from taskctx.testing import SourceContract


def run(coroutine: Any) -> Any:
    """Run one coroutine."""
    return asyncio.run(coroutine)


@pytest.fixture
def store(store_root: Path | str) -> RecordStore:
    """A store with records of two tasks."""
    store = RecordStore(store_root)
    store.put(
        {"status": "failed", "reason": "upload times out after 30 s"},
        collection="observations",
        kind="review_result",
        scope={"task_id": "review-42"},
    )
    store.put(
        "the proxy closes idle connections", collection="notes", scope={"task_id": "review-42"}
    )
    store.put("another task's note", collection="notes", scope={"task_id": "other"})
    return store


def host() -> PluginHost:
    """A host with the records plugin registered in-process."""
    from taskctx_records import plugin

    host = PluginHost(allow=[])
    host.register(plugin, name="records")
    return host


class TestRecordSourceContract(SourceContract):
    """The record source keeps the kernel's source contract."""

    covers = "record_store"

    @pytest.fixture
    def source(self, store: RecordStore) -> ContextSource:
        """Records of task review-42."""
        return RecordSource(store, scope={"task_id": "review-42"})


def test_scope_limits_what_is_enumerated(store: RecordStore) -> None:
    """Only records in the scope are described."""
    source = RecordSource(store, scope={"task_id": "review-42"})
    page = run(source.async_enumerate_descriptors(__import__("taskctx").EnumerationRequest()))
    assert len(page.descriptors) == 2


def test_writes_outside_the_scope_do_not_move_the_revision(store: RecordStore) -> None:
    """A write to another task leaves this scope's revision alone; one inside moves it."""
    source = RecordSource(store, scope={"task_id": "review-42"})
    before = run(source.async_revision())
    store.put("unrelated", collection="notes", scope={"task_id": "other"})
    assert run(source.async_revision()) == before
    store.put("related", collection="notes", scope={"task_id": "review-42"})
    assert run(source.async_revision()) != before


def test_exact_reads_refuse_records_outside_the_scope(store: RecordStore) -> None:
    """A ref to another task's record is refused by policy."""
    other = store.query(scope={"task_id": "other"}).records[0]
    ctx = TaskContext("review-42", host=host())
    ctx.attach(RecordSource(store, scope={"task_id": "review-42"}), binding_id="records")
    with pytest.raises(PolicyError, match="outside this source's scope"):
        ctx.reader(consumer="a").read(
            ContextReadIntent(explicit_refs=[f"ctx://records/{other.id}"])
        )


def test_quickstart_records_through_a_reader(store: RecordStore) -> None:
    """The records of a task reach a package as text, JSON pretty-printed."""
    ctx = TaskContext("review-42", host=host())
    ctx.attach(store.source(scope={"task_id": "review-42"}), binding_id="review-records")
    package = ctx.reader(consumer="planner").read("failed review")
    contents = [b.content for b in package.blocks]
    assert any('"reason": "upload times out after 30 s"' in c for c in contents)
    cov = package.source_coverage["review-records"]
    assert (cov.considered, cov.delivered, cov.status) == (2, 2, CoverageStatus.COMPLETE)


def test_host_source_by_kind(store: RecordStore, store_root: Path | str) -> None:
    """host.source('record_store', root=...) opens the store read-only."""
    source = host().source("record_store", root=str(store_root), scope='{"task_id": "other"}')
    page = run(source.async_enumerate_descriptors(__import__("taskctx").EnumerationRequest()))
    assert len(page.descriptors) == 1


def test_pages_continue_the_pinned_snapshot_after_writes(store: RecordStore) -> None:
    """Later pages come from the pinned revision; new records appear in a fresh read only."""
    for n in range(6):
        store.put(f"note {n} " + "x" * 80, collection="notes", scope={"task_id": "review-42"})
    ctx = TaskContext("review-42", host=host())
    ctx.attach(store.source(scope={"task_id": "review-42"}), binding_id="records")
    reader = ctx.reader(consumer="a", budget=ContextBudget(max_chars=250, max_blocks=50))
    pages = [reader.read("note")]
    store.put("written after the pin", collection="notes", scope={"task_id": "review-42"})
    while pages[-1].has_more:
        pages.append(reader.read_next(pages[-1].cursor))
    contents = [b.content for p in pages for b in p.blocks]
    assert len(contents) == 8
    assert not any("after the pin" in c for c in contents)
    with pytest.raises(StaleReaderError):
        reader.read("note")  # a new read on the old snapshot is stale
    fresh = ctx.reader(consumer="a", budget=ContextBudget(max_chars=5000)).read("note")
    assert fresh.source_coverage["records"].considered == 9


def test_bytes_records_are_never_text(store: RecordStore) -> None:
    """Bytes content is reference only, never decoded into a block."""
    store.put(b"\x00\x01binary payload", collection="blobs", scope={"task_id": "review-42"})
    ctx = TaskContext("review-42", host=host())
    ctx.attach(
        store.source(scope={"task_id": "review-42"}, collections=["blobs"]), binding_id="blobs"
    )
    package = ctx.reader(consumer="a").read("x")
    assert not package.blocks
    assert [o.reason for o in package.omissions] == [OmissionReason.REFERENCE_ONLY]


def test_scope_check_compares_json_values_exactly(store_root: Path | str) -> None:
    """A record scoped {"task_id": true} is not readable through {"task_id": 1}."""
    from taskctx import ContextRef

    store = RecordStore(store_root)
    hidden = store.put("secret", collection="c", scope={"task_id": True})
    source = store.source(scope={"task_id": 1})
    with pytest.raises(PolicyError):
        run(source.async_read_exact(ContextRef(binding="records", path=hidden.id)))


def test_changes_come_from_the_journal(store: RecordStore, tmp_path: Path) -> None:
    """After one put and one delete in scope, a sync reads the journal, not every record."""

    ctx = TaskContext("review-42", host=host(), state_dir=tmp_path / "ctx")
    ctx.attach(store.source(scope={"task_id": "review-42"}), binding_id="records")
    first = ctx.sync_index()["records"]
    assert first.added == 2
    note = store.query(collection="notes", scope={"task_id": "review-42"}).records[0]
    store.put("fresh observation", collection="notes", scope={"task_id": "review-42"})
    store.delete(note.id)
    store.put("outside", collection="notes", scope={"task_id": "other"})
    report = ctx.sync_index()["records"]
    assert (report.mode, report.added, report.removed, report.unchanged) == ("journal", 1, 1, 1)
    package = ctx.reader(consumer="a").read("observation")
    assert {b.content for b in package.blocks} >= {"fresh observation"}
    assert package.source_coverage["records"].considered == 2
