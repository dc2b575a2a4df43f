"""The `session_memory` source: contract, authorisation, scoped revisions, pinned reads."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest
from taskctx_memory import ProviderMemorySource, SessionMemorySource, WorkingState
from taskctx_records import RecordStore

from taskctx import (
    ContextBudget,
    ContextReadIntent,
    ContextRef,
    EnumerationRequest,
    PluginHost,
    StaleReaderError,
    TaskContext,
)
from taskctx.errors import NotFoundError, PolicyError
from taskctx.model import CoverageStatus, DescriptorPage
from taskctx.protocols import ContextSource
from taskctx.testing import SourceContract

T = TypeVar("T")


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run one coroutine."""
    return asyncio.run(coroutine)


def host() -> PluginHost:
    """A host with the memory plugin registered in-process."""
    from taskctx_memory import plugin

    host = PluginHost(allow=[])
    host.register(plugin, name="memory")
    return host


def read(
    source: SessionMemorySource | ProviderMemorySource, path: str, version: str | None = None
) -> str:
    """The text of an exact read of ``path``."""
    result = run(source.async_read_exact(ContextRef(binding="memory", path=path, version=version)))
    assert result.text is not None
    return result.text


def listing(source: SessionMemorySource | ProviderMemorySource, **request: Any) -> DescriptorPage:
    """One page of descriptors."""
    return run(source.async_enumerate_descriptors(EnumerationRequest(**request)))


@pytest.fixture
def filled(store: RecordStore) -> RecordStore:
    """Session s1 with two notes and two tasks, session s2 with a note, global memory a note."""
    one = WorkingState(store, "s1")
    one.note_write("plan", "reproduce the upload timeout, then bisect the proxy config")
    one.note_write("finding", "the proxy closes idle connections after 30 s")
    one.task_add("bisect the proxy config", status="in_progress", notes="start at v1.4")
    one.task_add("write the report")
    WorkingState(store, "s2").note_write("plan", "another session's private plan")
    WorkingState.global_memory(store).note_write("style", "answer in short sentences")
    return store


class TestSessionMemorySourceContract(SourceContract):
    """The session memory source keeps the kernel's source contract."""

    covers = "session_memory"

    @pytest.fixture
    def source(self, filled: RecordStore) -> ContextSource:
        """Session s1 with global memory."""
        return SessionMemorySource(filled, "s1")


def test_it_is_a_context_source(filled: RecordStore) -> None:
    """The source satisfies the ContextSource protocol and names its kind."""
    source = SessionMemorySource(filled, "s1")
    assert isinstance(source, ContextSource)
    assert source.kind == "session_memory"
    assert source.serves_pinned_revisions


def test_lists_the_session_and_global_items_only(filled: RecordStore) -> None:
    """Descriptors: the session's notes and tasks, then global notes; never another session's."""
    source = SessionMemorySource(filled, "s1")
    paths = sorted(d.path for d in listing(source).descriptors)
    assert paths == [
        "global/notes/style",
        "session/s1/notes/finding",
        "session/s1/notes/plan",
        "session/s1/tasks/t1",
        "session/s1/tasks/t2",
    ]
    alone = SessionMemorySource(filled, "s1", include_global=False)
    assert not any(d.path.startswith("global/") for d in listing(alone).descriptors)
    only_global = SessionMemorySource(filled, None)
    assert [d.path for d in listing(only_global).descriptors] == ["global/notes/style"]


def test_reads_are_whole_values_and_task_texts(filled: RecordStore) -> None:
    """A note reads as its value; a task as title, status and notes."""
    source = SessionMemorySource(filled, "s1")
    assert (
        read(source, "session/s1/notes/finding") == "the proxy closes idle connections after 30 s"
    )
    assert read(source, "session/s1/tasks/t1") == (
        "bisect the proxy config\nstatus: in_progress\n\nstart at v1.4\n"
    )
    assert read(source, "global/notes/style") == "answer in short sentences"


def test_another_sessions_note_is_refused_by_policy(filled: RecordStore) -> None:
    """A ref to s2's note (existing or not) is a PolicyError for s1's source."""
    source = SessionMemorySource(filled, "s1")
    for path in ("session/s2/notes/plan", "session/s2/notes/no-such-note", "session/s2/tasks/t1"):
        with pytest.raises(PolicyError, match="session 's2'"):
            read(source, path)
    alone = SessionMemorySource(filled, "s1", include_global=False)
    with pytest.raises(PolicyError, match="global memory"):
        read(alone, "global/notes/style")


