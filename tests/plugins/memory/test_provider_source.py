"""The provider-mode `session_memory` source: contract, authorisation, honest revisions."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest
from taskctx_memory import (
    ProviderMemorySource,
    SessionMemorySource,
    Task,
    TaskStateBinding,
    TaskStateProviderError,
    WorkingState,
)
from taskctx_records import RecordStore

from taskctx import (
    ContextBudget,
    ContextReadIntent,
    ContextRef,
    EnumerationRequest,
    PluginHost,
    RunConfiguration,
    StaleReaderError,
    TaskContext,
)
from taskctx.errors import NotFoundError, PolicyError
from taskctx.model import CoverageOutcome, CoverageStatus, DescriptorPage, SourceDescriptor
from taskctx.protocols import ContextSource
from taskctx.testing import SourceContract, sha256_of
from tests.plugins.memory.test_provider import DictProvider, SQLiteProvider

T = TypeVar("T")


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run one coroutine."""
    return asyncio.run(coroutine)


def read(source: ContextSource, path: str, limit: int | None = None) -> str:
    """The text of an exact read of ``path``."""
    result = run(source.async_read_exact(ContextRef(binding="memory", path=path), limit))
    assert result.text is not None
    return result.text


def listing(source: ContextSource, **request: Any) -> DescriptorPage:
    """One page of descriptors."""
    return run(source.async_enumerate_descriptors(EnumerationRequest(**request)))


def everything(source: ContextSource) -> list[SourceDescriptor]:
    """Every descriptor, over all pages."""
    found: list[SourceDescriptor] = []
    cursor: str | None = None
    while True:
        page = listing(source, cursor=cursor)
        found += page.descriptors
        if page.next_cursor is None:
            return found
        cursor = page.next_cursor


def fill(s1: WorkingState, s2: WorkingState, shared: WorkingState) -> None:
    """Session s1 with two notes and two tasks, session s2 with a note, global memory a note."""
    s1.note_write("plan", "reproduce the upload timeout, then bisect the proxy config")
    s1.note_write("finding", "the proxy closes idle connections after 30 s")
    s1.task_add("bisect the proxy config", status="in_progress", notes="start at v1.4")
    s1.task_add("write the report")
    s2.note_write("plan", "another session's private plan")
    shared.note_write("style", "answer in short sentences")


def bound(provider: Any, session_id: str | None = "s1") -> WorkingState:
    """The working state of ``session_id`` (None: global memory) bound to ``provider``."""
    binding = TaskStateBinding(provider)
    if session_id is None:
        return WorkingState.global_memory(binding=binding)
    return WorkingState(binding=binding, session_id=session_id)


def sql(provider: SQLiteProvider, statement: str, *args: Any) -> None:
    """Change the provider's database directly, behind every working state's back."""
    db = sqlite3.connect(provider.path)
    with db:
        db.execute(statement, args)
    db.close()


@pytest.fixture
def provider(tmp_path: Path) -> SQLiteProvider:
    """A SQLite-file provider holding s1, s2 and global memory."""
    provider = SQLiteProvider(tmp_path / "provider.db")
    fill(bound(provider, "s1"), bound(provider, "s2"), bound(provider, None))
    return provider


@pytest.fixture
def source(provider: SQLiteProvider) -> ProviderMemorySource:
    """Session s1's source with global memory."""
    return ProviderMemorySource(TaskStateBinding(provider), "s1")


class TestProviderMemorySourceContract(SourceContract):
    """The provider-mode session memory source keeps the kernel's source contract."""

    covers = "session_memory"

    @pytest.fixture
    def source(self, provider: SQLiteProvider) -> ContextSource:
        """Session s1 with global memory, over the SQLite provider."""
        return ProviderMemorySource(TaskStateBinding(provider), "s1")


class BrokenProvider(DictProvider):
    """A dict provider whose loads raise ``broken`` when it is set."""

    def __init__(self) -> None:
        super().__init__()
        self.broken: Exception | None = None

    def load_notes(self, session_id: str | None) -> Mapping[str, str]:
        if self.broken is not None:
            raise self.broken
        return super().load_notes(session_id)

    def load_tasks(self, session_id: str | None) -> Sequence[Task]:
        if self.broken is not None:
            raise self.broken
        return super().load_tasks(session_id)


