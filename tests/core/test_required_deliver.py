"""required_overflow="deliver": required originals whole over budget, the excess recorded
(issue 14 §3)."""

from __future__ import annotations

import pytest

from taskctx import (
    ContextBudget,
    ContextPackage,
    ContextReadIntent,
    PluginHost,
    RequiredOverflowError,
    TaskContext,
)
from taskctx.model import BudgetExcess, Completeness, OmissionReason, Severity
from taskctx.testing import MemorySource
from tests.core.sources import numbered

DELIVER = ContextReadIntent(required_overflow="deliver")


@pytest.fixture
def host() -> PluginHost:
    """A host with the kernel built-ins only."""
    return PluginHost(allow=[])


def _context(host: PluginHost, required: dict[str, str], optional: int = 3) -> TaskContext:
    ctx = TaskContext("task-d", host=host)
    for role, text in required.items():
        ctx.put(role=role, content=text, required=True)
    ctx.attach(MemorySource(numbered(optional, chars=50)), binding_id="mem")
    return ctx


def test_deliver_puts_required_originals_whole_over_the_char_budget(host: PluginHost) -> None:
    """Required items larger than max_chars are delivered whole and complete; the package
    records chars over, a required_over_budget warning, and no optional block."""
    ctx = _context(host, {"instruction": "i" * 300, "constraint": "c" * 250})
    budget = ContextBudget(max_chars=400, max_blocks=10)
    package = ctx.reader(consumer="a", budget=budget).read(DELIVER)
    assert [len(b.content) for b in package.blocks] == [300, 250]
    assert all(b.completeness is Completeness.COMPLETE for b in package.blocks)
    assert package.used_chars == 550
    assert package.budget_excess == BudgetExcess(chars_over=150, blocks_over=0)
    (diagnostic,) = [d for d in package.diagnostics if d.code == "required_over_budget"]
    assert diagnostic.severity is Severity.WARNING
    assert "150 chars over max_chars=400" in diagnostic.message
    assert [o.reason for o in package.omissions] == [OmissionReason.OVER_CHAR_BUDGET]
    assert package.omissions[0].ref.binding == "mem"
    assert package.has_more
    assert 'code="required_over_budget"' in package.render()


def test_deliver_over_the_block_budget_records_blocks_over(host: PluginHost) -> None:
    """More required items than max_blocks are all delivered; blocks_over says by how many."""
    ctx = _context(host, {f"r{n}": f"required {n}" for n in range(4)})
    budget = ContextBudget(max_chars=10_000, max_blocks=2)
    package = ctx.reader(consumer="a", budget=budget).read(DELIVER)
    assert len(package.blocks) == 4
    assert package.budget_excess == BudgetExcess(chars_over=0, blocks_over=2)
    assert [o.reason for o in package.omissions] == [OmissionReason.OVER_BLOCK_BUDGET]


def test_deliver_within_budget_is_an_ordinary_read(host: PluginHost) -> None:
    """When required content fits, deliver changes nothing: no excess, optional items fill."""
    ctx = _context(host, {"instruction": "short"})
    package = ctx.reader(consumer="a").read(DELIVER)
    assert package.budget_excess is None
    assert not any(d.code == "required_over_budget" for d in package.diagnostics)
    assert len(package.blocks) == 4


def test_deliver_next_page_has_the_whole_budget_for_optional_items(host: PluginHost) -> None:
    """The page after an over-budget first page delivers optional items under the budget."""
    ctx = _context(host, {"instruction": "i" * 500}, optional=4)
    reader = ctx.reader(consumer="a", budget=ContextBudget(max_chars=120, max_blocks=10))
    first = reader.read(DELIVER)
    assert first.budget_excess == BudgetExcess(chars_over=380, blocks_over=0)
    second = reader.read_next(first.cursor)
    assert second.budget_excess is None
    assert [b.ref.binding for b in second.blocks] == ["mem", "mem"]
    assert second.used_chars <= 120
    assert [o.reason for o in second.omissions][:1] == [OmissionReason.ALREADY_DISCLOSED]


def test_deliver_covers_explicit_refs(host: PluginHost) -> None:
    """An explicit ref over budget is delivered whole under deliver (fail still raises)."""
    ctx = TaskContext("task-d", host=host)
    ctx.attach(MemorySource({"big.txt": "b" * 900, "small.txt": "s"}), binding_id="mem")
    budget = ContextBudget(max_chars=100)
    intent = ContextReadIntent(explicit_refs=["ctx://mem/big.txt"], required_overflow="deliver")
    package = ctx.reader(consumer="a", budget=budget).read(intent)
    assert [b.ref.path for b in package.blocks] == ["big.txt"]
    assert package.blocks[0].content == "b" * 900
    assert package.budget_excess == BudgetExcess(chars_over=800, blocks_over=0)
    with pytest.raises(RequiredOverflowError, match="'deliver'"):
        ctx.reader(consumer="a", budget=budget).read(
            ContextReadIntent(explicit_refs=["ctx://mem/big.txt"])
        )


def test_budget_excess_round_trips_through_json(host: PluginHost) -> None:
    """budget_excess survives model_dump_json / model_validate_json."""
    ctx = _context(host, {"instruction": "i" * 300})
    package = ctx.reader(consumer="a", budget=ContextBudget(max_chars=100)).read(DELIVER)
    again = ContextPackage.model_validate_json(package.model_dump_json())
    assert (
        again.budget_excess == package.budget_excess == BudgetExcess(chars_over=200, blocks_over=0)
    )


def test_lossy_digest_and_fail_are_unchanged(host: PluginHost) -> None:
    """fail still raises and lossy_digest still outlines; neither records an excess."""
    ctx = _context(host, {"instruction": "line\n" * 200})
    budget = ContextBudget(max_chars=300)
    with pytest.raises(RequiredOverflowError):
        ctx.reader(consumer="a", budget=budget).read("")
    lossy = ctx.reader(consumer="a", budget=budget).read(
        ContextReadIntent(required_overflow="lossy_digest")
    )
    assert lossy.blocks[0].completeness is Completeness.LOSSY
    assert lossy.budget_excess is None
