"""taskctx.progress: work reports, a listener hears it, nobody else does."""

from __future__ import annotations

import asyncio

from taskctx.progress import listening, report


def test_report_without_a_listener_does_nothing() -> None:
    """Reporting with no listener is a no-op (no error, nothing kept)."""
    report("parsing", 1, 2)


def test_a_listener_hears_the_work_it_started_even_in_threads() -> None:
    """What runs inside ``listening`` (and in asyncio.to_thread under it) reports to it;
    after the block nothing does."""
    heard: list[tuple[str, int, int]] = []

    async def work() -> None:
        report("parsing docs", 1, 3)
        await asyncio.to_thread(report, "parsing docs", 2, 3)

    with listening(lambda task, done, total: heard.append((task, done, total))):
        asyncio.run(work())
    report("parsing docs", 3, 3)
    assert heard == [("parsing docs", 1, 3), ("parsing docs", 2, 3)]


def test_a_failing_listener_never_stops_the_work() -> None:
    """A listener that raises is ignored: the report returns."""

    def broken(task: str, done: int, total: int) -> None:
        raise RuntimeError("terminal gone")

    with listening(broken):
        report("indexing", 1, 1)


def test_listeners_nest_and_restore() -> None:
    """An inner listener hears the inner work; the outer one is back after it."""
    outer: list[int] = []
    inner: list[int] = []
    with listening(lambda _t, done, _n: outer.append(done)):
        report("a", 1, 3)
        with listening(lambda _t, done, _n: inner.append(done)):
            report("a", 2, 3)
        report("a", 3, 3)
    assert (outer, inner) == ([1, 3], [2])
