"""TaskContext structure: entries, bindings, revision, index choice, catalog."""

from __future__ import annotations

import pytest

from taskctx import PluginHost, PolicyError, TaskContext, TaskCtxError
from taskctx.errors import NotInstalledError
from taskctx.model import ContextRef
from taskctx.testing import MemorySource


@pytest.fixture
def ctx() -> TaskContext:
    """An empty context on a built-ins-only host."""
    return TaskContext("t", host=PluginHost(allow=[]))


def test_put_returns_a_canonical_ref(ctx: TaskContext) -> None:
    """put returns a _direct ref that parses back."""
    ref = ctx.put(role="instruction", content="x", required=True)
    assert ContextRef.parse(str(ref)) == ref
    assert ref.binding == "_direct"


def test_revision_moves_with_structure_only(ctx: TaskContext) -> None:
    """The revision changes on put/attach/remove/configure_index and nowhere else."""
    seen = [ctx.revision]
    ref = ctx.put(role="information", content="a")
    seen.append(ctx.revision)
    source = MemorySource({"a.txt": "a"})
    ctx.attach(source, binding_id="mem")
    seen.append(ctx.revision)
    source.put("b.txt", "b")  # source data is not structure
    assert ctx.revision == seen[-1]
    ctx.remove(ref)
    seen.append(ctx.revision)
    ctx.remove("mem")
    seen.append(ctx.revision)
    assert len(set(seen)) == len(seen) - 1  # back to empty equals the start
    assert seen[-1] == seen[0]


@pytest.mark.parametrize("binding_id", ["has space", "../up", "_direct", "a/b", "x" * 200])
def test_invalid_binding_ids_are_refused(ctx: TaskContext, binding_id: str) -> None:
    """Binding ids are short names of letters, digits, '_', '.', '-'."""
    with pytest.raises(PolicyError, match="invalid binding id"):
        ctx.attach(MemorySource(), binding_id=binding_id)


def test_duplicate_binding_and_entry_are_refused(ctx: TaskContext) -> None:
    """Attaching twice under one id, or reusing an entry id, is an error."""
    ctx.attach(MemorySource(), binding_id="m")
    with pytest.raises(TaskCtxError, match="already attached"):
        ctx.attach(MemorySource(), binding_id="m")
    ctx.put(role="r", content="x", entry_id="e")
    with pytest.raises(TaskCtxError, match="already exists"):
        ctx.put(role="r", content="y", entry_id="e")


def test_attach_refuses_non_sources(ctx: TaskContext) -> None:
    """Something that is not a ContextSource cannot be attached."""
    with pytest.raises(TaskCtxError, match="not a ContextSource"):
        ctx.attach(object(), binding_id="x")  # type: ignore[arg-type]


def test_remove_unknown_target_is_an_error(ctx: TaskContext) -> None:
    """Removing something that is not there names it."""
    with pytest.raises(TaskCtxError, match="nothing"):
        ctx.remove("nothing")


def test_index_defaults_to_structural_without_lexical_provider(ctx: TaskContext) -> None:
    """With no lexical provider installed the structural provider is used."""
    assert ctx.index_provider.name == "structural"
    with pytest.raises(NotInstalledError):
        ctx.configure_index(provider="no-such-provider")


def test_source_catalog_lists_bindings(ctx: TaskContext) -> None:
    """The catalog names each binding's kind, identity and role without reading it."""
    ctx.attach(MemorySource(identity="mem:1"), binding_id="m", role="example")
    (entry,) = ctx.source_catalog()
    assert (entry.binding_id, entry.kind, entry.identity, entry.role) == (
        "m",
        "memory",
        "mem:1",
        "example",
    )


def test_reader_with_unknown_selector_fails_early(ctx: TaskContext) -> None:
    """Asking for a selector that is not installed fails when the reader is made."""
    with pytest.raises(NotInstalledError):
        ctx.reader(consumer="a", selector="missing")


def test_restore_reader_for_another_task_is_refused(ctx: TaskContext) -> None:
    """Reader state from another task cannot be restored here."""
    other = TaskContext("other", host=PluginHost(allow=[]))
    other.put(role="r", content="x")
    reader = other.reader(consumer="a")
    reader.read("x")
    with pytest.raises(TaskCtxError, match="other"):
        ctx.restore_reader(reader.export_state())


@pytest.mark.parametrize(
    "attribute", ["entries", "bindings", "index", "index_provider", "index_profile"]
)
def test_structure_cannot_be_assigned_from_outside(ctx: TaskContext, attribute: str) -> None:
    """Assigning to the structure (which would bypass the revision reset) raises
    AttributeError; put, attach, remove and configure_index are the only writers."""
    before = ctx.revision
    with pytest.raises(AttributeError, match=attribute):
        setattr(ctx, attribute, getattr(ctx, attribute))
    assert ctx.revision == before


def test_entries_and_bindings_are_live_read_only_views(ctx: TaskContext) -> None:
    """entries and bindings follow put/attach/remove but refuse item assignment and deletion."""
    entries, bindings = ctx.entries, ctx.bindings
    ctx.put(role="r", content="x", entry_id="e")
    ctx.attach(MemorySource(), binding_id="m")
    assert list(entries) == ["e"]
    assert list(bindings) == ["m"]
    for view, key in ((entries, "e"), (bindings, "m")):
        with pytest.raises(TypeError):
            view[key] = view[key]  # type: ignore[index]
        with pytest.raises(TypeError):
            del view[key]  # type: ignore[union-attr]
    before = ctx.revision
    ctx.remove("m")
    assert list(bindings) == []
    assert ctx.revision != before
