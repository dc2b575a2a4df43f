"""Pages of a real folder under a small budget: parts are never cut twice, on later
pages of one reader or by another process continuing the cursor, and aliases keep their
refs when a reader goes on from a printed package."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from taskctx import ContextBudget, ContextPackage, PluginHost, TaskContext
from taskctx.model import Completeness
from taskctx.sections import parse_char_scope

BUDGET = ContextBudget(max_chars=700)


def _context(root: Path, state: Path) -> TaskContext:
    host = PluginHost(allow=["taskctx-workspace", "taskctx-fts"])
    ctx = TaskContext("t", host=host, state_dir=state)
    ctx.attach(host.source("task_workspace", root=str(root)), binding_id="notes")
    return ctx


def _spans(packages: list[ContextPackage]) -> list[tuple[int, int]]:
    spans = sorted(
        parse_char_scope(b.ref.scope or "")
        for p in packages
        for b in p.blocks
        if b.completeness is Completeness.PART
    )
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans)), spans
    return spans


def test_later_pages_cut_new_parts(notes: Path, tmp_path: Path) -> None:
    """One reader, page after page: every part is a new stretch."""
    reader = _context(notes, tmp_path / "state").reader("a", budget=BUDGET)
    pages = [reader.read("paragraph")]
    while pages[-1].has_more and len(pages) < 5:
        pages.append(reader.read_next(pages[-1].cursor))
    assert len(_spans(pages)) >= 3


@pytest.mark.parametrize("with_package", [True, False])
def test_another_process_goes_on_without_repeating(
    notes: Path, tmp_path: Path, with_package: bool
) -> None:
    """A new context continuing the cursor (with the printed package, or the cursor
    alone, which carries the parts delivered) cuts no part again; with the package its
    aliases keep their refs."""
    page1 = _context(notes, tmp_path / "state").reader("a", budget=BUDGET).read("paragraph")
    reader = _context(notes, tmp_path / "state").reader("a", budget=BUDGET)
    if with_package:
        reader.continue_from(page1)
    page2 = reader.read_next(page1.cursor)
    assert page2.page == 2
    assert _spans([page1, page2])
    if with_package:
        for alias in set(page1.aliases) & set(page2.aliases):
            assert page1.aliases[alias] == page2.aliases[alias]


def test_a_cursor_carries_only_the_latest_parts(
    notes: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """However many pages a result has, its cursor names at most MAX_CURSOR_PARTS parts
    (the latest), so it stays small; the reader itself still remembers them all."""
    import base64
    import json

    from taskctx import reader as reader_module

    monkeypatch.setattr(reader_module, "MAX_CURSOR_PARTS", 1)
    reader = _context(notes, tmp_path / "state").reader("a", budget=BUDGET)
    pages = [reader.read("paragraph")]
    while pages[-1].has_more and len(pages) < 4:
        pages.append(reader.read_next(pages[-1].cursor))
    assert len(_spans(pages)) >= 3
    cursor = pages[-1].cursor or pages[-2].cursor
    assert cursor is not None
    payload = cursor.split(".", 1)[0]
    body = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    assert len(body["parts"]) == 1
