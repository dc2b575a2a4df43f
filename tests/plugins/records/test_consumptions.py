"""Consumptions persisted in a RecordStore: listed by a new context, idempotent, checked."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from taskctx_records import RecordConsumptionLog, RecordStore
from taskctx_records.consumptions import CONSUMED_EVENT, consumption_stream

from taskctx import (
    ConsumptionConflictError,
    ConsumptionLog,
    ContextPackage,
    PluginHost,
    TaskContext,
)
from taskctx.consumption import PendingConsumption


def make_context(store: RecordStore, task_id: str = "review-42") -> TaskContext:
    """A context of two direct entries whose consumptions go to ``store``."""
    ctx = TaskContext(
        task_id, host=PluginHost(allow=[]), consumption_log=RecordConsumptionLog(store)
    )
    ctx.put(role="instruction", content="Review only.", required=True)
    ctx.put(role="information", content="the upload times out")
    return ctx


def read(ctx: TaskContext) -> ContextPackage:
    """One package of both entries."""
    return ctx.reader(consumer="planner", phase="planning").read("upload")


def test_it_is_a_consumption_log(store_root: Path | str) -> None:
    """RecordConsumptionLog satisfies the kernel's ConsumptionLog protocol."""
    assert isinstance(RecordConsumptionLog(RecordStore(store_root)), ConsumptionLog)


def test_a_new_context_over_the_same_store_lists_earlier_consumptions(
    store_root: Path | str,
) -> None:
    """Consumptions recorded by one context are listed, in order, by a later one."""
    first = make_context(RecordStore(store_root))
    package = read(first)
    a = first.record_consumption(package, request_id="r1", response_id="s1")
    b = first.record_consumption(
        package, request_id="r2", response_id="s2", block_ids=[package.blocks[0].block_id]
    )
    later = make_context(RecordStore(store_root))
    assert later.consumptions() == (a, b)
    assert later.consumptions(request_id="r2") == (b,)


def test_a_new_process_lists_them_too(store_root: Path | str) -> None:
    """The consumptions survive the process: another interpreter reads them back."""
    ctx = make_context(RecordStore(store_root))
    consumption = ctx.record_consumption(read(ctx), request_id="r", response_id="s")
    script = (
        "import sys\n"
        "from taskctx import TaskContext, PluginHost\n"
        "from taskctx_records import RecordConsumptionLog, RecordStore\n"
        "log = RecordConsumptionLog(RecordStore(sys.argv[1]))\n"
        "ctx = TaskContext('review-42', host=PluginHost(allow=[]), consumption_log=log)\n"
        "print(ctx.consumptions()[0].model_dump_json())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(store_root)], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == consumption.model_dump_json()


def test_they_are_events_of_the_task_stream(store_root: Path | str) -> None:
    """Each consumption is one context_consumed event on taskctx.consumptions/<task>."""
    store = RecordStore(store_root)
    ctx = make_context(store)
    consumption = ctx.record_consumption(read(ctx), request_id="r", response_id="s")
    page = store.events(consumption_stream("review-42"))
    assert [e.type for e in page.events] == [CONSUMED_EVENT]
    event = page.events[0]
    assert event.task_id == "review-42"
    assert event.actor == "planner"
    assert event.idempotency_key == f"{consumption.package_id}|r|s"


def test_the_same_key_again_is_idempotent_across_contexts(store_root: Path | str) -> None:
    """The same package, request and response recorded by another context returns the first."""
    first = make_context(RecordStore(store_root))
    package = read(first)
    original = first.record_consumption(package, request_id="r", response_id="s")
    second = make_context(RecordStore(store_root))
    again = second.record_consumption(package, request_id="r", response_id="s")
    assert again == original
    assert again.recorded_at == original.recorded_at
    assert len(second.consumptions()) == 1


def test_the_same_key_with_other_content_is_a_conflict(store_root: Path | str) -> None:
    """Other blocks under a recorded key raise ConsumptionConflictError; nothing is added."""
    first = make_context(RecordStore(store_root))
    package = read(first)
    first.record_consumption(package, request_id="r", response_id="s")
    second = make_context(RecordStore(store_root))
    with pytest.raises(ConsumptionConflictError, match="already recorded with other content"):
        second.record_consumption(
            package, request_id="r", response_id="s", block_ids=[package.blocks[1].block_id]
        )
    assert len(second.consumptions()) == 1


def test_tasks_are_kept_apart(store_root: Path | str) -> None:
    """Two tasks on one store list only their own consumptions."""
    a = make_context(RecordStore(store_root), "task-a")
    b = make_context(RecordStore(store_root), "task-b")
    ca = a.record_consumption(read(a), request_id="r", response_id="s")
    cb = b.record_consumption(read(b), request_id="r", response_id="s")
    assert a.consumptions() == (ca,)
    assert b.consumptions() == (cb,)


def test_a_failed_request_leaves_the_store_untouched(store_root: Path | str) -> None:
    """An exception inside consuming() appends no event."""
    store = RecordStore(store_root)
    ctx = make_context(store)
    package = read(ctx)
    revision = store.revision

    def call_model(pending: PendingConsumption) -> None:
        pending.response_id = "s"
        raise TimeoutError("the model did not answer")

    with pytest.raises(TimeoutError), ctx.consuming(package, request_id="r") as pending:
        call_model(pending)
    assert store.revision == revision
    assert store.events(consumption_stream("review-42")).events == ()


def test_a_read_only_store_or_another_object_is_refused(store_root: Path | str) -> None:
    """The log needs a RecordStore opened read_write."""
    RecordStore(store_root)  # create it
    with pytest.raises(ValueError, match="read-only; consumptions need a store opened read_write"):
        RecordConsumptionLog(RecordStore(store_root, mode="read_only"))
    with pytest.raises(TypeError, match="store must be a RecordStore, not str"):
        RecordConsumptionLog(str(store_root))  # type: ignore[arg-type]


def test_many_consumptions_are_listed_past_one_event_page(store_root: Path | str) -> None:
    """More consumptions than one event page are all listed, in order."""
    ctx = make_context(RecordStore(store_root))
    package = read(ctx)
    recorded = [
        ctx.record_consumption(package, request_id=f"r{n}", response_id="s") for n in range(520)
    ]
    assert make_context(RecordStore(store_root)).consumptions() == tuple(recorded)