def test_it_is_a_context_source_without_history_or_identity(
    source: ProviderMemorySource,
) -> None:
    """A ContextSource of kind session_memory that serves no pinned revisions, keyed by
    the object (no identity: a binding's name is a label, not an identity)."""
    assert isinstance(source, ContextSource)
    assert source.kind == "session_memory"
    assert not source.serves_pinned_revisions
    assert source.identity is None
    assert source.describe() == {"provider": "provider", "session_id": "s1", "include_global": True}


def test_items_are_those_of_the_store_source(provider: SQLiteProvider, store: RecordStore) -> None:
    """The same notes and tasks give the same paths, titles, texts and descriptors in both
    modes; only the content version differs (store revision vs digest of the text)."""
    fill(WorkingState(store, "s1"), WorkingState(store, "s2"), WorkingState.global_memory(store))
    embedded = SessionMemorySource(store, "s1")
    remote = ProviderMemorySource(TaskStateBinding(provider), "s1")

    def shapes(source: ContextSource) -> dict[str, tuple[Any, ...]]:
        return {
            d.path: (d.title, d.media_type, d.size, d.chars, dict(d.metadata), read(source, d.path))
            for d in everything(source)
        }

    assert shapes(remote) == shapes(embedded)
    assert len(shapes(remote)) == 5


def test_lists_the_session_and_global_items_only(provider: SQLiteProvider) -> None:
    """Descriptors: the session's notes then tasks, then global notes; never another session's."""
    binding = TaskStateBinding(provider)
    paths = [d.path for d in everything(ProviderMemorySource(binding, "s1"))]
    assert paths == [
        "session/s1/notes/finding",
        "session/s1/notes/plan",
        "session/s1/tasks/t1",
        "session/s1/tasks/t2",
        "global/notes/style",
    ]
    alone = ProviderMemorySource(binding, "s1", include_global=False)
    assert not any(d.path.startswith("global/") for d in everything(alone))
    only_global = ProviderMemorySource(binding, None)
    assert [d.path for d in everything(only_global)] == ["global/notes/style"]
    with pytest.raises(ValueError, match="must include global"):
        ProviderMemorySource(binding, None, include_global=False)


def test_content_versions_are_digests_of_the_text(source: ProviderMemorySource) -> None:
    """Each item's content version is sha256 of the text it reads as."""
    for descriptor in everything(source):
        assert descriptor.content_version == sha256_of(read(source, descriptor.path))


def test_reads_ask_the_provider_every_time(
    source: ProviderMemorySource, provider: SQLiteProvider
) -> None:
    """A change made in the provider's database is read at once: there is no cache."""
    assert read(source, "session/s1/notes/plan").startswith("reproduce")
    sql(provider, "UPDATE notes SET v = 'changed elsewhere' WHERE s = 's:s1' AND k = 'plan'")
    assert read(source, "session/s1/notes/plan") == "changed elsewhere"
    sql(provider, "DELETE FROM tasks WHERE s = 's:s1' AND id = 't1'")
    with pytest.raises(NotFoundError):
        read(source, "session/s1/tasks/t1")
    assert "session/s1/tasks/t1" not in {d.path for d in everything(source)}


def test_revision_moves_only_for_changes_in_scope(provider: SQLiteProvider) -> None:
    """Another session's changes leave the revision; the session's, global memory's and
    changes made in the provider directly move it."""
    binding = TaskStateBinding(provider)
    source = ProviderMemorySource(binding, "s1")
    alone = ProviderMemorySource(binding, "s1", include_global=False)
    before, before_alone = run(source.async_revision()), run(alone.async_revision())
    other = bound(provider, "s2")
    other.note_write("x", "y")
    other.task_add("theirs")
    other.note_delete("plan")
    assert run(source.async_revision()) == before
    bound(provider, None).note_write("tone", "calm")
    after_global = run(source.async_revision())
    assert after_global != before
    assert run(alone.async_revision()) == before_alone
    bound(provider, "s1").task_update("t2", status="done")
    after_task = run(source.async_revision())
    assert after_task != after_global
    assert run(alone.async_revision()) != before_alone
    sql(provider, "UPDATE notes SET v = 'edited' WHERE s = 's:s1' AND k = 'finding'")
    assert run(source.async_revision()) != after_task


