"""The reading engine flows one way: each step gets values and returns one (issue 15).

The reader wires gathering, assembly, readback, coverage and paging; no step below it
knows the reader or the TaskContext, the assembler is handed objects (an alias table, a
readback) instead of callbacks into the reader, one module decides where the next page
starts, and ``offer()`` answers with an enum.
"""

from __future__ import annotations

import ast
import asyncio
import collections.abc
import typing
from pathlib import Path
from types import MappingProxyType

import attrs
import pytest

import taskctx
from taskctx import (
    ContextBudget,
    ContextConsumer,
    ContextRef,
    PluginHost,
    TaskContext,
    TaskCtxError,
)
from taskctx.aliases import AliasTable
from taskctx.assembly import OfferOutcome, PageAssembler
from taskctx.candidates import Candidate, direct_candidate
from taskctx.model import OmissionReason
from taskctx.page import Page
from taskctx.paging import next_position
from taskctx.readback import Readback, ReadReuse, ReadScope
from taskctx.testing import MemorySource

KERNEL = Path(taskctx.__file__).parent

ENGINE_STEPS = (
    "aliases",
    "assembly",
    "candidates",
    "coverage",
    "entries",
    "gathering",
    "outline",
    "page",
    "paging",
    "readback",
    "selection",
)
"""The modules a read passes through below the reader."""


def _imported(module: str) -> set[str]:
    """Every taskctx module ``module`` imports: at the top, lazily, or for type checking."""
    tree = ast.parse((KERNEL / f"{module}.py").read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("taskctx"):
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("taskctx"))
    return found


@pytest.fixture
def ctx() -> TaskContext:
    """A built-ins-only task context with four optional direct entries of known sizes."""
    context = TaskContext("task-flow", host=PluginHost(allow=[]))
    for entry_id, chars in (("small", 10), ("huge", 200), ("wide", 95), ("other", 10)):
        context.put("information", "x" * chars, entry_id=entry_id)
    context.put("information", "y" * 10, entry_id="last")
    return context


def _candidate(ctx: TaskContext, entry_id: str) -> Candidate:
    return direct_candidate(ctx.entries[entry_id])


def _assembler(ctx: TaskContext, aliases: AliasTable | None = None) -> PageAssembler:
    return PageAssembler(
        ContextBudget(max_chars=100, max_blocks=2),
        ContextConsumer(name="agent"),
        aliases or AliasTable(),
        Readback(ctx.read_scope()),
        frozenset(),
    )


# -- import direction ------------------------------------------------------------------


@pytest.mark.parametrize("module", ENGINE_STEPS)
def test_engine_steps_know_neither_the_reader_nor_the_task_context(module: str) -> None:
    """No step below the reader imports taskctx.reader or taskctx.context, not even for
    type checking: what a step needs is passed to it."""
    imported = _imported(module)
    assert not imported & {"taskctx.reader", "taskctx.context"}, imported
    assert "taskctx.plugins" not in imported  # the host reaches readback as a protocol


@pytest.mark.parametrize("module", ["assembly", "selection", "coverage", "page", "outline"])
def test_assembly_and_what_it_uses_do_not_import_the_gathering_step(module: str) -> None:
    """Assembly sits below gathering: the page is filled from candidates it is given."""
    assert "taskctx.gathering" not in _imported(module)


def test_the_assembler_is_given_objects_not_callbacks_into_the_reader() -> None:
    """Every PageAssembler field is a value or an engine object (the alias table, the
    readback), never a callable handed in by the reader."""
    hints = typing.get_type_hints(PageAssembler)
    callables = [
        name
        for name, hint in hints.items()
        if typing.get_origin(hint) is collections.abc.Callable or hint is collections.abc.Callable
    ]
    assert callables == []
    assert hints["aliases"] is AliasTable
    assert hints["readback"] is Readback


