"""The reading rules of DESIGN.md, one group per rule, on in-memory test sources."""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from taskctx import (
    ContextBudget,
    ContextConsumer,
    ContextPackage,
    ContextReadIntent,
    ContextRef,
    CursorError,
    MediaError,
    PluginHost,
    RequiredOverflowError,
    StaleReaderError,
    TaskContext,
    hookimpl,
)
from taskctx.errors import SyncInAsyncError, UnknownAliasError
from taskctx.media import handler_missing_message
from taskctx.model import (
    Completeness,
    CoverageOutcome,
    CoverageStatus,
    OmissionReason,
    Representation,
)
from taskctx.protocols import SelectionRequest
from taskctx.sections import parse_char_scope
from taskctx.testing import MemorySource
from taskctx.testing import make_png as png
from tests.core.sources import (
    AlwaysMovingSource,
    BrokenReadSource,
    FailingSource,
    FailsOnEnumerate,
    MovesOnceSource,
    numbered,
    selector_host,
)


@pytest.fixture
def host() -> PluginHost:
    """A host with the kernel built-ins only."""
    return PluginHost(allow=[])


def host_with_provider(provider: object) -> PluginHost:
    """A built-ins-only host with an index ``provider`` registered through the hook."""

    class Plugin:
        @hookimpl
        def register_index_providers(self, register):  # type: ignore[no-untyped-def]
            register(provider)

    host = PluginHost(allow=[])
    host.register(Plugin(), name="test-provider")
    return host


def make_context(host: PluginHost, **sources: MemorySource) -> TaskContext:
    """A TaskContext with each source attached under its keyword name."""
    ctx = TaskContext("task-1", host=host)
    for binding_id, source in sources.items():
        ctx.attach(source, binding_id=binding_id)
    return ctx


def all_pages(
    ctx: TaskContext, intent: ContextReadIntent, budget: ContextBudget, consumer: str = "agent"
) -> list[ContextPackage]:
    """Every page of one result."""
    reader = ctx.reader(consumer=consumer, budget=budget)
    pages = [reader.read(intent)]
    while pages[-1].has_more:
        pages.append(reader.read_next(pages[-1].cursor))
    return pages


# -- rule 1: one pinned snapshot ---------------------------------------------------


def test_read_on_stale_reader_fails_until_refreshed(host: PluginHost) -> None:
    """A source change after the pin makes the next read fail; refresh() reads the new state."""
    source = MemorySource(numbered(3))
    ctx = make_context(host, mem=source)
    reader = ctx.reader(consumer="agent")
    first = reader.read("item")
    source.put("new.txt", "arrived later")
    with pytest.raises(StaleReaderError, match="mem"):
        reader.read("item")
    reader.refresh()
    again = reader.read(ContextReadIntent(query="item"))
    assert first.source_coverage["mem"].considered == 3
    assert again.source_coverage["mem"].considered == 4


def test_structure_change_makes_reader_stale(host: PluginHost) -> None:
    """Putting an entry after the pin changes the TaskContext revision: the reader is stale."""
    ctx = make_context(host, mem=MemorySource(numbered(2)))
    reader = ctx.reader(consumer="agent")
    reader.read("x")
    ctx.put(role="instruction", content="new rule", required=True)
    with pytest.raises(StaleReaderError, match="task context changed"):
        reader.read("x")


def test_revision_moving_once_during_enumeration_repins(host: PluginHost) -> None:
    """A revision advanced by enumeration itself is re-pinned once and the read succeeds."""
    source = MovesOnceSource(numbered(2))
    ctx = make_context(host, lazy=source)
    package = ctx.reader(consumer="agent").read("anything")
    assert package.snapshot.sources["lazy"] == "r1"
    assert package.source_coverage["lazy"].considered == 3


def test_continuous_change_fails_closed(host: PluginHost) -> None:
    """A source that changes on every enumeration makes the read fail, not mix states."""
    ctx = make_context(host, busy=AlwaysMovingSource(numbered(2)))
    with pytest.raises(StaleReaderError, match="kept changing"):
        ctx.reader(consumer="agent").read("anything")


def test_read_next_after_change_is_stale_without_history(host: PluginHost) -> None:
    """Continuing a result after a change fails when the source cannot serve the old revision."""
    source = MemorySource(numbered(10))
    ctx = make_context(host, mem=source)
    reader = ctx.reader(consumer="agent", budget=ContextBudget(max_chars=250, max_blocks=10))
    first = reader.read("item")
    assert first.has_more
    source.put("item-00001.txt", "changed")
    with pytest.raises(StaleReaderError):
        reader.read_next(first.cursor)


def test_read_next_continues_pinned_snapshot_when_source_keeps_history(host: PluginHost) -> None:
    """With history, later pages come from the pinned snapshot; a fresh query sees new data."""
    source = MemorySource(numbered(6), keep_history=True)
    ctx = make_context(host, mem=source)
    budget = ContextBudget(max_chars=250, max_blocks=10)
    reader = ctx.reader(consumer="agent", budget=budget)
    pages = [reader.read("item")]
    source.put("item-00005.txt", "item 5: rewritten after the pin")
    source.put("item-00099.txt", "item 99: added after the pin")
    while pages[-1].has_more:
        pages.append(reader.read_next(pages[-1].cursor))
    contents = [b.content for p in pages for b in p.blocks]
    assert len(contents) == 6
    assert not any("after the pin" in c for c in contents)
    fresh = ctx.reader(consumer="agent", budget=ContextBudget(max_chars=5000)).read("item")
    assert fresh.source_coverage["mem"].considered == 7