def test_a_page_of_a_passed_revision_names_the_current_one(
    source: ProviderMemorySource, provider: SQLiteProvider
) -> None:
    """Asked for a revision that has passed, a page says which revision it is of."""
    first = listing(source, page_size=1)
    bound(provider, "s1").note_write("late", "after the first page")
    later = listing(source, page_size=1, cursor=first.next_cursor, revision=first.revision)
    assert later.revision != first.revision
    assert later.revision == run(source.async_revision())


def test_another_sessions_paths_are_refused_by_policy(source: ProviderMemorySource) -> None:
    """A ref to s2's note (existing or not) is a PolicyError; so is global memory when
    the source leaves it out."""
    for path in ("session/s2/notes/plan", "session/s2/notes/no-such-note", "session/s2/tasks/t1"):
        with pytest.raises(PolicyError, match="session 's2'"):
            read(source, path)
    alone = ProviderMemorySource(source.binding, "s1", include_global=False)
    with pytest.raises(PolicyError, match="global memory"):
        read(alone, "global/notes/style")


@pytest.mark.parametrize(
    "path",
    ["session/s1/notes/nope", "session/s1/tasks/t9", "global/notes/nope", "plan", "session/s1",
     "session/s1/files/plan", "session//notes/plan", "global/notes/", "session/s1/notes/\x01"],
)  # fmt: skip
def test_unknown_refs_are_not_found(source: ProviderMemorySource, path: str) -> None:
    """Paths of no item, or of no shape the source knows, raise NotFoundError."""
    with pytest.raises(NotFoundError):
        read(source, path)


def test_reads_are_bounded_with_the_whole_digest(source: ProviderMemorySource) -> None:
    """A read with a limit is cut there and keeps the digest of the whole text."""
    path = "session/s1/tasks/t1"
    whole = run(source.async_read_exact(ContextRef(binding="memory", path=path)))
    cut = run(source.async_read_exact(ContextRef(binding="memory", path=path), 7))
    assert (cut.text, cut.complete, cut.digest) == ("bisect ", False, whole.digest)
    assert whole.text == "bisect the proxy config\nstatus: in_progress\n\nstart at v1.4\n"


def test_odd_session_ids_and_keys_round_trip_through_refs(tmp_path: Path) -> None:
    """Session ids with slashes and keys with markup survive the canonical ref form."""
    provider = DictProvider()
    state = bound(provider, "team/a b?#")
    state.note_write('a/b "c" <d>?#', "value")
    source = state.source()
    (descriptor,) = everything(source)
    ref = ContextRef.parse(str(ContextRef(binding="memory", path=descriptor.path)))
    assert read(source, ref.path) == "value"
    with pytest.raises(PolicyError):
        read(bound(provider, "team").source(), descriptor.path)


def test_working_state_source_in_provider_mode(provider: SQLiteProvider) -> None:
    """WorkingState.source() in provider mode is the provider source; global memory's shows
    global memory only, whatever include_global says."""
    source = bound(provider, "s1").source()
    assert isinstance(source, ProviderMemorySource)
    assert (source.session_id, source.include_global) == ("s1", True)
    alone = bound(provider, "s1").source(include_global=False)
    assert len(everything(alone)) == 4
    shared = bound(provider, None).source(include_global=False)
    assert [d.path for d in everything(shared)] == ["global/notes/style"]


