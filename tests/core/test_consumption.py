"""Context consumptions: recorded after a response succeeded, checked, listed, idempotent."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from taskctx import (
    ConsumptionConflictError,
    ConsumptionLog,
    ContextBudget,
    ContextConsumption,
    ContextPackage,
    PluginHost,
    TaskContext,
)
from taskctx.consumption import MemoryConsumptionLog, PendingConsumption
from taskctx.errors import TaskCtxError
from taskctx.testing import MemorySource


def make_context(task_id: str = "review-42") -> TaskContext:
    """A context with a required instruction, two optional notes and one source."""
    ctx = TaskContext(task_id, host=PluginHost(allow=[]))
    ctx.put(role="instruction", content="Do not modify source files.", required=True)
    ctx.put(role="information", content="the upload times out after 30 s")
    ctx.put(role="information", content="the retry limit is 3")
    ctx.attach(MemorySource({"notes.txt": "upload notes"}), binding_id="notes")
    return ctx


def read(ctx: TaskContext, phase: str | None = "planning") -> ContextPackage:
    """One package of everything, read by a planner."""
    reader = ctx.reader(consumer="planner", phase=phase, budget=ContextBudget(max_chars=10_000))
    return reader.read("upload")


def test_record_consumption_of_every_block() -> None:
    """block_ids=None records every block of the package, with its ref, phase and snapshot."""
    ctx = make_context()
    package = read(ctx)
    assert len(package.blocks) == 4
    consumption = ctx.record_consumption(package, request_id="req-1", response_id="resp-1")
    assert isinstance(consumption, ContextConsumption)
    assert consumption.package_id == package.package_id
    assert consumption.task_id == "review-42"
    assert consumption.consumer == package.consumer
    assert consumption.phase == "planning"
    assert consumption.block_ids == tuple(b.block_id for b in package.blocks)
    assert consumption.refs == tuple(b.ref for b in package.blocks)
    assert consumption.snapshot == package.snapshot
    assert consumption.recorded_at.tzinfo is not None
    assert ctx.consumptions() == (consumption,)


def test_record_consumption_of_some_blocks_and_another_phase() -> None:
    """Named blocks are recorded in the order given, with their refs; phase overrides."""
    ctx = make_context()
    package = read(ctx)
    chosen = [package.blocks[2].block_id, package.blocks[0].block_id]
    consumption = ctx.record_consumption(
        package, request_id="req-1", response_id="resp-1", block_ids=chosen, phase="review"
    )
    assert consumption.block_ids == tuple(chosen)
    assert consumption.refs == (package.blocks[2].ref, package.blocks[0].ref)
    assert consumption.phase == "review"


def test_a_consumption_is_frozen_and_round_trips_json() -> None:
    """A consumption is an immutable boundary value that survives JSON."""
    ctx = make_context()
    consumption = ctx.record_consumption(read(ctx), request_id="r", response_id="s")
    with pytest.raises(ValueError, match="frozen"):
        consumption.request_id = "other"  # type: ignore[misc]
    assert ContextConsumption.model_validate_json(consumption.model_dump_json()) == consumption


def test_block_ids_outside_the_package_are_refused_by_name() -> None:
    """Unknown block ids raise ValueError naming them; nothing is recorded."""
    ctx = make_context()
    package = read(ctx)
    with pytest.raises(ValueError, match=r"\['blk_nope', 'blk_gone'\] are not blocks"):
        ctx.record_consumption(
            package,
            request_id="r",
            response_id="s",
            block_ids=[package.blocks[0].block_id, "blk_nope", "blk_gone"],
        )
    assert ctx.consumptions() == ()


@pytest.mark.parametrize(
    ("block_ids", "error", "message"),
    [
        ([], ValueError, "block_ids is empty"),
        ("blk_1", TypeError, "block_ids must be a sequence"),
        (b"blk_1", TypeError, "block_ids must be a sequence"),
        ({"blk_1"}, TypeError, "block_ids must be a sequence"),
        (7, TypeError, "block_ids must be a sequence"),
        ([1, 2], TypeError, "block_ids must hold strings, not int"),
        ([None], TypeError, "block_ids must hold strings, not NoneType"),
    ],
)
def test_bad_block_ids_are_refused(block_ids: Any, error: type[Exception], message: str) -> None:
    """Every malformed block_ids value raises naming what is wrong."""
    ctx = make_context()
    package = read(ctx)
    with pytest.raises(error, match=message):
        ctx.record_consumption(package, request_id="r", response_id="s", block_ids=block_ids)
    assert ctx.consumptions() == ()


def test_repeated_block_ids_are_refused() -> None:
    """A block named twice raises ValueError naming it."""
    ctx = make_context()
    package = read(ctx)
    first = package.blocks[0].block_id
    with pytest.raises(ValueError, match=f"more than once: \\['{first}'\\]"):
        ctx.record_consumption(package, request_id="r", response_id="s", block_ids=[first, first])


@pytest.mark.parametrize(
    ("field", "value", "error", "message"),
    [
        ("request_id", "", ValueError, "request_id must be a non-empty string"),
        ("request_id", "  ", ValueError, "request_id must be a non-empty string"),
        ("request_id", None, TypeError, "request_id must be a str, not NoneType"),
        ("request_id", 12, TypeError, "request_id must be a str, not int"),
        ("response_id", "", ValueError, "response_id must be a non-empty string"),
        ("response_id", None, TypeError, "response_id must be a str, not NoneType"),
        ("response_id", b"x", TypeError, "response_id must be a str, not bytes"),
        ("phase", "", ValueError, "phase must be a non-empty string"),
        ("phase", 3, TypeError, "phase must be a str, not int"),
    ],
)
def test_bad_ids_and_phase_are_refused(
    field: str, value: Any, error: type[Exception], message: str
) -> None:
    """Missing, empty or mistyped request id, response id or phase raise naming the field."""
    ctx = make_context()
    package = read(ctx)
    arguments: dict[str, Any] = {"request_id": "r", "response_id": "s", field: value}
    with pytest.raises(error, match=message):
        ctx.record_consumption(package, **arguments)


def test_a_package_of_another_task_or_no_package_is_refused() -> None:
    """Only a ContextPackage of this task can be consumed."""
    ctx = make_context("task-a")
    other = read(make_context("task-b"))
    with pytest.raises(TaskCtxError, match="belongs to task 'task-b', not 'task-a'"):
        ctx.record_consumption(other, request_id="r", response_id="s")
    with pytest.raises(TypeError, match="package must be a ContextPackage, not dict"):
        ctx.record_consumption(other.model_dump(), request_id="r", response_id="s")  # type: ignore[arg-type]


def test_a_package_without_blocks_cannot_be_consumed_whole() -> None:
    """block_ids=None on a package with no blocks raises instead of recording nothing."""
    ctx = TaskContext("t", host=PluginHost(allow=[]))
    package = ctx.reader(consumer="planner").read("anything")
    assert package.blocks == ()
    with pytest.raises(ValueError, match="has no blocks to consume"):
        ctx.record_consumption(package, request_id="r", response_id="s")


def test_the_same_key_twice_with_the_same_content_is_idempotent() -> None:
    """Recording the same package, request and response again returns the first record."""
    ctx = make_context()
    package = read(ctx)
    first = ctx.record_consumption(package, request_id="r", response_id="s")
    again = ctx.record_consumption(package, request_id="r", response_id="s")
    assert again == first
    assert again.recorded_at == first.recorded_at
    assert ctx.consumptions() == (first,)


def test_the_same_key_with_other_content_is_a_conflict() -> None:
    """The same package, request and response with other blocks or phase raises."""
    ctx = make_context()
    package = read(ctx)
    ctx.record_consumption(package, request_id="r", response_id="s")
    with pytest.raises(ConsumptionConflictError, match="already recorded with other content"):
        ctx.record_consumption(
            package, request_id="r", response_id="s", block_ids=[package.blocks[0].block_id]
        )
    with pytest.raises(ConsumptionConflictError):
        ctx.record_consumption(package, request_id="r", response_id="s", phase="other")
    assert len(ctx.consumptions()) == 1


def test_consumptions_filter_by_package_and_request_in_order() -> None:
    """consumptions() lists in recording order, filtered by package id and request id."""
    ctx = make_context()
    first, second = read(ctx), read(ctx)
    a = ctx.record_consumption(first, request_id="r1", response_id="s1")
    b = ctx.record_consumption(second, request_id="r1", response_id="s1")
    c = ctx.record_consumption(first, request_id="r2", response_id="s2")
    assert ctx.consumptions() == (a, b, c)
    assert ctx.consumptions(package_id=first.package_id) == (a, c)
    assert ctx.consumptions(request_id="r1") == (a, b)
    assert ctx.consumptions(package_id=second.package_id, request_id="r2") == ()


def test_consuming_records_when_the_block_succeeds() -> None:
    """consuming() records once the with block exits without an exception."""
    ctx = make_context()
    package = read(ctx)
    with ctx.consuming(package, request_id="req-9") as pending:
        assert ctx.consumptions() == ()  # nothing before the response exists
        pending.response_id = "resp-9"
    assert pending.consumption is not None
    assert ctx.consumptions() == (pending.consumption,)
    assert pending.consumption.request_id == "req-9"
    assert pending.consumption.response_id == "resp-9"


def test_consuming_records_nothing_when_the_request_fails() -> None:
    """An exception inside consuming() propagates and records nothing."""
    ctx = make_context()
    package = read(ctx)

    class ModelDown(Exception):
        """The model call failed."""

    def call_model(pending: PendingConsumption) -> None:
        pending.response_id = "resp-1"  # even a response id set before the failure
        raise ModelDown("503 from the model")

    with pytest.raises(ModelDown), ctx.consuming(package, request_id="req-1") as pending:
        call_model(pending)
    assert pending.consumption is None
    assert ctx.consumptions() == ()


def test_consuming_without_a_response_id_records_nothing_and_says_so() -> None:
    """A consuming() block that never set response_id raises and records nothing."""
    ctx = make_context()
    package = read(ctx)
    with (
        pytest.raises(TaskCtxError, match="without setting response_id"),
        ctx.consuming(package, request_id="req-1"),
    ):
        pass
    assert ctx.consumptions() == ()


def test_consuming_checks_its_arguments_before_the_block_runs() -> None:
    """Bad block ids fail at consuming(), before the model request is made."""
    ctx = make_context()
    package = read(ctx)
    ran = False
    with (
        pytest.raises(ValueError, match="are not blocks"),
        ctx.consuming(package, request_id="r", block_ids=["blk_nope"]),
    ):
        ran = True
    assert not ran


def test_consuming_some_blocks_set_inside_the_block() -> None:
    """block_ids set on the pending consumption inside the block are what is recorded."""
    ctx = make_context()
    package = read(ctx)
    with ctx.consuming(package, request_id="r") as pending:
        pending.block_ids = [package.blocks[1].block_id]
        pending.response_id = "s"
    assert pending.consumption is not None
    assert pending.consumption.block_ids == (package.blocks[1].block_id,)


class ListLog:
    """A third-party ConsumptionLog: a plain list, to show the protocol is all it takes."""

    def __init__(self) -> None:
        self.items: list[ContextConsumption] = []

    def append(self, consumption: ContextConsumption) -> ContextConsumption:
        """Keep it."""
        self.items.append(consumption)
        return consumption

    def consumptions(self, task_id: str) -> Sequence[ContextConsumption]:
        """All of ``task_id``."""
        return [c for c in self.items if c.task_id == task_id]


def test_a_context_records_into_the_log_it_is_given() -> None:
    """TaskContext(consumption_log=...) sends every consumption to that log."""
    log = ListLog()
    assert isinstance(log, ConsumptionLog)
    ctx = TaskContext("t", host=PluginHost(allow=[]), consumption_log=log)
    ctx.put(role="instruction", content="x", required=True)
    consumption = ctx.record_consumption(read(ctx), request_id="r", response_id="s")
    assert log.items == [consumption]
    shared = TaskContext("t", host=PluginHost(allow=[]), consumption_log=log)
    assert shared.consumptions() == (consumption,)


def test_a_log_that_is_not_a_consumption_log_is_refused() -> None:
    """consumption_log must have append and consumptions."""
    with pytest.raises(TypeError, match="consumption_log must be a ConsumptionLog"):
        TaskContext("t", host=PluginHost(allow=[]), consumption_log=[])  # type: ignore[arg-type]


def test_the_memory_log_keeps_tasks_apart() -> None:
    """One MemoryConsumptionLog shared by two tasks lists each task's own."""
    log = MemoryConsumptionLog()
    a = TaskContext("a", host=PluginHost(allow=[]), consumption_log=log)
    b = TaskContext("b", host=PluginHost(allow=[]), consumption_log=log)
    for ctx in (a, b):
        ctx.put(role="instruction", content="x", required=True)
    ca = a.record_consumption(read(a), request_id="r", response_id="s")
    cb = b.record_consumption(read(b), request_id="r", response_id="s")
    assert a.consumptions() == (ca,)
    assert b.consumptions() == (cb,)