# -- rule 2: required blocks and explicit refs -----------------------------------


def test_required_overflow_raises_inside_read(host: PluginHost) -> None:
    """A required entry larger than the budget fails the read instead of being cut."""
    ctx = make_context(host)
    ctx.put(role="instruction", content="x" * 500, required=True)
    reader = ctx.reader(consumer="agent", budget=ContextBudget(max_chars=100))
    with pytest.raises(RequiredOverflowError, match="500 chars"):
        reader.read("anything")


def test_required_block_count_overflow_raises(host: PluginHost) -> None:
    """More required blocks than max_blocks fail even when their characters fit."""
    ctx = make_context(host)
    for n in range(3):
        ctx.put(role="instruction", content=f"rule {n}", required=True)
    with pytest.raises(RequiredOverflowError, match="max_blocks=2"):
        ctx.reader(consumer="a", budget=ContextBudget(max_chars=1000, max_blocks=2)).read("x")


def test_explicit_ref_over_budget_is_never_truncated(host: PluginHost) -> None:
    """An explicitly requested ref that does not fit raises RequiredOverflowError."""
    source = MemorySource({"big.txt": "y" * 400})
    ctx = make_context(host, mem=source)
    intent = ContextReadIntent(query="", explicit_refs=["ctx://mem/big.txt"])
    with pytest.raises(RequiredOverflowError):
        ctx.reader(consumer="a", budget=ContextBudget(max_chars=100)).read(intent)


LONG_GUIDE = "# Guide\n\nintro\n\n" + "".join(
    f"## Step {n}\n\n" + f"details of step {n}. " * 20 + "\n\n" for n in range(1, 7)
)


def test_lossy_digest_delivers_a_bounded_outline(host: PluginHost) -> None:
    """With lossy_digest, an oversized required entry becomes an outline with section refs."""
    ctx = make_context(host)
    ctx.put(role="instruction", content=LONG_GUIDE, required=True, title="guide")
    reader = ctx.reader(consumer="a", budget=ContextBudget(max_chars=900, max_blocks=5))
    package = reader.read(ContextReadIntent(query="", required_overflow="lossy_digest"))
    (block,) = package.blocks
    assert block.completeness is Completeness.LOSSY
    assert block.representation is Representation.LOSSY_DIGEST
    assert block.chars_original == len(LONG_GUIDE)
    assert block.chars <= 900
    assert package.used_chars <= 900
    assert block.full_ref is not None
    assert [r.scope for r in block.section_refs][:2] == ["lines:1-28", "lines:5-8"]
    titles = [line for line in block.content.splitlines() if "Step" in line]
    assert [t.split("[[")[0].strip() for t in titles] == [f"- Step {n}" for n in range(1, 7)]
    (omission,) = package.omissions
    assert omission.required
    assert omission.size == len(LONG_GUIDE)
    section_alias = block.content.split("Step 2 [[ref:")[1].split("]]")[0]
    section_ref = package.resolve_alias(section_alias)
    exact = ctx.reader(consumer="a", budget=ContextBudget(max_chars=3000)).read(
        ContextReadIntent(explicit_refs=[section_ref])
    )
    assert exact.blocks[-1].content.startswith("## Step 2")
    assert exact.blocks[-1].completeness is Completeness.COMPLETE


def test_lossy_digest_that_cannot_fit_still_fails(host: PluginHost) -> None:
    """If even the outline exceeds the budget, the read fails closed."""
    ctx = make_context(host)
    ctx.put(role="instruction", content=LONG_GUIDE, required=True)
    reader = ctx.reader(consumer="a", budget=ContextBudget(max_chars=40))
    with pytest.raises(RequiredOverflowError, match="lossy digest"):
        reader.read(ContextReadIntent(required_overflow="lossy_digest"))


def test_missing_explicit_ref_is_reported_not_dropped(host: PluginHost) -> None:
    """An explicit ref that does not exist is a required not_found omission with a diagnostic."""
    ctx = make_context(host, mem=MemorySource(numbered(2)))
    intent = ContextReadIntent(explicit_refs=["ctx://mem/missing.txt", "ctx://ghost/x.txt"])
    package = ctx.reader(consumer="a").read(intent)
    reasons = {(str(o.ref), o.reason, o.required) for o in package.omissions}
    assert ("ctx://mem/missing.txt", OmissionReason.NOT_FOUND, True) in reasons
    assert ("ctx://ghost/x.txt", OmissionReason.NOT_FOUND, True) in reasons
    messages = [d.message for d in package.diagnostics if d.code == "not_found"]
    assert len(messages) == 2
    assert "names no attached binding 'ghost'" in messages[1]


