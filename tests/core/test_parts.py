"""Parts of a candidate larger than a page: where the part is cut, how it is marked, and
that its ``chars:S-E`` ref reads back the same characters from every kind of source."""

from __future__ import annotations

import asyncio

import pytest

from taskctx import ContextBudget, ContextReadIntent, PluginHost
from taskctx.dispatch import dispatch_read
from taskctx.errors import UnsupportedScopeError
from taskctx.model import (
    Completeness,
    ContextBlock,
    ContextPackage,
    ContextRef,
    OmissionReason,
)
from taskctx.parts import choose_part, line_span, query_terms, stretch_of
from taskctx.sections import parse_char_scope
from taskctx.testing import MemorySource
from tests.core.test_read_dispatch import OwnScoped
from tests.core.test_reader import all_pages, make_context

FILLER = "".join(f"Filler line {n} says nothing of interest here at all.\n" for n in range(60))
NEEDLE = "The walrus migration starts in early spring along the northern coast.\n"
LONG = FILLER + NEEDLE + FILLER


@pytest.fixture
def host() -> PluginHost:
    """The kernel's built-ins only."""
    return PluginHost(allow=[], load_entrypoints=False)


def _part(package: ContextPackage) -> ContextBlock:
    (block,) = [b for b in package.blocks if b.completeness is Completeness.PART]
    return block


# -- the query's words -------------------------------------------------------------------


def test_query_terms_drop_stop_words_and_cut_endings() -> None:
    """Stop words go, endings are cut so other forms match, duplicates fold."""
    assert query_terms("How do I write a source plugin? Writing plugins!") == (
        "writ",
        "sourc",
        "plugin",
    )


def test_query_terms_of_cjk_text_are_bigrams() -> None:
    """A CJK run gives its bigrams (CJK text has no spaces between words); a lone CJK
    character stands for itself; other runs in the word stay words."""
    assert query_terms("搜索引擎") == ("搜索", "索引", "引擎")
    assert query_terms("猫 data库") == ("猫", "data", "库")


# -- where a part is cut -------------------------------------------------------------------


def test_a_part_is_the_stretch_of_whole_lines_that_holds_the_query() -> None:
    """The part holds the matching line, within the room, on line boundaries."""
    part = choose_part(LONG, 0, len(LONG), 300, query_terms("walrus migration"))
    assert part is not None
    assert len(LONG[part.start : part.end]) <= 300
    assert NEEDLE in LONG[part.start : part.end]
    assert part.start == 0 or LONG[part.start - 1] == "\n"
    assert LONG[part.end - 1] == "\n"


def test_a_part_fills_its_room_with_what_surrounds_the_match() -> None:
    """Lines before and after the matching one come with it while they fit."""
    part = choose_part(LONG, 0, len(LONG), 300, query_terms("walrus migration"))
    assert part is not None
    text = LONG[part.start : part.end]
    assert 300 - 60 < len(text) <= 300
    assert text.index(NEEDLE) > 0  # lines before it too, not only after


def test_a_part_never_overlaps_a_part_already_taken() -> None:
    """With the best stretch taken, the next part is elsewhere and spans no taken one."""
    text = NEEDLE + FILLER + NEEDLE + FILLER
    terms = query_terms("walrus migration")
    first = choose_part(text, 0, len(text), 300, terms)
    assert first is not None
    second = choose_part(text, 0, len(text), 300, terms, taken=[(first.start, first.end)])
    assert second is not None
    assert second.start >= first.end or second.end <= first.start
    assert NEEDLE in text[second.start : second.end]
    whole = [(0, len(text))]
    assert choose_part(text, 0, len(text), 300, terms, taken=whole) is None


def test_a_line_longer_than_the_room_is_cut_at_sentences_then_words() -> None:
    """One long paragraph (an abstract on one line) is cut at sentence ends around the
    match, and a sentence longer than the room at spaces."""
    sentences = [f"Sentence {n} is plain filler text." for n in range(40)]
    sentences[25] = "Sentence 25 names the walrus."
    text = " ".join(sentences) + "\n"
    part = choose_part(text, 0, len(text), 120, ("walrus",))
    assert part is not None
    cut = text[part.start : part.end]
    assert "walrus" in cut
    assert len(cut) <= 120
    assert part.start == 0 or text[part.start - 1] == " "
    word_cut = choose_part(text, 0, len(text), 12, ("walrus",))
    assert word_cut is not None
    assert "walrus" in text[word_cut.start : word_cut.end]


def test_a_word_longer_than_the_room_is_cut_hard() -> None:
    """Text without spaces still yields parts no larger than the room."""
    text = "x" * 50 + "walrus" + "y" * 50
    part = choose_part(text, 0, len(text), 10, ("walrus",))
    assert part is not None
    assert part.end - part.start <= 10
    assert "wal" in text[part.start : part.end] or "rus" in text[part.start : part.end]


def test_rarer_words_weigh_more_and_ties_go_to_the_earliest() -> None:
    """A line with the rare word beats lines with a common one; equal stretches go to the
    first."""
    text = "common\n" * 5 + "common rare\n" + "common\n" * 5
    part = choose_part(text, 0, len(text), 12, ("common", "rare"))
    assert part is not None
    assert text[part.start : part.end] == "common rare\n"
    tie = choose_part("aaa walrus\nbbb walrus\n", 0, 22, 11, ("walrus",))
    assert tie is not None
    assert (tie.start, tie.end) == (0, 11)


def test_no_part_without_a_match_or_room() -> None:
    """Nothing is chosen when no word occurs in the stretch, or there is no room."""
    assert choose_part(LONG, 0, len(LONG), 300, ("narwhal",)) is None
    assert choose_part(LONG, 0, len(LONG), 0, ("walrus",)) is None
    assert choose_part(LONG, 0, len(LONG), 300, ()) is None
    inside = LONG.index(NEEDLE) + len(NEEDLE)
    assert choose_part(LONG, inside, len(LONG), 300, ("walrus",)) is None