def test_read_through_a_task_context_finds_a_note_by_query(source: ProviderMemorySource) -> None:
    """A reader with a lexical index finds the items about the proxy, never s2's, and says
    its coverage is complete."""
    ctx = TaskContext("review-42", host=PluginHost(allow=["taskctx-fts"]))
    ctx.attach(source, binding_id="memory")
    package = ctx.reader(consumer="x").read("proxy")
    paths = sorted(b.ref.path for b in package.blocks)
    assert paths == ["session/s1/notes/finding", "session/s1/notes/plan", "session/s1/tasks/t1"]
    contents = [b.content for b in package.blocks]
    assert "the proxy closes idle connections after 30 s" in contents
    assert not any("another session" in c for c in contents)
    coverage = package.source_coverage["memory"]
    assert (coverage.considered, coverage.delivered, coverage.status) == (
        3,
        3,
        CoverageStatus.COMPLETE,
    )
    assert coverage.revision == run(source.async_revision())
    assert {b.source_kind for b in package.blocks} == {"session_memory"}


def test_reader_refuses_an_explicit_ref_to_another_session(source: ProviderMemorySource) -> None:
    """An explicit ref to s2's note through the reader is refused by policy."""
    ctx = TaskContext("review-42", host=PluginHost(allow=[]))
    ctx.attach(source, binding_id="memory")
    intent = ContextReadIntent(explicit_refs=["ctx://memory/session/s2/notes/plan"])
    with pytest.raises(PolicyError):
        ctx.reader(consumer="x").read(intent)


def test_read_next_after_a_provider_change_is_stale(
    source: ProviderMemorySource, provider: SQLiteProvider
) -> None:
    """Another session's change leaves the next page readable; a change in scope (here made
    in the provider directly) makes read_next raise StaleReaderError, and a new reader
    sees the change."""
    state = bound(provider, "s1")
    for n in range(6):
        state.note_write(f"note-{n}", f"note {n} " + "x" * 80)
    ctx = TaskContext("review-42", host=PluginHost(allow=[]))
    ctx.attach(source, binding_id="memory")
    reader = ctx.reader(consumer="a", budget=ContextBudget(max_chars=250, max_blocks=50))
    first = reader.read("note")
    assert first.has_more
    bound(provider, "s2").note_write("elsewhere", "not in this source's scope")
    second = reader.read_next(first.cursor)
    assert second.blocks
    assert second.has_more
    sql(provider, "INSERT INTO notes VALUES ('s:s1', 'late', 'written after the pin')")
    with pytest.raises(StaleReaderError, match="'memory' moved"):
        reader.read_next(second.cursor)
    fresh = ctx.reader(consumer="b", budget=ContextBudget(max_chars=50_000)).read("note")
    assert "written after the pin" in [b.content for b in fresh.blocks]


def test_a_provider_failing_during_enumeration_is_unavailable() -> None:
    """A provider that raises while the reader enumerates it makes that binding unavailable,
    with an error diagnostic naming the cause; the read itself does not fail."""
    provider = BrokenProvider()
    bound(provider, "s1").note_write("plan", "the proxy plan")
    ctx = TaskContext("review-42", host=PluginHost(allow=[]))
    ctx.attach(ProviderMemorySource(TaskStateBinding(provider, name="crm"), "s1"), "memory")
    ctx.put("information", "the proxy closes idle connections")
    reader = ctx.reader(consumer="x")
    reader.pin()  # the provider answered the revision; it breaks before the enumeration
    provider.broken = OSError("disk on fire")
    package = reader.read("proxy")
    coverage = package.source_coverage["memory"]
    assert (coverage.outcome, coverage.status) == (CoverageOutcome.UNAVAILABLE, "unknown")
    assert "source_unavailable" in coverage.reasons
    (diagnostic,) = [d for d in package.diagnostics if d.binding_id == "memory"]
    assert diagnostic.code == "source_unavailable"
    assert "TaskStateProviderError" in diagnostic.message
    assert "'crm' failed to load notes" in diagnostic.message
    assert "disk on fire" in diagnostic.message
    assert "when the snapshot was pinned" not in diagnostic.message
    assert [b.content for b in package.blocks] == ["the proxy closes idle connections"]
    provider.broken = None  # nothing was cached: the next reader reads the provider again
    again = ctx.reader(consumer="y").read("proxy")
    assert "the proxy plan" in [b.content for b in again.blocks]
    assert again.source_coverage["memory"].outcome is CoverageOutcome.MATCHED