@pytest.mark.parametrize(
    "path",
    ["session/s1/notes/nope", "session/s1/tasks/t9", "global/notes/nope", "plan", "session/s1",
     "session/s1/files/plan", "session//notes/plan", "global/notes/"],
)  # fmt: skip
def test_unknown_refs_are_not_found(filled: RecordStore, path: str) -> None:
    """Paths of no item, or of no shape the source knows, raise NotFoundError."""
    with pytest.raises(NotFoundError):
        read(SessionMemorySource(filled, "s1"), path)


def test_deleted_items_are_not_found(filled: RecordStore) -> None:
    """A deleted note is gone from listings and exact reads."""
    WorkingState(filled, "s1").note_delete("plan")
    source = SessionMemorySource(filled, "s1")
    with pytest.raises(NotFoundError):
        read(source, "session/s1/notes/plan")
    assert "session/s1/notes/plan" not in {d.path for d in listing(source).descriptors}


def test_odd_session_ids_and_keys_round_trip_through_refs(store: RecordStore) -> None:
    """Session ids with slashes and keys with markup survive the canonical ref form."""
    state = WorkingState(store, "team/a b?#")
    state.note_write('a/b "c" <d>?#', "value")
    source = state.source()
    (descriptor,) = listing(source).descriptors
    ref = ContextRef.parse(str(ContextRef(binding="memory", path=descriptor.path)))
    assert read(source, ref.path) == "value"
    with pytest.raises(PolicyError):
        read(WorkingState(store, "team").source(), descriptor.path)


def test_revision_moves_only_for_visible_writes(filled: RecordStore) -> None:
    """Writes to another session leave the revision; the session's or global writes move it."""
    source = SessionMemorySource(filled, "s1")
    alone = SessionMemorySource(filled, "s1", include_global=False)
    before, before_alone = run(source.async_revision()), run(alone.async_revision())
    other = WorkingState(filled, "s2")
    other.note_write("x", "y")
    other.task_add("theirs")
    other.note_delete("plan")
    filled.put("unrelated record", collection="notes", scope={"session_id": "s1"})
    assert run(source.async_revision()) == before
    WorkingState.global_memory(filled).note_write("tone", "calm")
    after_global = run(source.async_revision())
    assert after_global != before
    assert run(alone.async_revision()) == before_alone
    WorkingState(filled, "s1").task_update("t2", status="done")
    assert run(source.async_revision()) != after_global
    assert run(alone.async_revision()) != before_alone


def test_reads_at_a_pinned_version_are_as_of(filled: RecordStore) -> None:
    """A ref carrying an earlier content version reads the value as it was then."""
    source = SessionMemorySource(filled, "s1")
    old = {d.path: d for d in listing(source).descriptors}["session/s1/notes/plan"]
    WorkingState(filled, "s1").note_write("plan", "a new plan")
    assert read(source, "session/s1/notes/plan") == "a new plan"
    then = read(source, "session/s1/notes/plan", version=old.content_version)
    assert then.startswith("reproduce the upload timeout")
    pinned = listing(source, revision=listing(source).revision)
    WorkingState(filled, "s1").note_write("later", "x")
    assert "session/s1/notes/later" not in {d.path for d in pinned.descriptors}


def test_enumeration_at_an_old_revision_continues_the_snapshot(filled: RecordStore) -> None:
    """Paging one at a time at a pinned revision ignores writes made after the pin."""
    source = SessionMemorySource(filled, "s1")
    first = listing(source, page_size=1)
    WorkingState(filled, "s1").note_write("new", "after the pin")
    WorkingState.global_memory(filled).note_write("new-global", "after the pin")
    paths = [d.path for d in first.descriptors]
    cursor = first.next_cursor
    while cursor is not None:
        page = listing(source, page_size=1, cursor=cursor, revision=first.revision)
        assert page.revision == first.revision
        paths += [d.path for d in page.descriptors]
        cursor = page.next_cursor
    assert len(paths) == 5
    assert not any("new" in p for p in paths)


