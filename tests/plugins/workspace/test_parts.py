"""Budgets smaller than a section over a real folder: the reader delivers the part of
the best section around what matched, marked as a part, readable again by its ref."""

from __future__ import annotations

import itertools
from pathlib import Path

from taskctx_fts import plugin as fts_plugin
from taskctx_workspace import TaskWorkspace

from taskctx import ContextBudget, ContextReadIntent, TaskContext
from taskctx.model import Completeness, ContextBlock, ContextPackage
from taskctx.sections import parse_char_scope
from tests.plugins.workspace.test_source import PagesHandler, host_with


def _filler(word: str, count: int) -> str:
    return "".join(
        f"{word} paragraph {n} is about nothing much in particular.\n\n" for n in range(count)
    )


GUIDE = (
    "# Installing\n\n"
    + _filler("Install", 40)
    + "# Writing a source plugin\n\n"
    + _filler("Plugin", 20)
    + "A source plugin registers its factory with the register_source_kinds hook.\n\n"
    + _filler("Plugin", 20)
)


def _context(root: Path, handler: PagesHandler | None = None) -> TaskContext:
    host = host_with(handler)
    host.register(fts_plugin, name="fts")
    ctx = TaskContext("t", host=host)
    ctx.attach(TaskWorkspace(root, host=host).source(), binding_id="files")
    return ctx


def _part(package: ContextPackage) -> ContextBlock:
    (block,) = [b for b in package.blocks if b.completeness is Completeness.PART]
    return block


def test_a_budget_below_a_section_gets_the_part_that_matched(tmp_path: Path) -> None:
    """At 500 chars, the best section (3,000 chars) gives its lines around the match: the
    part lies inside that section, holds the matching sentence and names the section it
    was cut from and that section's size."""
    root = tmp_path / "docs"
    root.mkdir()
    (root / "guide.md").write_text(GUIDE, encoding="utf-8")
    ctx = _context(root)
    package = ctx.reader("c", budget=ContextBudget(max_chars=500)).read(
        "which hook registers a source factory?"
    )
    part = _part(package)
    assert "register_source_kinds" in part.content
    assert part.chars <= 500
    start, end = parse_char_scope(part.ref.scope or "")
    assert GUIDE[start:end] == part.content
    assert part.full_ref is not None
    assert part.full_ref.scope is not None
    section = part.full_ref.scope
    assert part.full_ref.path == "guide.md"
    assert GUIDE.index("# Writing a source plugin") <= start
    assert part.chars_original is not None
    assert part.chars_original < len(GUIDE)
    assert section.startswith("lines:")


def test_a_part_of_a_document_page_reads_back_from_the_parsed_text(tmp_path: Path) -> None:
    """A page of a parsed document larger than the budget gives a part of its parsed text;
    asked for by its ref, the workspace's parse is sliced again to the same characters."""
    root = tmp_path / "docs"
    root.mkdir()
    first = "".join(f"Opening sentence {n} of the report. " for n in range(40))
    second = "".join(f"Second page sentence {n}. " for n in range(20))
    second += "The upload times out after thirty seconds. "
    second += "".join(f"Closing sentence {n}. " for n in range(20))
    (root / "report.pdf").write_bytes(b"%PDF-fake\n" + f"{first}\f{second}".encode())
    ctx = _context(root, PagesHandler())
    package = ctx.reader("c", budget=ContextBudget(max_chars=300)).read("upload times out")
    part = _part(package)
    assert "upload times out" in part.content
    assert part.full_ref is not None
    assert part.full_ref.scope == "page:2"
    start, _ = parse_char_scope(part.ref.scope or "")
    assert start >= len(first)
    again = ctx.reader("d", budget=ContextBudget(max_chars=300)).read(
        ContextReadIntent(explicit_refs=(part.ref,))
    )
    assert [b.content for b in again.blocks] == [part.content]


def test_parts_of_an_item_and_of_its_passages_never_repeat_characters(notes: Path) -> None:
    """The whole file and each of its passages are all larger than the page: every part
    delivered is a different stretch, none overlapping another (no block twice)."""
    ctx = _context(notes)
    for budget in (300, 700, 1500):
        package = ctx.reader("c", budget=ContextBudget(max_chars=budget)).read("paragraph")
        spans = sorted(parse_char_scope(b.ref.scope or "") for b in package.blocks)
        assert spans, budget
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans)), spans
        assert package.used_chars <= budget


def test_a_page_larger_than_a_chunk_is_indexed_as_its_passages(tmp_path: Path) -> None:
    """With chunk_chars=500 the 1,300-character page 2 is ranked as passages: the one
    holding the match is delivered (inside page 2, whole), not the page, and the page
    is still read whole by its own ref."""
    root = tmp_path / "docs"
    root.mkdir()
    first = "Short first page. "
    second = "".join(f"Second page sentence {n}.\n" for n in range(30))
    second += "The upload times out after thirty seconds.\n"
    second += "".join(f"Closing sentence {n}.\n" for n in range(30))
    (root / "report.pdf").write_bytes(b"%PDF-fake\n" + f"{first}\f{second}".encode())
    host = host_with(PagesHandler())
    host.register(fts_plugin, name="fts")
    ctx = TaskContext("t", host=host)
    source = TaskWorkspace(root, host=host).source(chunk_chars=500)
    ctx.attach(source, binding_id="files")
    package = ctx.reader("c", budget=ContextBudget(max_chars=2000)).read("upload times out")
    best = package.blocks[0]
    assert best.ref.scope is not None
    assert best.ref.scope.startswith("chars:")
    assert "Page 2 (part" in (best.title or "")
    assert "upload times out" in best.content
    start, end = parse_char_scope(best.ref.scope)
    assert len(first) <= start < end <= len(first) + len(second)
    assert end - start <= 500
    assert not [b for b in package.blocks if b.ref.scope == "page:2"]
    page = ctx.reader("d").read(ContextReadIntent(explicit_refs=("ctx://files/report.pdf#page:2",)))
    assert page.blocks[0].content == second  # explicit refs come first