def test_explicit_refs_come_before_optional_candidates(host: PluginHost) -> None:
    """Explicit refs are delivered whole and first, whatever their rank."""
    ctx = make_context(host, mem=MemorySource(numbered(5)))
    intent = ContextReadIntent(explicit_refs=["ctx://mem/item-00004.txt"])
    package = ctx.reader(consumer="a", budget=ContextBudget(max_chars=250)).read(intent)
    assert str(package.blocks[0].ref) == "ctx://mem/item-00004.txt"
    assert package.blocks[0].required


# -- rule 3: coverage per binding --------------------------------------------------


def test_coverage_counts_agree(host: PluginHost) -> None:
    """considered counts the matching set, delivered the blocks, omitted the difference."""
    ctx = make_context(host, mem=MemorySource(numbered(20)))
    package = ctx.reader(consumer="a", budget=ContextBudget(max_chars=450, max_blocks=50)).read(
        "item"
    )
    cov = package.source_coverage["mem"]
    assert (cov.considered, cov.delivered, cov.omitted) == (20, 4, 16)
    assert cov.status is CoverageStatus.PARTIAL
    assert cov.outcome is CoverageOutcome.MATCHED
    assert "no_lexical_provider" in cov.reasons


def test_failed_source_is_unavailable_while_others_deliver(host: PluginHost) -> None:
    """A failing source is reported unavailable with a diagnostic; others still deliver."""
    ctx = make_context(
        host,
        good=MemorySource(numbered(2)),
        down=FailingSource(numbered(2)),
        flaky=FailsOnEnumerate(numbered(2)),
    )
    package = ctx.reader(consumer="a").read("item")
    assert package.source_coverage["good"].status is CoverageStatus.COMPLETE
    for binding in ("down", "flaky"):
        cov = package.source_coverage[binding]
        assert cov.outcome is CoverageOutcome.UNAVAILABLE
        assert cov.status is CoverageStatus.UNKNOWN
        assert cov.considered is None
        assert cov.omitted is None
    messages = " ".join(d.message for d in package.diagnostics if d.code == "source_unavailable")
    assert "connection refused" in messages
    assert "disk read error" in messages
    assert len(package.blocks) == 2


def test_filtered_out_no_match_and_matched_are_distinct(host: PluginHost) -> None:
    """Not searched, searched with no match, and matched are three different outcomes."""
    ctx = make_context(
        host,
        a=MemorySource(numbered(2)),
        b=MemorySource({"notes/x.txt": "x"}),
        c=MemorySource(numbered(1)),
    )
    intent = ContextReadIntent(filters={"bindings": ("a", "b"), "path_prefix": "item"})
    package = ctx.reader(consumer="a").read(intent)
    assert package.source_coverage["a"].outcome is CoverageOutcome.MATCHED
    assert package.source_coverage["b"].outcome is CoverageOutcome.NO_MATCH_IN_SCOPE
    assert package.source_coverage["b"].status is CoverageStatus.COMPLETE
    assert package.source_coverage["b"].considered == 0
    assert package.source_coverage["c"].outcome is CoverageOutcome.NOT_SEARCHED
    assert package.source_coverage["c"].considered is None


def test_unreadable_item_is_read_failed_and_others_deliver(host: PluginHost) -> None:
    """An item that fails to read is a read_failed omission with a diagnostic."""
    source = BrokenReadSource({"a.txt": "fine", "broken.txt": "unreachable", "c.txt": "fine"})
    package = make_context(host, s=source).reader(consumer="a").read("x")
    assert [b.ref.path for b in package.blocks] == ["a.txt", "c.txt"]
    assert [o.reason for o in package.omissions] == [OmissionReason.READ_FAILED]
    assert any(d.code == "read_failed" for d in package.diagnostics)


# -- rule 4: paging and cursors ----------------------------------------------------


def test_pages_deliver_everything_once_and_last_page_is_partial(host: PluginHost) -> None:
    """Pages of one result cover the whole set exactly once; the last is still partial."""
    ctx = make_context(host, mem=MemorySource(numbered(23)))
    pages = all_pages(ctx, ContextReadIntent(query="item"), ContextBudget(max_chars=450))
    paths = [b.ref.path for p in pages for b in p.blocks]
    assert paths == sorted(numbered(23))
    assert len(pages) == 6
    assert not pages[-1].has_more
    assert pages[-1].cursor is None
    for page in pages:
        cov = page.source_coverage["mem"]
        assert cov.considered == 23
        assert cov.status is CoverageStatus.PARTIAL
        assert cov.omitted == 23 - len(page.blocks)


def test_single_page_result_is_complete(host: PluginHost) -> None:
    """A result that fits one page is complete and has no cursor."""
    ctx = make_context(host, mem=MemorySource(numbered(3)))
    package = ctx.reader(consumer="a").read("item")
    assert package.source_coverage["mem"].status is CoverageStatus.COMPLETE
    assert not package.has_more
    assert package.cursor is None


