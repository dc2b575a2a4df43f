"""TaskContext.list_descriptors: every binding's descriptors, page by page, on one snapshot."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from taskctx import TaskContext
from taskctx.errors import CursorError, SourceUnavailableError, StaleReaderError
from taskctx.listing import DescriptorListing
from taskctx.model import ContextBudget, DescriptorPage, EnumerationRequest
from taskctx.plugins import PluginHost
from taskctx.testing import MemorySource
from tests.core.sources import FailingSource, numbered


def _context(**bindings: MemorySource) -> TaskContext:
    ctx = TaskContext("listing", host=PluginHost(allow=[]))
    for binding_id, source in bindings.items():
        ctx.attach(source, binding_id=binding_id)
    return ctx


def _all_pages(
    ctx: TaskContext, page_size: int, *, include_hidden: bool = False
) -> list[DescriptorListing]:
    hidden = include_hidden
    pages = [ctx.list_descriptors(page_size=page_size, include_hidden=hidden)]
    while pages[-1].next_cursor is not None:
        cursor = pages[-1].next_cursor
        pages.append(ctx.list_descriptors(cursor, page_size=page_size, include_hidden=hidden))
    return pages


def _listed(pages: list[DescriptorListing]) -> list[tuple[str, str]]:
    return [(item.binding_id, item.descriptor.path) for page in pages for item in page.items]


@pytest.mark.parametrize("page_size", [1, 2, 3, 5, 7, 100])
@pytest.mark.parametrize("source_page", [1, 2, 4, 1000])
def test_pages_list_every_descriptor_once_in_binding_order(
    page_size: int, source_page: int
) -> None:
    """Whatever the listing's and the sources' page sizes, the pages together list every
    descriptor of every binding once, in binding order then path order, none over size."""
    a = MemorySource(numbered(5, prefix="a"), page_size=source_page)
    b = MemorySource(numbered(4, prefix="b"), page_size=source_page)
    pages = _all_pages(_context(first=a, second=b), page_size)
    expected = [("first", f"a-{n:05d}.txt") for n in range(5)]
    expected += [("second", f"b-{n:05d}.txt") for n in range(4)]
    assert _listed(pages) == expected
    assert all(len(page.items) <= page_size for page in pages)
    assert all(page.items for page in pages)
    assert all(page.revisions == {"first": "r0", "second": "r0"} for page in pages)


def test_hidden_paths_are_listed_only_when_asked() -> None:
    """Dot files and folders are left out unless ``include_hidden``."""
    source = MemorySource({".env": "x", ".git/config": "y", "a.txt": "z"}, page_size=1)
    ctx = _context(files=source)
    assert _listed(_all_pages(ctx, 1)) == [("files", "a.txt")]
    listed = _listed(_all_pages(ctx, 1, include_hidden=True))
    assert listed == [("files", ".env"), ("files", ".git/config"), ("files", "a.txt")]


def test_a_binding_that_does_not_answer_is_named_not_listed_empty() -> None:
    """A binding whose revision fails is in ``unavailable`` on every page; the rest list."""
    ctx = _context(down=FailingSource(), up=MemorySource(numbered(3)))
    pages = _all_pages(ctx, 2)
    assert _listed(pages) == [("up", f"item-{n:05d}.txt") for n in range(3)]
    assert all(page.unavailable == ("down",) for page in pages)
    assert pages[0].revisions["down"] is None


def test_a_source_that_moves_fails_the_listing() -> None:
    """A later page never mixes snapshots: a source changed since the first page fails
    the listing with StaleReaderError naming both revisions."""
    source = MemorySource(numbered(4))
    ctx = _context(files=source)
    first = ctx.list_descriptors(page_size=2)
    source.put("new.txt", "changed")
    assert first.next_cursor is not None
    with pytest.raises(StaleReaderError, match="moved from revision 'r0' to 'r1'"):
        ctx.list_descriptors(first.next_cursor, page_size=2)


def test_a_source_serving_pinned_revisions_keeps_its_listing() -> None:
    """A source that keeps history serves the pinned revision: the listing goes on."""
    source = MemorySource(numbered(4), keep_history=True)
    ctx = _context(files=source)
    first = ctx.list_descriptors(page_size=2)
    source.put("new.txt", "changed")
    assert first.next_cursor is not None
    rest = ctx.list_descriptors(first.next_cursor, page_size=2)
    assert [i.descriptor.path for i in rest.items] == ["item-00002.txt", "item-00003.txt"]


def test_changed_bindings_fail_the_listing() -> None:
    """Attaching or removing a binding after the first page fails the next one."""
    ctx = _context(files=MemorySource(numbered(3)))
    first = ctx.list_descriptors(page_size=1)
    ctx.attach(MemorySource({"b.txt": "b"}), binding_id="more")
    assert first.next_cursor is not None
    with pytest.raises(StaleReaderError, match="bindings changed"):
        ctx.list_descriptors(first.next_cursor, page_size=1)


def test_a_tampered_or_foreign_cursor_is_refused(tmp_path: Path) -> None:
    """Tampered, garbage, another task's, another key's and a reader's cursors all fail
    with CursorError."""
    ctx = _context(files=MemorySource(numbered(3)))
    cursor = ctx.list_descriptors(page_size=1).next_cursor
    assert cursor is not None
    for bad in (cursor[:-4] + "AAAA", "garbage", ""):
        with pytest.raises(CursorError):
            ctx.list_descriptors(bad, page_size=1)
    other_task = TaskContext("another", host=PluginHost(allow=[]))
    other_task.attach(MemorySource(numbered(3)), binding_id="files")
    with pytest.raises(CursorError):
        other_task.list_descriptors(cursor, page_size=1)
    other_key = TaskContext("listing", host=PluginHost(allow=[]), state_dir=tmp_path / "k")
    other_key.attach(MemorySource(numbered(3)), binding_id="files")
    with pytest.raises(CursorError, match="signature"):
        other_key.list_descriptors(cursor, page_size=1)
    package = ctx.reader("test", budget=ContextBudget(max_blocks=1)).read("")
    assert package.cursor is not None
    with pytest.raises(CursorError):  # signed for another purpose
        ctx.list_descriptors(package.cursor, page_size=1)


def test_an_expired_cursor_is_refused() -> None:
    """A listing cursor past its ttl fails with CursorError saying it expired."""
    ctx = _context(files=MemorySource(numbered(3)))
    cursor = ctx.list_descriptors(page_size=1, cursor_ttl=0.2).next_cursor
    assert cursor is not None
    time.sleep(0.4)
    with pytest.raises(CursorError, match="expired"):
        ctx.list_descriptors(cursor, page_size=1)


class RepeatsItsCursor(MemorySource):
    """Answers every enumeration with the cursor it was given: it would list forever."""

    async def async_enumerate_descriptors(self, request: EnumerationRequest) -> DescriptorPage:
        page = await super().async_enumerate_descriptors(request)
        return page.model_copy(update={"next_cursor": request.cursor or "0"})


def test_a_source_repeating_its_cursor_fails_the_listing() -> None:
    """A source that hands back the cursor it was given is unavailable, not looped on."""
    ctx = _context(loop=RepeatsItsCursor(numbered(2)))
    with pytest.raises(SourceUnavailableError, match="same enumeration cursor twice"):
        ctx.list_descriptors(page_size=5)


@pytest.mark.parametrize("page_size", [0, -1, True, 1.5, "10"])
def test_a_bad_page_size_is_refused(page_size: object) -> None:
    """page_size is a whole number of at least 1; anything else names the value."""
    ctx = _context(files=MemorySource(numbered(1)))
    with pytest.raises(ValueError, match="page_size"):
        ctx.list_descriptors(page_size=page_size)  # type: ignore[arg-type]


@pytest.mark.parametrize("ttl", [0, -1, float("nan"), 10**12])
def test_a_bad_cursor_ttl_is_refused(ttl: float) -> None:
    """cursor_ttl is checked by the kernel's one ttl rule."""
    ctx = _context(files=MemorySource(numbered(1)))
    with pytest.raises(ValueError, match="cursor_ttl"):
        ctx.list_descriptors(page_size=1, cursor_ttl=ttl)