def test_spans_of_line_scopes_and_scoped_text() -> None:
    """A line scope's span is where slice_lines cuts it; other text is found in the item."""
    text = "one\ntwo\nthree\n"
    assert line_span(text, None) == (0, len(text))
    assert line_span(text, "lines:2-3") == (4, len(text))
    assert line_span(text, "lines:2-9") is None
    assert line_span(text, "page:2") is None
    assert stretch_of(text, "two\n") == (4, 8)
    assert stretch_of(text, "summary") is None


# -- parts in packages ---------------------------------------------------------------------


def test_an_item_larger_than_the_page_is_delivered_as_its_matching_part(
    host: PluginHost,
) -> None:
    """The part holds the match, is marked ``part`` with the whole's ref and size, fits the
    budget, and its chars ref slices the item's text exactly."""
    ctx = make_context(host, s=MemorySource({"long.txt": LONG, "other.txt": "walrus too\n"}))
    package = ctx.reader("c", budget=ContextBudget(max_chars=400)).read("walrus migration")
    part = _part(package)
    start, end = parse_char_scope(part.ref.scope or "")
    assert part.content == LONG[start:end]
    assert NEEDLE in part.content
    assert part.full_ref == part.ref.with_scope(None)
    assert part.chars_original == len(LONG)
    assert package.used_chars <= 400
    full_alias = next(a for a, ref in package.aliases.items() if ref == part.full_ref)
    rendered = package.render()
    assert 'completeness="part"' in rendered
    assert f'part_of="[[ref:{full_alias}]]"' in rendered
    assert f'chars_original="{len(LONG)}"' in rendered


def test_a_part_ref_reads_back_the_same_characters(host: PluginHost) -> None:
    """Asked for by its ref, a part is read again (the kernel slices a read of the whole
    item) and is the same text, complete for what its ref names."""
    ctx = make_context(host, s=MemorySource({"long.txt": LONG}))
    reader = ctx.reader("c", budget=ContextBudget(max_chars=400))
    part = _part(reader.read("walrus"))
    again = ctx.reader("d", budget=ContextBudget(max_chars=400)).read(
        ContextReadIntent(explicit_refs=(part.ref,))
    )
    (block,) = again.blocks
    assert block.content == part.content
    assert block.completeness is Completeness.COMPLETE


def test_a_page_short_of_room_opens_the_next_page_for_the_part(host: PluginHost) -> None:
    """After a small item fills most of the page, the large one is not cut to a sliver:
    it opens the next page, which delivers its part."""
    source = MemorySource({"a.txt": "walrus " * 40 + "\n", "long.txt": LONG})
    pages = all_pages(
        make_context(host, s=source),
        ContextReadIntent(query="walrus"),
        ContextBudget(max_chars=450),
    )
    assert [b.ref.path for b in pages[0].blocks] == ["a.txt"]
    assert [o.reason for o in pages[0].omissions] == [OmissionReason.OVER_CHAR_BUDGET]
    part = _part(pages[1])
    assert part.ref.path == "long.txt"
    assert part.chars > 450 - pages[0].used_chars


def test_no_query_or_no_match_still_omits_it_as_larger_than_the_page(
    host: PluginHost,
) -> None:
    """A part is cut around what matched: with no word of the query in the item it is
    omitted ``larger_than_page``, saying so."""
    ctx = make_context(host, s=MemorySource({"long.txt": LONG}))
    package = ctx.reader("c", budget=ContextBudget(max_chars=400)).read("narwhal")
    assert not package.blocks
    (omission,) = package.omissions
    assert omission.reason is OmissionReason.LARGER_THAN_PAGE
    assert "no part of it holds a word of the query" in (omission.detail or "")


# -- the kernel serves chars scopes for every source --------------------------------------


def test_dispatch_slices_chars_scopes_from_the_whole_read(host: PluginHost) -> None:
    """A source with its own scoped read never sees a ``chars`` scope: the kernel reads
    the whole item and slices it, keeping its content version."""
    source = OwnScoped()
    source.put("notes.txt", "one\ntwo\nthree\n")
    ref = ContextRef(binding="b", path="notes.txt", scope="chars:4-7")
    read, served_by = asyncio.run(dispatch_read(source, ref, "text/plain", None, host))
    assert (read.text, read.scope) == ("two", "chars:4-7")
    assert read.content_version is not None
    assert served_by == "a part of what source 'memory' (async_read_exact) read"


@pytest.mark.parametrize(
    ("scope", "message"),
    [("chars:7-4", "the end must follow the start"), ("chars:0-99", "ends past its text")],
)
def test_bad_chars_scopes_are_refused_naming_them(
    host: PluginHost, scope: str, message: str
) -> None:
    """A reversed range or one past the text is an unsupported scope, named."""
    source = MemorySource({"notes.txt": "one\ntwo\n"})
    ref = ContextRef(binding="b", path="notes.txt", scope=scope)
    with pytest.raises(UnsupportedScopeError, match=message):
        asyncio.run(dispatch_read(source, ref, "text/plain", None, host))


def test_direct_entries_serve_chars_scopes(host: PluginHost) -> None:
    """A direct entry's part is sliced from its text too."""
    ctx = make_context(host)
    entry = ctx.put(role="information", content="alpha beta gamma")
    ref = entry.model_copy(update={"scope": "chars:6-10"})
    package = ctx.reader("c").read(ContextReadIntent(explicit_refs=(ref,)))
    assert [b.content for b in package.blocks] == ["beta"]
