"""TaskContext.export_state / restore: entries, bindings, index, readers, packages, consumptions."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from pydantic import ValidationError

from taskctx import (
    ContextBudget,
    ContextPackage,
    ContextReadIntent,
    ContextState,
    OmissionReason,
    PluginHost,
    RestoreError,
    RunConfiguration,
    TaskContext,
    hookimpl,
)
from taskctx.consumption import MemoryConsumptionLog
from taskctx.fusion import FusedProvider
from taskctx.index import StructuralProvider
from taskctx.testing import MemorySource

PNG_1x1 = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


class ItemsSource(MemorySource):
    """A third-party source that can be rebuilt: its items are its options."""

    kind = "items"

    def __init__(self, items: Mapping[str, str], name: str = "items") -> None:
        super().__init__(dict(items), identity=f"items:{name}")
        self.options = {"items": dict(items), "name": name}

    def rebuild_options(self) -> dict[str, Any]:
        """The items and the name."""
        return self.options


class ItemsKind:
    """Registers the ``items`` source kind."""

    @hookimpl
    def register_source_kinds(self, register: Callable[[str, Callable[..., Any]], None]) -> None:
        """Kind ``items``."""
        register("items", ItemsSource)


class Opaque(MemorySource):
    """A third-party source with no rebuild_options (kind ``opaque``)."""

    kind = "opaque"


def host(with_items: bool = True) -> PluginHost:
    """A host with no entry-point plugin, knowing the ``items`` kind if asked."""
    made = PluginHost(allow=[])
    if with_items:
        made.register(ItemsKind(), name="items-kind")
    return made


NOTES = {f"note-{n}.txt": f"upload note {n}: the upload times out" for n in range(6)}


def make_context() -> TaskContext:
    """A context with text and binary entries and one rebuildable third-party binding."""
    ctx = TaskContext(
        "review-42",
        host=host(),
        configuration=RunConfiguration(allowed_hosts=["example.org"], extensions={"x": {"a": 1}}),
    )
    ctx.put(role="instruction", content="# Rules\n\nDo not modify files.", required=True)
    ctx.put(role="information", content="upload fails at 30 s", title="observation")
    ctx.put(role="asset", content=PNG_1x1, media_type="image/png")
    ctx.put(role="asset", content=b"\x89PNG\r\n\x1a\n" + bytes(20), media_type="application/x-q")
    ctx.attach(ItemsSource(NOTES), binding_id="notes", role="evidence")
    return ctx


def round_trip(ctx: TaskContext, **restore: Any) -> TaskContext:
    """export_state -> JSON text -> restore in a fresh host."""
    text = ctx.export_state().model_dump_json()
    restore.setdefault("host", host())
    return TaskContext.restore(json.loads(json.dumps(text)), **restore)


def same_view(a: ContextPackage, b: ContextPackage) -> None:
    """Two packages hold the same blocks, omissions and coverage on the same snapshot."""
    assert a.snapshot == b.snapshot
    assert [(x.block_id, x.ref, x.content) for x in a.blocks] == [
        (x.block_id, x.ref, x.content) for x in b.blocks
    ]
    assert [(o.ref, o.reason) for o in a.omissions] == [(o.ref, o.reason) for o in b.omissions]
    assert a.source_coverage == b.source_coverage


def test_export_state_is_a_frozen_versioned_json_model() -> None:
    """export_state returns a frozen ContextState (version 1) that survives JSON."""
    state = make_context().export_state()
    assert isinstance(state, ContextState)
    assert state.version == 1
    with pytest.raises(ValidationError, match="frozen"):
        state.task_id = "other"  # type: ignore[misc]
    assert ContextState.model_validate_json(state.model_dump_json()) == state
    assert ContextState.model_validate(json.loads(state.model_dump_json())) == state


def test_restore_keeps_entries_bindings_and_configuration() -> None:
    """Entries (text and bytes), the binding with its role, and the configuration come back."""
    ctx = make_context()
    restored = round_trip(ctx)
    assert restored.task_id == "review-42"
    assert restored.revision == ctx.revision
    assert list(restored.entries) == list(ctx.entries)
    for entry_id, entry in ctx.entries.items():
        again = restored.entries[entry_id]
        assert (again.role, again.required, again.media_type, again.digest, again.title) == (
            entry.role,
            entry.required,
            entry.media_type,
            entry.digest,
            entry.title,
        )
        assert (again.text, again.data) == (entry.text, entry.data)
    assert restored.bindings["notes"].role == "evidence"
    assert restored.bindings["notes"].kind == "items"
    assert restored.configuration == ctx.configuration


def test_restore_gives_the_same_package_on_the_same_snapshot() -> None:
    """A read after restore delivers what the same read delivered before export."""
    ctx = make_context()
    intent = ContextReadIntent(query="upload times out")
    before = ctx.reader(consumer="planner", budget=ContextBudget(max_chars=300)).read(intent)
    restored = round_trip(ctx)
    after = restored.reader(consumer="planner", budget=ContextBudget(max_chars=300)).read(intent)
    same_view(before, after)


def test_new_entries_after_restore_do_not_reuse_ids() -> None:
    """The entry counter is restored: a new put gets a fresh entry id."""
    ctx = make_context()
    ctx.remove("entry-2")
    restored = round_trip(ctx)
    assert restored.put(role="information", content="later").path == "entry-5"


def test_restored_readers_keep_their_disclosure_history() -> None:
    """A restored reader reports what it already disclosed as already_disclosed."""
    ctx = make_context()
    reader = ctx.reader(consumer="planner", budget=ContextBudget(max_chars=120, max_blocks=3))
    first = reader.read("upload note")
    disclosed = {str(b.ref) for b in first.blocks if not b.required}
    assert disclosed
    unpinned = ctx.reader(consumer="nobody")  # never read: nothing disclosed, not exported
    assert unpinned.snapshot is None
    restored = round_trip(ctx)
    assert len(restored.readers()) == 1
    again = restored.readers()[0]
    assert again.snapshot == reader.snapshot
    second = again.read("upload note")
    marked = {str(o.ref) for o in second.omissions if o.reason is OmissionReason.ALREADY_DISCLOSED}
    assert disclosed <= marked
    assert not disclosed & {str(b.ref) for b in second.blocks}
    original_next = reader.read("upload note")
    same_view(original_next, second)


def test_packages_and_consumptions_are_kept_whole_and_in_order() -> None:
    """Every package issued and every consumption is in the state and comes back."""
    ctx = make_context()
    reader = ctx.reader(consumer="planner", phase="planning")
    one, two = reader.read("upload"), reader.read("rules")
    consumed = ctx.record_consumption(one, request_id="r1", response_id="s1")
    assert ctx.packages() == (one, two)
    state = ctx.export_state()
    assert state.packages == (one, two)
    assert state.consumptions == (consumed,)
    restored = round_trip(ctx)
    assert restored.packages() == (one, two)
    assert restored.consumptions() == (consumed,)
    assert restored.record_consumption(one, request_id="r1", response_id="s1") == consumed


def test_restore_appends_consumptions_to_the_log_it_is_given() -> None:
    """A consumption_log given to restore receives the exported consumptions once."""
    ctx = make_context()
    package = ctx.reader(consumer="planner").read("upload")
    consumed = ctx.record_consumption(package, request_id="r", response_id="s")
    log = MemoryConsumptionLog()
    log.append(consumed)  # already there: kept, not doubled
    restored = round_trip(ctx, consumption_log=log)
    assert restored.consumption_log is log
    assert log.consumptions("review-42") == (consumed,)


def test_a_source_without_rebuild_options_is_exported_marked() -> None:
    """export_state succeeds and marks a binding that cannot be rebuilt, saying why."""
    ctx = make_context()
    ctx.attach(Opaque({"a.txt": "a"}), binding_id="custom-files")
    state = ctx.export_state()
    marked = {b.binding_id: b for b in state.bindings}["custom-files"]
    assert marked.kind == "opaque"
    assert marked.options is None
    assert marked.not_rebuildable is not None
    assert "Opaque has no rebuild_options()" in marked.not_rebuildable


def test_a_source_without_rebuild_options_fails_the_restore_by_name() -> None:
    """Restore raises RestoreError naming the binding id and the kind; never drops it."""
    ctx = make_context()
    ctx.attach(Opaque({"a.txt": "a"}), binding_id="custom-files")
    with pytest.raises(RestoreError, match=r"binding 'custom-files' \(kind 'opaque'\)") as err:
        round_trip(ctx)
    assert (err.value.binding_id, err.value.kind) == ("custom-files", "opaque")


def test_a_kind_the_host_lacks_fails_the_restore_by_name() -> None:
    """A rebuildable binding whose kind the fresh host does not have fails naming both."""
    ctx = make_context()
    with pytest.raises(RestoreError, match=r"binding 'notes' \(kind 'items'\)") as err:
        round_trip(ctx, host=host(with_items=False))
    assert "no installed plugin registers source kind 'items'" in str(err.value)
    assert (err.value.binding_id, err.value.kind) == ("notes", "items")


def test_sources_given_to_restore_stand_in_for_unrebuildable_ones() -> None:
    """restore(sources={binding_id: source}) hands back a source options cannot make."""
    ctx = make_context()
    ctx.attach(Opaque({"a.txt": "a"}, identity="opaque:1"), binding_id="custom-files")
    again = Opaque({"a.txt": "a"}, identity="opaque:1")
    restored = round_trip(ctx, sources={"custom-files": again})
    assert restored.bindings["custom-files"].kind == "opaque"
    assert restored.revision == ctx.revision


@pytest.mark.parametrize(
    ("sources", "message"),
    [
        ({"nope": Opaque()}, r"sources= names bindings the state does not hold: \['nope'\]"),
        (
            {"notes": Opaque()},
            r"binding 'notes' \(kind 'items'\): the source given is of kind 'opaque'",
        ),
        (
            {"notes": ItemsSource({}, name="elsewhere")},
            r"binding 'notes' \(kind 'items'\): the rebuilt source is 'items:elsewhere', not "
            r"the exported 'items:items'",
        ),
    ],
)
def test_wrong_sources_given_to_restore_are_refused(sources: Any, message: str) -> None:
    """An unknown binding id, another kind or another identity raise RestoreError."""
    with pytest.raises(RestoreError, match=message):
        round_trip(make_context(), sources=sources)


class Misbehaving(MemorySource):
    """rebuild_options answers ``answer`` (or raises it)."""

    kind = "misbehaving"

    def __init__(self, answer: object) -> None:
        super().__init__({})
        self.answer = answer

    def rebuild_options(self) -> object:
        """The answer."""
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (None, "says this instance cannot be made again"),
        (["root"], "returned list, not a dict"),
        ({1: "x"}, "returned dict, not a dict"),
        ({"root": object()}, "not JSON"),
        ({"size": float("nan")}, "not JSON"),
        (RuntimeError("no handle"), "raised RuntimeError: no handle"),
    ],
)
def test_bad_rebuild_options_mark_the_binding(answer: object, reason: str) -> None:
    """None, a non-mapping, non-JSON options or an exception mark it not rebuildable."""
    ctx = TaskContext("t", host=host())
    ctx.attach(Misbehaving(answer), binding_id="odd")
    (binding,) = ctx.export_state().bindings
    assert binding.options is None
    assert binding.not_rebuildable is not None
    assert reason in binding.not_rebuildable
    with pytest.raises(RestoreError, match=r"binding 'odd' \(kind 'misbehaving'\)"):
        TaskContext.restore(ctx.export_state(), host=host())


def test_options_that_fail_the_factory_fail_the_restore_by_name() -> None:
    """Options the factory refuses raise RestoreError naming the binding and kind."""
    state = make_context().export_state()
    bindings = [
        b.model_copy(update={"options": {"bogus": 1}}) if b.binding_id == "notes" else b
        for b in state.bindings
    ]
    with pytest.raises(RestoreError, match=r"binding 'notes' \(kind 'items'\) cannot be rebuilt"):
        TaskContext.restore(state.model_copy(update={"bindings": tuple(bindings)}), host=host())


def test_the_index_choice_is_restored() -> None:
    """The provider name and profile come back; an unknown provider fails by name."""
    ctx = make_context()
    ctx.configure_index("structural", profile="audit")
    restored = round_trip(ctx)
    assert (restored.index_provider.name, restored.index_profile) == ("structural", "audit")
    fused = FusedProvider("fused-test", (StructuralProvider(),))
    ctx.configure_index(fused)
    with pytest.raises(RestoreError, match="index provider 'fused-test' cannot be restored"):
        round_trip(ctx)
    again = round_trip(ctx, index_provider=fused)
    assert again.index_provider is fused
    assert again.revision == ctx.revision


def test_configuration_can_be_overridden_at_restore() -> None:
    """restore(configuration=...) replaces the exported configuration."""
    stricter = RunConfiguration(allowed_hosts=[])
    assert round_trip(make_context(), configuration=stricter).configuration == stricter


def test_a_tampered_entry_fails_the_restore() -> None:
    """An entry whose content no longer matches its digest raises RestoreError."""
    state = make_context().export_state()
    entries = list(state.entries)
    entries[1] = entries[1].model_copy(update={"text": "something else"})
    with pytest.raises(RestoreError, match="direct entry 'entry-2' does not match"):
        TaskContext.restore(state.model_copy(update={"entries": tuple(entries)}), host=host())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"version": 2}, "version"),
        ({"task_id": None}, "task_id"),
        ({"entries": [{"entry_id": "e", "role": "r", "required": False,
                       "media_type": "text/plain", "digest": "d"}]},
         "exactly one of text, data_base64"),
        ({"bindings": [{"binding_id": "b", "kind": "k", "role": "r"}]},
         "exactly one of options, not_rebuildable"),
        ({"surprise": 1}, "Extra inputs are not permitted"),
    ],
)  # fmt: skip
def test_malformed_states_are_refused(change: dict[str, Any], message: str) -> None:
    """A wrong version, a missing field, half an entry or binding, or an extra key raise."""
    data = json.loads(make_context().export_state().model_dump_json())
    data.update(change)
    with pytest.raises(ValidationError, match=message):
        TaskContext.restore(data, host=host())


@pytest.mark.parametrize("state", [None, 3, b"{}", ["x"]])
def test_a_state_of_another_type_is_refused(state: Any) -> None:
    """restore takes a ContextState, a dict or JSON text, nothing else."""
    with pytest.raises(TypeError, match="state must be a ContextState, a dict or JSON text"):
        TaskContext.restore(state, host=host())


def test_bad_base64_fails_the_restore() -> None:
    """Binary entry data that is not base64 raises RestoreError naming the entry."""
    state = make_context().export_state()
    entries = [
        e.model_copy(update={"data_base64": "not base64!"}) if e.data_base64 else e
        for e in state.entries
    ]
    with pytest.raises(RestoreError, match="direct entry 'entry-3': data_base64 is not base64"):
        TaskContext.restore(state.model_copy(update={"entries": tuple(entries)}), host=host())