def test_a_provider_failing_from_the_start_is_unavailable() -> None:
    """A provider that cannot answer the revision is reported unavailable when pinned."""
    provider = BrokenProvider()
    provider.broken = ConnectionError("provider down")
    ctx = TaskContext("review-42", host=PluginHost(allow=[]))
    ctx.attach(ProviderMemorySource(TaskStateBinding(provider), "s1"), "memory")
    package = ctx.reader(consumer="x").read("proxy")
    assert package.source_coverage["memory"].outcome is CoverageOutcome.UNAVAILABLE
    (diagnostic,) = package.diagnostics
    assert diagnostic.code == "source_unavailable"
    assert "when the snapshot was pinned" in diagnostic.message
    assert "provider down" in diagnostic.message


def test_provider_failures_are_raised_not_swallowed() -> None:
    """Revision, enumeration and exact reads raise TaskStateProviderError with the cause."""
    provider = BrokenProvider()
    provider.broken = OSError("disk on fire")
    source = ProviderMemorySource(TaskStateBinding(provider), "s1")
    attempts: list[Coroutine[Any, Any, object]] = [
        source.async_revision(),
        source.async_enumerate_descriptors(EnumerationRequest()),
        source.async_read_exact(ContextRef(binding="memory", path="session/s1/notes/plan")),
    ]
    for attempt in attempts:
        with pytest.raises(TaskStateProviderError, match="disk on fire") as error:
            run(attempt)
        assert isinstance(error.value.__cause__, OSError)


def test_a_provider_returning_a_task_id_twice_is_reported() -> None:
    """Two tasks with one id would be two items at one path: a TaskStateProviderError."""

    class Twice(DictProvider):
        def load_tasks(self, session_id: str | None) -> Sequence[Task]:
            return [Task(id="t1", title="one"), Task(id="t1", title="two")]

    source = ProviderMemorySource(TaskStateBinding(Twice()), "s1")
    with pytest.raises(TaskStateProviderError, match=r"more than once.*'t1'"):
        run(source.async_revision())
    with pytest.raises(TaskStateProviderError, match="more than once"):
        listing(source)


class GovernedProvider(DictProvider):
    """A provider that hands back a copy bound to the run's configuration."""

    def __init__(self, configuration: RunConfiguration | None = None) -> None:
        super().__init__()
        self.configuration = configuration

    def with_configuration(self, configuration: RunConfiguration) -> GovernedProvider:
        """A provider that would consult ``configuration`` before any request."""
        governed = GovernedProvider(configuration)
        governed.notes, governed.tasks = self.notes, self.tasks
        return governed


def test_a_provider_is_governed_by_the_context_configuration(tmp_path: Path) -> None:
    """Under allowed_hosts, a provider without with_configuration is refused; one with it is
    replaced by what it returns (issue 14 §5)."""
    configuration = RunConfiguration(allowed_hosts=["tasks.example.org"])
    ctx = TaskContext(
        "t", host=PluginHost(allow=[]), state_dir=tmp_path / "state", configuration=configuration
    )
    plain = ProviderMemorySource(TaskStateBinding(DictProvider(), "dict"), "s1")
    with pytest.raises(PolicyError, match=r"binding 'memory'.*provider 'dict'"):
        ctx.attach(plain, binding_id="memory")
    assert ctx.bindings == {}
    governed = ProviderMemorySource(TaskStateBinding(GovernedProvider(), "remote"), "s1")
    ctx.attach(governed, binding_id="memory")
    attached = ctx.bindings["memory"].source
    assert isinstance(attached, ProviderMemorySource)
    provider = attached.binding.provider
    assert isinstance(provider, GovernedProvider)
    assert provider.configuration is configuration
    open_ctx = TaskContext("t", host=PluginHost(allow=[]), state_dir=tmp_path / "state")
    open_ctx.attach(plain, binding_id="memory")
    assert open_ctx.bindings["memory"].source is plain