def test_tampered_and_foreign_cursors_are_refused(host: PluginHost) -> None:
    """A changed byte, another task's cursor or garbage raises CursorError."""
    ctx = make_context(host, mem=MemorySource(numbered(10)))
    reader = ctx.reader(consumer="a", budget=ContextBudget(max_chars=250))
    cursor = reader.read("item").cursor
    assert cursor is not None
    payload, signature = cursor.split(".")
    flipped = payload[:-2] + ("A" if payload[-2] != "A" else "B") + payload[-1]
    for bad in (f"{flipped}.{signature}", "not-a-cursor", f"{payload}.{signature[::-1]}", ""):
        with pytest.raises(CursorError):
            reader.read_next(bad)
    other = TaskContext("task-2", host=host)
    other.attach(MemorySource(numbered(10)), binding_id="mem")
    with pytest.raises(CursorError, match="another task"):
        other.reader(consumer="a").read_next(cursor)


def test_expired_cursor_is_refused(host: PluginHost) -> None:
    """A cursor past its expiry raises CursorError."""
    ctx = make_context(host, mem=MemorySource(numbered(10)))
    reader = ctx.reader(consumer="a", budget=ContextBudget(max_chars=250), cursor_ttl=0.01)
    cursor = reader.read("item").cursor
    time.sleep(0.02)  # a TTL must be positive (cursor.check_ttl): let this one run out
    with pytest.raises(CursorError, match="expired"):
        reader.read_next(cursor)


def test_cursor_works_from_a_new_instance(host: PluginHost) -> None:
    """A new TaskContext over the same source continues a cursor an earlier one issued."""
    items = numbered(9)
    first_ctx = make_context(host, mem=MemorySource(items, identity="mem:shared"))
    page1 = first_ctx.reader(consumer="a", budget=ContextBudget(max_chars=250)).read("item")
    second_ctx = make_context(PluginHost(allow=[]), mem=MemorySource(items, identity="mem:shared"))
    page2 = second_ctx.reader(consumer="a", budget=ContextBudget(max_chars=250)).read_next(
        page1.cursor
    )
    assert page2.page == 2
    assert page2.blocks[0].ref.path == sorted(items)[len(page1.blocks)]
    assert page2.snapshot == page1.snapshot


# -- rule 5: media -----------------------------------------------------------------


def test_binary_items_are_reference_only(host: PluginHost) -> None:
    """Images, archives and unknown binaries become reference-only omissions, never text."""
    source = MemorySource(
        {
            "a.txt": "text",
            "pic.png": png(2, 2),
            "pack.zip": b"PK\x03\x04zz",
            "blob.bin": b"\x00\x01\x02",
            "main.py": "",
        }
    )
    package = make_context(host, s=source).reader(consumer="a").read("x")
    assert sorted(b.ref.path for b in package.blocks) == ["a.txt", "main.py"]
    reasons = {o.ref.path: o.reason for o in package.omissions}
    assert reasons == {
        "pic.png": OmissionReason.REFERENCE_ONLY,
        "pack.zip": OmissionReason.REFERENCE_ONLY,
        "blob.bin": OmissionReason.REFERENCE_ONLY,
    }