def test_read_through_a_task_context(filled: RecordStore) -> None:
    """A reader delivers session and global memory with complete coverage, never s2's."""
    ctx = TaskContext("review-42", host=host())
    ctx.attach(SessionMemorySource(filled, "s1"), binding_id="memory")
    package = ctx.reader(consumer="x").read("proxy")
    contents = [b.content for b in package.blocks]
    assert "the proxy closes idle connections after 30 s" in contents
    assert "answer in short sentences" in contents
    assert not any("another session" in c for c in contents)
    coverage = package.source_coverage["memory"]
    assert (coverage.considered, coverage.delivered, coverage.status) == (
        5,
        5,
        CoverageStatus.COMPLETE,
    )
    assert {b.source_kind for b in package.blocks} == {"session_memory"}


def test_reader_refuses_an_explicit_ref_to_another_session(filled: RecordStore) -> None:
    """An explicit ref to s2's note through the reader is refused by policy."""
    ctx = TaskContext("review-42", host=host())
    ctx.attach(SessionMemorySource(filled, "s1"), binding_id="memory")
    intent = ContextReadIntent(explicit_refs=["ctx://memory/session/s2/notes/plan"])
    with pytest.raises(PolicyError):
        ctx.reader(consumer="x").read(intent)


def test_reader_pages_continue_the_pinned_snapshot(filled: RecordStore) -> None:
    """Later pages come from the pinned revision; a new read on the old snapshot is stale."""
    state = WorkingState(filled, "s1")
    for n in range(6):
        state.note_write(f"note-{n}", f"note {n} " + "x" * 80)
    ctx = TaskContext("review-42", host=host())
    ctx.attach(state.source(), binding_id="memory")
    reader = ctx.reader(consumer="a", budget=ContextBudget(max_chars=250, max_blocks=50))
    pages = [reader.read("note")]
    state.note_write("late", "written after the pin")
    while pages[-1].has_more:
        pages.append(reader.read_next(pages[-1].cursor))
    contents = [b.content for p in pages for b in p.blocks]
    assert len(contents) == 11
    assert not any("after the pin" in c for c in contents)
    with pytest.raises(StaleReaderError):
        reader.read("note")
    fresh = ctx.reader(consumer="a", budget=ContextBudget(max_chars=5000)).read("note")
    assert fresh.source_coverage["memory"].considered == 12


def test_index_sync_reads_the_journal(filled: RecordStore, tmp_path: Path) -> None:
    """After a write and a delete in scope (and one outside), a sync is incremental."""
    ctx = TaskContext("review-42", host=host(), state_dir=tmp_path / "ctx")
    ctx.attach(SessionMemorySource(filled, "s1"), binding_id="memory")
    assert ctx.sync_index()["memory"].added == 5
    state = WorkingState(filled, "s1")
    state.note_write("fresh", "a fresh observation")
    state.note_delete("plan")
    WorkingState(filled, "s2").note_write("elsewhere", "not ours")
    report = ctx.sync_index()["memory"]
    assert (report.mode, report.added, report.removed, report.unchanged) == ("journal", 1, 1, 4)


def test_host_source_by_kind(filled: RecordStore) -> None:
    """host.source('session_memory', ...) opens the store read-only; CLI strings work."""
    source = host().source(
        "session_memory", root=str(filled.root), session_id="s1", include_global="false"
    )
    assert isinstance(source, SessionMemorySource)
    assert source.store.mode == "read_only"
    assert not source.include_global
    assert len(listing(source).descriptors) == 4
    with pytest.raises(ValueError, match="include_global"):
        host().source(
            "session_memory", root=str(filled.root), session_id="s1", include_global="maybe"
        )


def test_working_state_source_convenience(filled: RecordStore) -> None:
    """WorkingState.source() is the session's source; global memory's shows global only."""
    assert (
        WorkingState(filled, "s1").source().identity == SessionMemorySource(filled, "s1").identity
    )
    shared = WorkingState.global_memory(filled).source()
    assert [d.path for d in listing(shared).descriptors] == ["global/notes/style"]


def test_identity_differs_by_session_and_global(filled: RecordStore) -> None:
    """Index partitions of different sessions or global settings never share an identity."""
    identities = {
        SessionMemorySource(filled, "s1").identity,
        SessionMemorySource(filled, "s2").identity,
        SessionMemorySource(filled, "s1", include_global=False).identity,
        SessionMemorySource(filled, None).identity,
    }
    assert len(identities) == 4
    assert SessionMemorySource(filled, "s1").describe() == {
        "root": str(filled.root),
        "session_id": "s1",
        "include_global": True,
    }
