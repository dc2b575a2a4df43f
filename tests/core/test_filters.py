"""Structural filters name what is attached: source kinds and binding ids (issue 14 §1)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from taskctx import (
    ContextBudget,
    ContextReadIntent,
    PluginHost,
    TaskContext,
    UnknownBindingError,
    UnknownSourceKindError,
)
from taskctx.cli import main
from taskctx.errors import TaskCtxError
from taskctx.model import (
    ContextFilters,
    ContextPackage,
    CoverageOutcome,
    CoverageReason,
    CoverageStatus,
)
from taskctx.testing import MemorySource
from tests.core.sources import numbered


class NotesSource(MemorySource):
    """A memory source of another kind, to filter on."""

    kind = "notes"


@pytest.fixture
def host() -> PluginHost:
    """A host with the kernel built-ins only."""
    return PluginHost(allow=[])


def _context(host: PluginHost) -> tuple[TaskContext, MemorySource, NotesSource]:
    ctx = TaskContext("task-f", host=host)
    memory = MemorySource(numbered(3))
    notes = NotesSource({"n1.txt": "first note", "n2.txt": "second note"})
    ctx.attach(memory, binding_id="mem")
    ctx.attach(notes, binding_id="notes")
    ctx.put(role="instruction", content="review the notes")
    return ctx, memory, notes


def test_source_kinds_keeps_listed_kinds_and_reports_the_rest_not_searched(
    host: PluginHost,
) -> None:
    """Bindings of kinds not listed are not_searched with source_kind_excluded, never absent."""
    ctx, memory, _ = _context(host)
    intent = ContextReadIntent(filters={"source_kinds": ["notes"]})
    package = ctx.reader(consumer="a").read(intent)
    assert {b.ref.binding for b in package.blocks} == {"_direct", "notes"}
    assert set(package.source_coverage) == {"_direct", "mem", "notes"}
    excluded = package.source_coverage["mem"]
    assert excluded.outcome is CoverageOutcome.NOT_SEARCHED
    assert excluded.status is CoverageStatus.UNKNOWN
    assert excluded.considered is None
    assert excluded.reasons == (CoverageReason.SOURCE_KIND_EXCLUDED.value,)
    assert package.source_coverage["notes"].status is CoverageStatus.COMPLETE
    assert memory.enumerations == 0
    assert 'reasons="source_kind_excluded"' in package.render()


def test_source_kinds_and_bindings_combine(host: PluginHost) -> None:
    """A binding must pass both filters: listed by id and of a listed kind."""
    ctx, _, _ = _context(host)
    intent = ContextReadIntent(filters={"bindings": ["mem"], "source_kinds": ["notes"]})
    package = ctx.reader(consumer="a").read(intent)
    assert package.source_coverage["mem"].reasons == (CoverageReason.SOURCE_KIND_EXCLUDED.value,)
    assert package.source_coverage["notes"].reasons == (CoverageReason.BINDING_EXCLUDED.value,)
    assert [b.ref.binding for b in package.blocks] == ["_direct"]


@pytest.mark.parametrize(
    "kinds",
    [("record_stor",), ("notes", "nope"), ("Memory",), ("direct",), ("task_workspace",)],
)
def test_unknown_source_kind_raises_before_any_enumeration(
    host: PluginHost, kinds: tuple[str, ...]
) -> None:
    """A kind no binding has raises UnknownSourceKindError naming the attached kinds, and no
    source was enumerated or even asked its revision."""
    ctx, memory, notes = _context(host)
    revision_calls: list[str] = []
    original = memory.async_revision

    async def counting_revision() -> str:
        revision_calls.append("mem")
        return await original()

    memory.async_revision = counting_revision  # type: ignore[method-assign]
    reader = ctx.reader(consumer="a")
    with pytest.raises(UnknownSourceKindError) as caught:
        reader.read(ContextReadIntent(filters={"source_kinds": kinds}))
    message = str(caught.value)
    assert "'memory'" in message
    assert "'notes'" in message
    assert all(repr(kind) in message for kind in kinds if kind != "notes")
    assert memory.enumerations == 0
    assert notes.enumerations == 0
    assert revision_calls == []
    assert reader.snapshot is None


def test_unknown_source_kind_with_nothing_attached(host: PluginHost) -> None:
    """With no binding at all, any kind is unknown and the message says none is attached."""
    ctx = TaskContext("task-f", host=host)
    ctx.put(role="instruction", content="x")
    with pytest.raises(UnknownSourceKindError, match="attached kinds: none"):
        ctx.reader(consumer="a").read(ContextReadIntent(filters={"source_kinds": ["memory"]}))


@pytest.mark.parametrize("bindings", [("mem", "nots"), ("MEM",), ("_direct",), ("other",)])
def test_unknown_binding_id_raises_naming_attached_ids(
    host: PluginHost, bindings: tuple[str, ...]
) -> None:
    """A binding id the context lacks raises UnknownBindingError (a TaskCtxError and a
    LookupError) naming the attached ids, before any enumeration."""
    ctx, memory, notes = _context(host)
    with pytest.raises(UnknownBindingError) as caught:
        ctx.reader(consumer="a").read(ContextReadIntent(filters={"bindings": bindings}))
    message = str(caught.value)
    assert "attached: 'mem', 'notes'" in message
    assert all(repr(b) in message for b in bindings if b not in ("mem", "notes"))
    assert isinstance(caught.value, TaskCtxError)
    assert isinstance(caught.value, LookupError)
    assert memory.enumerations == 0
    assert notes.enumerations == 0


@pytest.mark.parametrize("field", ["bindings", "source_kinds"])
def test_empty_filter_tuple_is_refused(field: str) -> None:
    """An empty tuple would select no binding: it is a validation error, not a silent no-op."""
    with pytest.raises(ValidationError, match="omit the filter"):
        ContextFilters.model_validate({field: []})
    assert getattr(ContextFilters.model_validate({field: None}), field) is None


def test_read_next_checks_filters_against_the_context(host: PluginHost) -> None:
    """A cursor whose filters name a binding the context no longer has raises the same error
    (the cursor was issued for another context shape: not a silent empty page)."""
    ctx = TaskContext("task-f", host=host)
    ctx.attach(MemorySource(numbered(6)), binding_id="mem")
    ctx.attach(NotesSource({"n.txt": "note"}), binding_id="notes")
    reader = ctx.reader(consumer="a", budget=ContextBudget(max_blocks=2))
    first = reader.read(ContextReadIntent(filters={"bindings": ["mem"]}))
    assert first.has_more
    assert first.cursor is not None
    second = reader.read_next(first.cursor)
    assert {b.ref.binding for b in second.blocks} == {"mem"}
    other = TaskContext("task-f", host=host, state_dir=ctx.state_dir)
    other.attach(NotesSource({"n.txt": "note"}), binding_id="notes")
    with pytest.raises(UnknownBindingError, match="attached: 'notes'"):
        other.reader(consumer="a", budget=ContextBudget(max_blocks=2)).read_next(first.cursor)


@pytest.mark.usefixtures("with_memory_kind")
def test_cli_read_source_kind_and_binding_filters() -> None:
    """`taskctx read --source-kind/--binding` filter by what is attached; an unknown kind or
    binding id is a clear error naming what is attached."""
    runner = CliRunner()
    base = ["read", "--put", "instruction=hi", "--source", "memory:a.txt=alpha"]
    ok = runner.invoke(main, [*base, "--source-kind", "memory", "--json"])
    assert ok.exit_code == 0, ok.output
    package = ContextPackage.model_validate_json(ok.output)
    assert [b.content for b in package.blocks] == ["hi", "alpha"]
    (binding_id,) = (b for b in package.source_coverage if b != "_direct")
    by_id = runner.invoke(main, [*base, "--binding", binding_id, "--json"])
    assert by_id.exit_code == 0, by_id.output
    kind = runner.invoke(main, [*base, "--source-kind", "record_store"])
    assert kind.exit_code != 0
    assert "'record_store'" in kind.output
    assert "attached kinds: 'memory'" in kind.output
    bad = runner.invoke(main, [*base, "--binding", "files"])
    assert bad.exit_code != 0
    assert "'files'" in bad.output
    assert f"attached: {binding_id!r}" in bad.output