def test_documents_without_handler_are_unsupported_media(host: PluginHost) -> None:
    """A PDF with no FileIOHandler installed is reference only with a diagnostic."""
    source = MemorySource({"report.pdf": b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n"})
    package = make_context(host, s=source).reader(consumer="a").read("x")
    assert package.omissions[0].reason is OmissionReason.UNSUPPORTED_MEDIA
    message = handler_missing_message("report.pdf", "application/pdf")
    assert [(d.code, d.message) for d in package.diagnostics] == [("handler_missing", message)]


def test_images_attach_only_for_consumers_that_declare_it(host: PluginHost) -> None:
    """A consumer with image capability gets a validated attachment with its dimensions."""
    source = MemorySource({"pic.png": png(3, 2)})
    ctx = make_context(host, s=source)
    consumer = ContextConsumer(name="vision", capabilities={"attachments": {"image": True}})
    package = ctx.reader(consumer=consumer).read("x")
    (attachment,) = package.attachments
    assert (attachment.width, attachment.height, attachment.media_type) == (3, 2, "image/png")
    assert base64.b64decode(attachment.data_base64) == png(3, 2)
    assert package.source_coverage["s"].delivered == 1


def test_invalid_image_fails_the_read(host: PluginHost) -> None:
    """An image that does not parse fails the read for an image-capable consumer."""
    source = MemorySource({"pic.png": b"\x89PNG\r\n\x1a\n" + b"\x00" * 10})
    consumer = ContextConsumer(name="vision", capabilities={"attachments": {"image": True}})
    with pytest.raises(MediaError):
        make_context(host, s=source).reader(consumer=consumer).read("x")


def test_direct_entry_media_type_is_checked(host: PluginHost) -> None:
    """Text content declared as an image is refused; text declared as Python is accepted."""
    ctx = make_context(host)
    with pytest.raises(MediaError, match="image/png"):
        ctx.put(role="information", content="not an image", media_type="image/png")
    ctx.put(role="information", content="print(1)\n", media_type="text/x-python")


# -- rule 6: budgets -----------------------------------------------------------------


@pytest.mark.parametrize(("max_chars", "max_blocks"), [(120, 50), (450, 3), (5000, 7), (99, 1)])
def test_budget_is_never_exceeded_and_nothing_optional_is_cut(
    host: PluginHost, max_chars: int, max_blocks: int
) -> None:
    """Delivered characters and blocks stay within budget; every optional block is whole,
    or (an item larger than the page) a part of it marked as one, never a cut."""
    items = numbered(12)
    ctx = make_context(host, mem=MemorySource(items))
    for page in all_pages(
        ctx,
        ContextReadIntent(query="item"),
        ContextBudget(max_chars=max_chars, max_blocks=max_blocks),
    ):
        assert page.used_chars <= max_chars
        assert len(page.blocks) <= max_blocks
        assert page.used_chars == sum(len(b.content) for b in page.blocks)
        for block in page.blocks:
            if max_chars >= 100:
                assert block.completeness is Completeness.COMPLETE
                assert block.chars == len(block.content) == 100
                continue
            assert block.completeness is Completeness.PART
            assert block.full_ref == block.ref.with_scope(None)
            assert block.chars_original == 100
            start, end = parse_char_scope(block.ref.scope or "")
            assert block.content == items[block.ref.path][start:end]


def test_item_larger_than_a_page_is_reported_and_paging_goes_on(host: PluginHost) -> None:
    """An optional item larger than max_chars is omitted as larger_than_page; others follow."""
    source = MemorySource({"a.txt": "a" * 50, "huge.txt": "h" * 1000, "z.txt": "z" * 50})
    pages = all_pages(
        make_context(host, s=source), ContextReadIntent(query="x"), ContextBudget(max_chars=200)
    )
    assert [b.ref.path for p in pages for b in p.blocks] == ["a.txt", "z.txt"]
    omissions = [o for p in pages for o in p.omissions]
    assert [(o.ref.path, o.reason) for o in omissions] == [
        ("huge.txt", OmissionReason.LARGER_THAN_PAGE)
    ]


def test_budget_counts_characters_not_bytes(host: PluginHost) -> None:
    """A 100-character text of multi-byte characters fits a 100-character budget."""
    source = MemorySource({"cjk.txt": "汉" * 100})
    package = (
        make_context(host, s=source)
        .reader(consumer="a", budget=ContextBudget(max_chars=100))
        .read("x")
    )
    assert package.blocks[0].content == "汉" * 100


# -- rule 7: aliases -------------------------------------------------------------------


def test_render_shows_aliases_only_and_they_resolve(host: PluginHost) -> None:
    """The model sees [[ref:ref_N]] aliases, never canonical refs; the host maps them back."""
    ctx = make_context(host, mem=MemorySource(numbered(3)))
    ctx.put(role="instruction", content="Be brief.", required=True)
    package = ctx.reader(consumer="a").read("item")
    text = package.render()
    assert "ctx://" not in text
    assert "[[ref:ref_1]]" in text
    assert package.resolve_alias("[[ref:ref_2]]") == package.blocks[1].ref
    with pytest.raises(UnknownAliasError):
        package.resolve_alias("ref_99")
    with pytest.raises(KeyError):
        package.resolve_alias("ctx://mem/item-00000.txt")


def test_aliases_are_stable_across_pages_of_a_reader(host: PluginHost) -> None:
    """The same ref keeps its alias on every page; new refs get new aliases."""
    ctx = make_context(host, mem=MemorySource(numbered(6)))
    pages = all_pages(ctx, ContextReadIntent(query="item"), ContextBudget(max_chars=250))
    aliases = [b.alias for p in pages for b in p.blocks]
    assert len(set(aliases)) == len(aliases) == 6


# -- reading behaviour beyond the seven rules --------------------------------------------


def test_hidden_files_need_include_hidden(host: PluginHost) -> None:
    """.env and .git/ are not offered unless filters say include_hidden=True."""
    source = MemorySource({".env": "SECRET=1", ".git/config": "[core]", "a.txt": "a"})
    ctx = make_context(host, s=source)
    plain = ctx.reader(consumer="a").read("x")
    assert [b.ref.path for b in plain.blocks] == ["a.txt"]
    hidden = ctx.reader(consumer="a").read(
        ContextReadIntent(query="x", filters={"include_hidden": True})
    )
    assert sorted(b.ref.path for b in hidden.blocks) == [".env", ".git/config", "a.txt"]


def test_unknown_filter_keys_are_refused() -> None:
    """A misspelled filter is an error, not a silently ignored key."""
    with pytest.raises(ValueError, match="include_hiden"):
        ContextReadIntent(query="x", filters={"include_hiden": True})


def test_same_read_on_same_snapshot_gives_same_package(host: PluginHost) -> None:
    """Two readers on one snapshot deliver the same blocks in the same order."""
    ctx = make_context(host, a=MemorySource(numbered(7)), b=MemorySource(numbered(4, prefix="b")))
    budget = ContextBudget(max_chars=650)
    one = ctx.reader(consumer="a", budget=budget).read("item")
    two = ctx.reader(consumer="a", budget=budget).read("item")
    assert [(b.ref, b.digest) for b in one.blocks] == [(b.ref, b.digest) for b in two.blocks]
    assert one.source_coverage == two.source_coverage


def test_optional_selection_none_delivers_required_core_only(host: PluginHost) -> None:
    """optional_selection='none' delivers required blocks and no optional ones."""
    ctx = make_context(host, mem=MemorySource(numbered(3)))
    ctx.put(role="instruction", content="core", required=True)
    package = ctx.reader(consumer="a").read(
        ContextReadIntent(query="item", optional_selection="none")
    )
    assert [b.content for b in package.blocks] == ["core"]
    assert package.source_coverage["mem"].status is CoverageStatus.PARTIAL
    assert not package.has_more


def test_roles_filter_optional_candidates(host: PluginHost) -> None:
    """roles= keeps optional candidates of those roles; required blocks stay."""
    ctx = make_context(host)
    ctx.put(role="instruction", content="always", required=True)
    ctx.put(role="example", content="an example")
    ctx.put(role="information", content="a fact")
    package = ctx.reader(consumer="a").read(ContextReadIntent(roles=("example",)))
    assert [b.content for b in package.blocks] == ["always", "an example"]


def test_already_disclosed_blocks_are_not_repeated(host: PluginHost) -> None:
    """A second read by the same reader omits what it already delivered whole."""
    ctx = make_context(host, mem=MemorySource(numbered(2)))
    reader = ctx.reader(consumer="a")
    reader.read("item")
    again = reader.read("item")
    assert not again.blocks
    assert {o.reason for o in again.omissions} == {OmissionReason.ALREADY_DISCLOSED}


def test_sections_covered_by_a_delivered_parent(host: PluginHost) -> None:
    """A section descriptor whose whole item was delivered is covered_by_parent."""
    source = SectionedSource({"guide.md": "# A\n\none\n\n# B\n\ntwo\n"})
    package = make_context(host, s=source).reader(consumer="a").read("x")
    assert [b.ref.scope for b in package.blocks] == [None]
    assert {o.reason for o in package.omissions} == {OmissionReason.COVERED_BY_PARENT}
    cov = package.source_coverage["s"]
    assert (cov.considered, cov.delivered, cov.status) == (3, 3, CoverageStatus.COMPLETE)


class SectionedSource(MemorySource):
    """Also enumerates one descriptor per Markdown section, read via the lines reader."""

    async def async_enumerate_descriptors(self, request):  # type: ignore[no-untyped-def]
        page = await super().async_enumerate_descriptors(request)
        extra = [
            d.model_copy(update={"scope": s.scope, "chars": s.chars, "sections": ()})
            for d in page.descriptors
            for s in d.sections
        ]
        return page.model_copy(update={"descriptors": (*page.descriptors, *extra)})


def test_scoped_ref_is_read_by_the_registered_lines_reader(host: PluginHost) -> None:
    """An explicit lines: scope is served by the kernel's LineRangeReader."""
    source = MemorySource({"code.py": "".join(f"line {n}\n" for n in range(1, 11))})
    intent = ContextReadIntent(explicit_refs=["ctx://s/code.py#lines:3-4"])
    package = make_context(host, s=source).reader(consumer="a").read(intent)
    assert package.blocks[0].content == "line 3\nline 4\n"
    assert package.blocks[0].scope == "lines:3-4"


# -- selection --------------------------------------------------------------------------


class ListSelector:
    """A selector that answers with fixed keys (or raises)."""

    name = "fixed"

    def __init__(self, answer: Sequence[str] | Exception) -> None:
        self.answer = answer
        self.requests: list[SelectionRequest] = []

    async def async_select(self, request: SelectionRequest) -> Sequence[str]:
        self.requests.append(request)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


class ChooseAllSelector(ListSelector):
    """A selector that chooses every candidate it is shown."""

    def __init__(self) -> None:
        super().__init__([])

    async def async_select(self, request: SelectionRequest) -> Sequence[str]:
        self.requests.append(request)
        return [candidate.key for candidate in request.candidates]


def test_selector_choice_is_delivered_in_rank_order() -> None:
    """Selected keys are delivered in rank order; the rest are not_selected."""
    selector = ListSelector(["c3", "c1"])
    ctx = make_context(selector_host(selector), mem=MemorySource(numbered(4)))
    package = ctx.reader(consumer="a", selector="fixed").read("item")
    assert [b.ref.path for b in package.blocks] == ["item-00000.txt", "item-00002.txt"]
    assert sorted(o.reason for o in package.omissions) == [OmissionReason.NOT_SELECTED] * 2
    request = selector.requests[0]
    assert [c.key for c in request.candidates] == ["c1", "c2", "c3", "c4"]
    assert all("ctx://" not in c.preview for c in request.candidates)


def test_chosen_candidates_past_a_full_page_open_the_next_page() -> None:
    """When the selector chooses more than the page holds, the first that did not fit opens
    the next page (the selector is asked again there), as in rank order; none is lost."""
    selector = ChooseAllSelector()
    ctx = make_context(selector_host(selector), mem=MemorySource(numbered(5)))
    reader = ctx.reader(consumer="a", selector="fixed", budget=ContextBudget(max_blocks=2))
    first = reader.read("item")
    assert [b.ref.path for b in first.blocks] == ["item-00000.txt", "item-00001.txt"]
    assert [o.reason for o in first.omissions] == [OmissionReason.OVER_BLOCK_BUDGET]
    assert first.cursor is not None
    second = reader.read_next(first.cursor)
    assert [b.ref.path for b in second.blocks] == ["item-00002.txt", "item-00003.txt"]
    assert [c.key for c in selector.requests[1].candidates] == ["c1", "c2", "c3"]
    assert not first.diagnostics
    assert not second.diagnostics


@pytest.mark.parametrize("answer", [["c1", "c1"], ["c1", "nope"], "c1", [1]])
def test_invalid_selection_is_not_trusted(answer: Sequence[str]) -> None:
    """Unknown or duplicate keys make the whole answer untrusted; rank order is used."""
    ctx = make_context(selector_host(ListSelector(answer)), mem=MemorySource(numbered(3)))
    package = ctx.reader(consumer="a", selector="fixed").read("item")
    assert len(package.blocks) == 3
    assert [d.code for d in package.diagnostics] == ["selection_invalid"]


def test_failing_selector_falls_back_to_rank_order() -> None:
    """A selector that raises is reported and the read still delivers."""
    ctx = make_context(
        selector_host(ListSelector(RuntimeError("model down"))), mem=MemorySource(numbered(2))
    )
    package = ctx.reader(consumer="a", selector="fixed").read("item")
    assert len(package.blocks) == 2
    assert package.diagnostics[0].code == "selector_failed"


# -- facades, state, serialisation -------------------------------------------------------


def test_sync_facade_refuses_inside_event_loop(host: PluginHost) -> None:
    """Calling read() inside a running loop raises a clear error naming async_read."""
    reader = make_context(host, mem=MemorySource(numbered(1))).reader(consumer="a")

    async def main() -> ContextPackage:
        with pytest.raises(SyncInAsyncError, match="async_read"):
            reader.read("x")
        return await reader.async_read("x")

    assert asyncio.run(main()).blocks


def test_export_and_restore_reader(host: PluginHost, tmp_path: Path) -> None:
    """A reader restored from JSON state continues paging with the same aliases."""
    ctx = make_context(host, mem=MemorySource(numbered(8)))
    reader = ctx.reader(consumer="a", phase="planning", budget=ContextBudget(max_chars=250))
    first = reader.read("item")
    state_file = tmp_path / "state.json"
    import json

    state_file.write_text(json.dumps(reader.export_state()))
    restored = ctx.restore_reader(state_file.read_text())
    second = restored.read_next(first.cursor)
    assert second.phase == "planning"
    assert second.blocks[0].alias == first.omissions[-1].alias  # the ref that opened page 2
    assert second.blocks[1].alias == f"ref_{len(first.aliases) + 1}"


def test_package_json_round_trip(host: PluginHost) -> None:
    """A package survives model_dump_json / model_validate_json unchanged."""
    ctx = make_context(host, mem=MemorySource(numbered(5)))
    ctx.put(role="instruction", content=LONG_GUIDE, required=True)
    package = ctx.reader(consumer="a", budget=ContextBudget(max_chars=700)).read(
        ContextReadIntent(query="item", required_overflow="lossy_digest")
    )
    again = ContextPackage.model_validate_json(package.model_dump_json())
    assert again == package
    assert again.render() == package.render()


def test_ref_round_trip_and_parse_errors() -> None:
    """str(ref) is canonical and parses back; malformed refs name the problem."""
    refs = [
        ContextRef(binding="b", path="a b/ü#?.txt", scope="lines:1-2", version="sha256:x"),
        ContextRef(binding="x.y-z", path="p"),
        ContextRef(binding="_direct", path="entry-1"),
    ]
    for ref in refs:
        assert ContextRef.parse(str(ref)) == ref
    for bad in ("http://x/y", "ctx://", "ctx:///path", "ctx://bad binding/x"):
        with pytest.raises(ValueError):  # noqa: PT011
            ContextRef.parse(bad)


# -- regressions found while writing the docs ----------------------------------------------


def test_explicit_ref_that_also_ranks_is_delivered_once(host: PluginHost) -> None:
    """An explicit ref inside the matching set is one block and counted once."""
    ctx = make_context(host, mem=MemorySource(numbered(3)))
    intent = ContextReadIntent(query="item", explicit_refs=["ctx://mem/item-00001.txt"])
    package = ctx.reader(consumer="a").read(intent)
    assert [b.ref.path for b in package.blocks] == [
        "item-00001.txt",
        "item-00000.txt",
        "item-00002.txt",
    ]
    cov = package.source_coverage["mem"]
    assert (cov.considered, cov.delivered, cov.omitted) == (3, 3, 0)
    assert cov.status is CoverageStatus.COMPLETE


def test_explicit_ref_outside_the_scope_widens_considered(host: PluginHost) -> None:
    """An explicit hidden file is delivered and counted on top of the matching set."""
    ctx = make_context(host, mem=MemorySource({"a.txt": "a", ".env": "X=1"}))
    package = ctx.reader(consumer="a").read(ContextReadIntent(explicit_refs=["ctx://mem/.env"]))
    cov = package.source_coverage["mem"]
    assert (cov.considered, cov.delivered) == (2, 2)


def test_scope_nobody_serves_fails_closed(host: PluginHost) -> None:
    """A scope with no reader is an unsupported_scope omission, never the whole item."""
    ctx = make_context(host, mem=MemorySource({"a.txt": "whole text"}))
    package = ctx.reader(consumer="a").read(
        ContextReadIntent(explicit_refs=["ctx://mem/a.txt#upper:all"])
    )
    assert not [b for b in package.blocks if b.ref.path == "a.txt" and b.scope == "upper:all"]
    (omission,) = [o for o in package.omissions if o.reason is OmissionReason.UNSUPPORTED_SCOPE]
    assert omission.required
    assert any(d.code == "unsupported_scope" for d in package.diagnostics)


def test_later_pages_account_for_required_blocks(host: PluginHost) -> None:
    """Required blocks delivered on page 1 are already_disclosed omissions on later pages."""
    ctx = make_context(host, mem=MemorySource(numbered(6)))
    ctx.put(role="instruction", content="rule", required=True)
    pages = all_pages(ctx, ContextReadIntent(query="item"), ContextBudget(max_chars=250))
    assert pages[0].blocks[0].content == "rule"
    for page in pages[1:]:
        (note,) = [o for o in page.omissions if o.binding_id == "_direct"]
        assert note.reason is OmissionReason.ALREADY_DISCLOSED
        assert note.required


def test_enums_print_their_values() -> None:
    """str() of a status, outcome or reason is its value, as printed in the quickstart."""
    assert str(CoverageStatus.PARTIAL) == "partial"
    assert f"{CoverageOutcome.MATCHED}" == "matched"
    assert str(OmissionReason.NOT_FOUND) == "not_found"


def test_descriptor_problem_becomes_a_diagnostic(host: PluginHost) -> None:
    """A source's reason for reference-only (an encrypted PDF) reaches the package."""
    from taskctx.model import Problem

    class Encrypted(MemorySource):
        def _descriptor(self, path: str, content: str | bytes):  # type: ignore[no-untyped-def]
            problem = Problem(code="encrypted", message=f"{path} is encrypted; no password")
            descriptor = super()._descriptor(path, content)
            return descriptor.model_copy(update={"problem": problem})

    source = Encrypted({"secret.pdf": b"%PDF-1.7 encrypted"})
    package = make_context(host, s=source).reader(consumer="a").read("x")
    assert [(o.ref.path, o.reason) for o in package.omissions] == [
        ("secret.pdf", OmissionReason.UNSUPPORTED_MEDIA)
    ]
    assert [d.code for d in package.diagnostics] == ["encrypted"]


def test_ranked_results_page_past_the_search_window() -> None:
    """A lexical ranking longer than one search window pages to its end, each item once."""
    from tests.core.test_index import RecordingProvider

    provider = RecordingProvider()

    host = host_with_provider(provider)
    ctx = make_context(host, mem=MemorySource(numbered(260, chars=20)))
    assert ctx.index_provider is provider
    pages = all_pages(
        ctx, ContextReadIntent(query="item"), ContextBudget(max_chars=10_000, max_blocks=25)
    )
    paths = [b.ref.path for p in pages for b in p.blocks]
    assert len(paths) == len(set(paths)) == 260
    assert pages[0].source_coverage["mem"].enumeration.value == "ranked"
    assert all(p.source_coverage["mem"].considered == 260 for p in pages)


def test_whole_item_after_its_section_is_not_repeated() -> None:
    """When a section ranks above its whole item, the item is omitted, not delivered twice."""
    from taskctx.protocols import SearchHit, SearchResult
    from tests.core.test_index import RecordingPartition, RecordingProvider

    class DensityPartition(RecordingPartition):
        """Scores by matches per character, so a dense section beats its whole item."""

        def search(self, query, doc_ids, limit):  # type: ignore[no-untyped-def]
            scored = [
                SearchHit(doc_id=k, score=(d.text or "").count(query) / len(d.text or "x"))
                for k, d in self.docs.items()
                if query in (d.text or "")
            ]
            scored.sort(key=lambda h: (-h.score, h.doc_id))
            return SearchResult(hits=tuple(scored[:limit]), considered=len(scored))

    provider = RecordingProvider()
    provider.partition = DensityPartition()

    host = host_with_provider(provider)
    source = SectionedSource({"guide.md": "# A\n\nzebra zebra zebra\n\n# B\n\nother words\n"})
    package = make_context(host, s=source).reader(consumer="a").read("zebra")
    assert [b.ref.scope for b in package.blocks] == ["lines:1-4"]
    assert [(o.ref.scope, o.reason) for o in package.omissions] == [
        (None, OmissionReason.SECTIONS_DELIVERED)
    ]


def test_ranked_bindings_are_interleaved_by_rank_not_raw_score() -> None:
    """Scores of two partitions are not comparable: each binding's best comes first."""
    from tests.core.test_index import RecordingProvider

    provider = RecordingProvider()

    host = host_with_provider(provider)
    loud = MemorySource({"a1.txt": "zebra " * 9, "a2.txt": "zebra " * 8})
    quiet = MemorySource({"b1.txt": "zebra once"})
    ctx = make_context(host, loud=loud, quiet=quiet)
    package = ctx.reader(consumer="a").read("zebra")
    assert [b.ref.path for b in package.blocks] == ["a1.txt", "b1.txt", "a2.txt"]