def test_readback_holds_a_read_scope_not_the_task_context(ctx: TaskContext) -> None:
    """Readback is built from the context's ReadScope: read-only entries and bindings, the
    host and a descriptor lookup; nothing in it is the TaskContext."""
    ctx.attach(MemorySource({"a.txt": "alpha"}), binding_id="mem")
    scope = ctx.read_scope()
    readback = Readback(scope, ReadReuse())
    # the reuse holds reads a page's sync made, never the context
    assert [f.name for f in attrs.fields(Readback)] == ["scope", "reuse"]
    assert [f.name for f in attrs.fields(ReadReuse)] == ["max_chars", "chars", "reads"]
    assert all(getattr(scope, f.name) is not ctx for f in attrs.fields(ReadScope))
    assert isinstance(scope.entries, MappingProxyType)
    assert isinstance(scope.bindings, MappingProxyType)
    with pytest.raises(TypeError):
        scope.entries["forged"] = scope.entries["small"]  # type: ignore[index]
    assert scope.descriptor("mem", "a.txt", None) is None  # not synced yet
    ctx.sync_index()
    found = scope.descriptor("mem", "a.txt", "lines:1-1")  # a scope falls back to the item
    assert found is not None
    assert found.path == "a.txt"
    read = asyncio.run(readback.read(_candidate(ctx, "small"), None))
    assert read.text == "x" * 10


# -- paging: one owner -----------------------------------------------------------------


def _writes_next_position(path: Path) -> list[int]:
    """Lines of ``path`` that assign an attribute or a name called next_position."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        else:
            continue
        for target in targets:
            for part in ast.walk(target):
                named = (isinstance(part, ast.Attribute) and part.attr == "next_position") or (
                    isinstance(part, ast.Name) and part.id == "next_position"
                )
                if named:
                    lines.append(node.lineno)
    return lines


def test_only_the_paging_module_decides_where_the_next_page_starts() -> None:
    """No kernel module but taskctx.paging writes a next_position, and the assembled Page
    carries none: the assembler and the selection step only return where they stopped."""
    writers = {
        str(path.relative_to(KERNEL)): lines
        for path in sorted(KERNEL.rglob("*.py"))
        if path.name != "paging.py" and (lines := _writes_next_position(path))
    }
    assert writers == {}
    assert "next_position" not in {f.name for f in attrs.fields(Page)}


@pytest.mark.parametrize(
    ("stopped_at", "ranked", "goes_on", "expected"),
    [
        (None, 10, False, None),  # optional selection off: nothing to page through
        (None, 10, True, None),
        (3, 10, False, 3),  # stopped inside the ranking: the next page starts there
        (3, 10, True, 3),
        (10, 10, False, None),  # the whole ranking was handled: last page
        (10, 10, True, 10),  # ... but the ranking was cut at the search window: ask again
        (0, 0, False, None),
    ],
)
def test_next_position_rules(
    stopped_at: int | None, ranked: int, goes_on: bool, expected: int | None
) -> None:
    """Where the next page starts, from where the page stopped and whether ranking goes on."""
    assert next_position(stopped_at, ranked, goes_on) == expected


def test_add_optional_returns_where_it_stopped_and_leaves_paging_alone(ctx: TaskContext) -> None:
    """add_optional returns the position of the candidate that did not fit (or the end)."""
    ranked = [_candidate(ctx, e) for e in ("small", "huge", "wide", "other")]
    assert asyncio.run(_assembler(ctx).add_optional(ranked, 0)) == 2
    assert asyncio.run(_assembler(ctx).add_optional(ranked[:2], 0)) == 2
    assert asyncio.run(_assembler(ctx).add_optional(ranked, 4)) == 4


# -- offer's outcome -------------------------------------------------------------------


def test_offer_answers_with_an_outcome_enum(ctx: TaskContext) -> None:
    """offer() returns OfferOutcome members (never strings) and each means what it says."""
    assembler = _assembler(ctx)

    def offer(entry_id: str) -> OfferOutcome:
        return asyncio.run(assembler.offer(_candidate(ctx, entry_id)))

    assert offer("small") is OfferOutcome.DELIVERED
    assert offer("small") is OfferOutcome.SKIPPED  # already on this page, no new omission
    assert offer("huge") is OfferOutcome.SKIPPED  # larger than any page: never comes back
    assert offer("wide") is OfferOutcome.STOP  # 95 chars, 90 left: opens the next page
    assert offer("other") is OfferOutcome.DELIVERED
    assert offer("last") is OfferOutcome.STOP  # max_blocks=2 reached
    reasons = [(o.ref.path, o.reason) for o in assembler.page.omissions]
    assert reasons == [
        ("huge", OmissionReason.LARGER_THAN_PAGE),
        ("wide", OmissionReason.OVER_CHAR_BUDGET),
        ("last", OmissionReason.OVER_BLOCK_BUDGET),
    ]
    assert [b.ref.path for b in assembler.page.blocks] == ["small", "other"]
    assert {o.value for o in OfferOutcome} == {"delivered", "skipped", "stop"}
    stop: object = OfferOutcome.STOP
    assert stop != "stop"  # a caller branches on members, not on strings


# -- the alias table -------------------------------------------------------------------


def _ref(path: str) -> ContextRef:
    return ContextRef(binding="mem", path=path)


def test_the_alias_table_issues_stable_aliases_and_restores_them() -> None:
    """One alias per ref, in issue order; a restored table numbers on from the old one."""
    table = AliasTable()
    assert [table.alias(_ref(p)) for p in ("a", "b", "a")] == ["ref_1", "ref_2", "ref_1"]
    restored = AliasTable.restore(table.issued)
    assert restored.alias(_ref("b")) == "ref_2"
    assert restored.alias(_ref("c")) == "ref_3"
    assert dict(restored.issued) == {"ref_1": _ref("a"), "ref_2": _ref("b"), "ref_3": _ref("c")}


def test_the_aliases_the_assembler_issues_come_from_the_table_it_is_given(
    ctx: TaskContext,
) -> None:
    """The assembler names refs through the reader's table: aliases go on across pages."""
    table = AliasTable.restore({"ref_1": _ref("earlier")})
    assembler = _assembler(ctx, table)
    asyncio.run(assembler.offer(_candidate(ctx, "small")))
    assert assembler.page.blocks[0].alias == "ref_2"
    assert table.issued["ref_2"] == _candidate(ctx, "small").ref
    shown = table.shown_by(assembler.page.blocks, [], [])
    assert shown == {"ref_2": _candidate(ctx, "small").ref}  # not ref_1, issued elsewhere


