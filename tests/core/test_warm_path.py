"""The warm path: what a read of an unchanged context does besides its revision check and
its search (one event loop for sync calls, one batched source read for the page)."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from taskctx import (
    ContextBudget,
    ContextReadIntent,
    PluginHost,
    TaskContext,
)
from taskctx._sync import run_sync
from taskctx.errors import SyncInAsyncError
from taskctx.model import ContextRef, ExactRead
from taskctx.testing import MemorySource
from tests.core.sources import numbered

BUDGET = ContextBudget(max_chars=2_000, max_blocks=5)


class Counting(MemorySource):
    """A MemorySource that keeps the loop of every revision check and counts its calls:
    one-by-one reads (``reads`` counts every item read) and batched reads."""

    def __init__(self, items: dict[str, str], **kwargs: Any) -> None:
        super().__init__(items, **kwargs)
        self.loops: list[asyncio.AbstractEventLoop] = []
        self.single: list[str] = []
        self.batches: list[list[str]] = []

    async def async_revision(self) -> str:
        """The revision; the running loop kept (not its id: a freed loop's id is reused)."""
        self.loops.append(asyncio.get_running_loop())
        return await super().async_revision()

    async def async_read_exact(self, ref: ContextRef, limit: int | None = None) -> ExactRead:
        """Counted read (batched reads go through here too)."""
        self.single.append(ref.path)
        return await super().async_read_exact(ref, limit)

    async def async_read_exact_many(
        self, refs: Sequence[ContextRef], limit: int | None = None
    ) -> list[ExactRead | Exception]:
        """Counted batched read."""
        self.batches.append([ref.path for ref in refs])
        answers = await super().async_read_exact_many(refs, limit)
        del self.single[-len(refs) :]  # these were not one-by-one reads
        return answers


class OtherBytesInBatch(Counting):
    """Answers ``item-00002.txt`` in a batch with other bytes (and their own version)."""

    async def async_read_exact_many(
        self, refs: Sequence[ContextRef], limit: int | None = None
    ) -> list[ExactRead | Exception]:
        """The batch, one answer from other bytes."""
        answers = await super().async_read_exact_many(refs, limit)
        return [
            ExactRead.from_text(
                ref.path, "other bytes", limit, media_type="text/plain", content_version="v-other"
            )
            if ref.path == "item-00002.txt"
            else answer
            for ref, answer in zip(refs, answers, strict=True)
        ]


class FailingBatch(Counting):
    """Every batched read fails as a whole."""

    async def async_read_exact_many(
        self, refs: Sequence[ContextRef], limit: int | None = None
    ) -> list[ExactRead | Exception]:
        """No batch at all."""
        self.batches.append([ref.path for ref in refs])
        raise OSError("batch transport down")


def warm(tmp_path: Path, source: Counting) -> TaskContext:
    """A context over ``source`` after one first read (no index provider)."""
    ctx = TaskContext("warm", host=PluginHost(allow=[]), state_dir=tmp_path / "state")
    ctx.attach(source, binding_id="b")
    ctx.reader("first", budget=BUDGET).read(ContextReadIntent(query="item"))
    source.single.clear()
    source.batches.clear()
    source.loops.clear()
    return ctx


def test_sync_reads_share_one_event_loop(tmp_path: Path) -> None:
    """Sync reads on the main thread run on one event loop, not a new one per call."""
    source = Counting(numbered(8))
    ctx = warm(tmp_path, source)
    for name in ("a", "b", "c"):
        ctx.reader(name, budget=BUDGET).read(ContextReadIntent(query="item"))
    assert len(source.loops) == 3
    assert source.loops[0] is source.loops[1] is source.loops[2]
    assert not source.loops[0].is_running()


def test_a_sync_call_still_ends_the_tasks_it_left() -> None:
    """What a sync call's coroutine left running is cancelled when the call returns, as
    ``asyncio.run`` cancels it; the next call runs on the same loop undisturbed."""
    left: list[asyncio.Task[None]] = []

    async def leave_a_task() -> asyncio.AbstractEventLoop:
        left.append(asyncio.ensure_future(asyncio.sleep(3600)))
        await asyncio.sleep(0)
        return asyncio.get_running_loop()

    loop = run_sync(leave_a_task(), "leave_a_task")
    assert left[0].cancelled()
    assert run_sync(leave_a_task(), "leave_a_task") is loop
    assert left[1].cancelled()


def test_a_sync_call_that_raises_leaves_the_loop_usable() -> None:
    """An exception from the coroutine reaches the caller; the next sync call works."""

    async def fail() -> None:
        raise ValueError("boom")

    async def answer() -> int:
        return 42

    with pytest.raises(ValueError, match="boom"):
        run_sync(fail(), "fail")
    assert run_sync(answer(), "answer") == 42


def test_ctrl_c_cancels_the_call_and_raises_keyboard_interrupt() -> None:
    """Ctrl-C during a sync call cancels its coroutine (its cleanup runs), the call raises
    KeyboardInterrupt, the default handler is back and the next call works."""
    cleaned: list[bool] = []

    async def interrupted() -> None:
        try:
            os.kill(os.getpid(), signal.SIGINT)
            await asyncio.sleep(30)
        finally:
            cleaned.append(True)

    async def answer() -> int:
        return 7

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            run_sync(interrupted(), "interrupted")
        assert cleaned == [True]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        assert run_sync(answer(), "answer") == 7
    finally:
        signal.signal(signal.SIGINT, previous)


def test_sync_calls_from_other_threads_still_work() -> None:
    """A sync call on another thread runs on a loop of its own (never the main thread's)."""
    seen: list[asyncio.AbstractEventLoop] = []

    async def loop_of_call() -> asyncio.AbstractEventLoop:
        return asyncio.get_running_loop()

    main_loop = run_sync(loop_of_call(), "loop_of_call")
    worker = threading.Thread(target=lambda: seen.append(run_sync(loop_of_call(), "x")))
    worker.start()
    worker.join()
    assert len(seen) == 1
    assert seen[0] is not main_loop
    assert seen[0].is_closed()


def test_a_sync_call_inside_a_running_loop_is_refused() -> None:
    """Inside a running loop the facade still refuses, naming the async method."""

    async def inner() -> None:
        return None

    async def outer() -> None:
        with pytest.raises(SyncInAsyncError, match="await async_inner"):
            run_sync(inner(), "async_inner")

    asyncio.run(outer())


def test_a_warm_page_is_read_in_one_batch(tmp_path: Path) -> None:
    """A warm read of a batching source asks it once for the page's blocks, never one
    read per block, and delivers the same blocks as the first read."""
    items = numbered(20)
    source = Counting(items)
    ctx = warm(tmp_path, source)
    package = ctx.reader("a", budget=BUDGET).read(ContextReadIntent(query="item"))
    assert len(package.blocks) == 5
    delivered = [block.ref.path for block in package.blocks]
    assert source.batches == [delivered]
    assert source.single == []
    assert [block.content for block in package.blocks] == [items[p] for p in delivered]


def test_a_batch_answer_from_other_bytes_is_never_delivered(tmp_path: Path) -> None:
    """A read-ahead answer that reports another content version than the pin is dropped:
    that item is read again on its own and its pinned text delivered."""
    items = numbered(6)
    source = OtherBytesInBatch(items)
    ctx = warm(tmp_path, source)
    package = ctx.reader("a", budget=BUDGET).read(ContextReadIntent(query="item"))
    assert source.single == ["item-00002.txt"]
    assert [block.content for block in package.blocks] == [
        items[block.ref.path] for block in package.blocks
    ]


def test_a_failed_batch_falls_back_to_reads_one_by_one(tmp_path: Path) -> None:
    """A batched read that fails as a whole costs nothing but itself: every block is read
    on its own and the page is the one the first read delivered."""
    items = numbered(8)
    source = FailingBatch(items)
    ctx = warm(tmp_path, source)
    package = ctx.reader("a", budget=BUDGET).read(ContextReadIntent(query="item"))
    assert len(source.batches) == 1
    assert source.single == [block.ref.path for block in package.blocks]
    assert [block.content for block in package.blocks] == [
        items[block.ref.path] for block in package.blocks
    ]


@pytest.mark.parametrize(
    ("path", "media_type"),
    [
        ("notes/a.md", None),
        ("notes/b.md", "text/markdown"),
        ("Makefile", None),
        ("src/makefile", None),
        ("img/x.PNG", None),
        ("data/blob", "application/octet-stream"),
        ("data/blob", None),
        ("a.json", "text/plain"),
        ("", None),
        (None, "image/png"),
        ("odd/.hidden", None),
        ("dir/", "text/plain"),
    ],
)
def test_shared_media_decisions_equal_fresh_ones(path: str | None, media_type: str | None) -> None:
    """A media decision shared by name or suffix is the one a fresh decision makes, reasons
    (which name a well-known file as spelled) included, on first and on later use."""
    from taskctx import media

    fresh = media._classify(path, media_type, None, None)
    assert media.classify(path, media_type) == fresh
    assert media.classify(path, media_type) == fresh
    for kind in ("text", "binary"):
        assert media.classify(path, media_type, content_kind=kind) == media._classify(
            path, media_type, kind, None
        )


def test_a_bad_content_kind_is_refused_before_any_shared_decision() -> None:
    """An unknown content_kind is a ValueError naming it, cached decisions or not."""
    from taskctx import media

    media.classify("a.md")
    with pytest.raises(ValueError, match="'texty'"):
        media.classify("a.md", content_kind="texty")