@pytest.mark.parametrize(
    ("issued", "message"),
    [
        ({"x": _ref("a")}, "not 'x'"),
        ({"ref_01": _ref("a")}, "not 'ref_01'"),
        ({"ref_1": _ref("a"), "ref_2": _ref("a")}, "both name ctx://mem/a"),
        ({"ref_1": "ctx://mem/a"}, "maps to str, not a ContextRef"),
    ],
)
def test_the_alias_table_refuses_issued_aliases_a_reader_never_issues(
    issued: dict[str, ContextRef], message: str
) -> None:
    """A restored table holds ref_<n> aliases, one ref each; anything else is named and
    refused."""
    with pytest.raises(TaskCtxError, match=message):
        AliasTable.restore(issued)


def test_a_table_with_a_gap_numbers_on_after_its_highest_alias() -> None:
    """Aliases one package shows may skip numbers (ref_2, ref_5): a new ref gets ref_6,
    never a number already given to another ref."""
    table = AliasTable.restore({"ref_2": _ref("a"), "ref_5": _ref("b")})
    assert table.alias(_ref("a")) == "ref_2"
    assert table.alias(_ref("c")) == "ref_6"


def test_a_restored_reader_with_a_gap_in_its_aliases_never_issues_a_twin(
    ctx: TaskContext,
) -> None:
    """Exported reader state whose aliases skip a number restores; its next alias is past
    the highest, so no alias names two refs."""
    reader = ctx.reader(consumer="agent")
    reader.read("")
    state = reader.export_state()
    assert "ref_1" in state["aliases"]
    state["aliases"] = {"ref_9": state["aliases"]["ref_1"]}
    restored = ctx.restore_reader(state)
    package = restored.read("")
    assert "ref_1" not in package.aliases
    assert all(int(alias[4:]) >= 9 for alias in package.aliases)
