"""Descriptors a source marks ``required`` or gives a ``summary``: the kernel's rules.

A required descriptor is its binding's required core: delivered on page 1 of every read
whatever the query and filters, never also ranked, counted once in coverage, omitted as
already_disclosed on later pages. A summary is what a selector sees instead of a body
preview, and the head line of a lossy digest.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from taskctx import (
    ContextBudget,
    ContextPackage,
    ContextReadIntent,
    PluginHost,
    RequiredOverflowError,
    TaskContext,
    hookimpl,
)
from taskctx.model import (
    Completeness,
    CoverageOutcome,
    CoverageStatus,
    OmissionReason,
    Representation,
    SourceCoverage,
    SourceDescriptor,
)
from taskctx.protocols import SelectionRequest
from taskctx.testing import MemorySource
from tests.core.sources import selector_host
from tests.core.test_index import RecordingProvider

GUIDE = "guide.md"
GUIDE_TEXT = "# House rules\n\n## Tone\n\nBe brief.\n\n## Safety\n\nNever delete data.\n"
GUIDE_SUMMARY = "Rules every answer follows."


class CoreSource(MemorySource):
    """A MemorySource whose ``required`` items are its required core, with summaries."""

    kind = "core_test"

    def __init__(
        self,
        items: Mapping[str, str | bytes],
        *,
        required: Sequence[str] = (),
        summaries: Mapping[str, str] | None = None,
        keep_history: bool = False,
    ) -> None:
        self.required = set(required)
        self.summaries = dict(summaries or {})
        super().__init__(items, keep_history=keep_history)

    def _descriptor(self, path: str, content: str | bytes) -> SourceDescriptor:
        descriptor = super()._descriptor(path, content)
        is_required = path in self.required
        return descriptor.model_copy(
            update={
                "required": is_required,
                "summary": self.summaries.get(path),
                "role": "instruction" if is_required else None,
            }
        )


def lexical_host() -> PluginHost:
    """A built-ins-only host with the term-counting RecordingProvider as lexical provider."""
    provider = RecordingProvider()

    class Plugin:
        @hookimpl
        def register_index_providers(self, register):  # type: ignore[no-untyped-def]
            register(provider)

    host = PluginHost(allow=[])
    host.register(Plugin(), name="recording-provider")
    return host


def notes(**extra: str) -> dict[str, str]:
    """The guide and three notes, two of which mention zebras."""
    return {
        GUIDE: GUIDE_TEXT,
        "a.txt": "zebra one",
        "b.txt": "zebra two",
        "c.txt": "lion three",
        **extra,
    }


def context_with(
    source: MemorySource, host: PluginHost | None = None, binding_id: str = "s"
) -> TaskContext:
    """A TaskContext with ``source`` attached (lexical host by default)."""
    ctx = TaskContext("task-req", host=host or lexical_host())
    ctx.attach(source, binding_id=binding_id)
    return ctx


def read(
    ctx: TaskContext, intent: ContextReadIntent | str, budget: ContextBudget | None = None
) -> ContextPackage:
    """The first page of ``intent``."""
    return ctx.reader(consumer="agent", budget=budget or ContextBudget()).read(intent)


def paths(package: ContextPackage) -> list[str]:
    """Paths of the package's blocks, in order."""
    return [b.ref.path for b in package.blocks]


def consistent(coverage: SourceCoverage) -> None:
    """omitted = considered - delivered, never negative."""
    assert coverage.considered is not None
    assert coverage.omitted is not None
    assert coverage.omitted == coverage.considered - coverage.delivered
    assert coverage.omitted >= 0


def guide_source(**extra: str) -> CoreSource:
    """Notes with the guide as the required core, carrying its summary."""
    return CoreSource(notes(**extra), required=[GUIDE], summaries={GUIDE: GUIDE_SUMMARY})


# -- page 1, whatever the query -------------------------------------------------------------


@pytest.mark.parametrize("query", ["", "zebra", "lion", "nothing matches this"])
def test_required_items_are_on_page_one_whatever_the_query(query: str) -> None:
    """The required descriptor is the first block of every first page, whole and required."""
    package = read(context_with(guide_source()), query)
    assert paths(package)[0] == GUIDE
    block = package.blocks[0]
    assert (block.required, block.role, block.content) == (True, "instruction", GUIDE_TEXT)
    assert block.completeness is Completeness.COMPLETE
    assert paths(package).count(GUIDE) == 1


def test_a_query_matching_nothing_delivers_only_the_core() -> None:
    """When no optional item matches, the package is the required core alone."""
    package = read(context_with(guide_source()), "nothing matches this")
    assert paths(package) == [GUIDE]
    cov = package.source_coverage["s"]
    assert (cov.considered, cov.delivered, cov.omitted) == (1, 1, 0)
    assert cov.outcome is CoverageOutcome.MATCHED


def test_required_items_come_with_the_structural_provider_too() -> None:
    """Without a lexical provider the core is still first and delivered once."""
    package = read(context_with(guide_source(), PluginHost(allow=[])), "zebra")
    assert paths(package) == [GUIDE, "a.txt", "b.txt", "c.txt"]
    cov = package.source_coverage["s"]
    assert (cov.considered, cov.delivered) == (4, 4)


@pytest.mark.parametrize(
    ("intent", "others"),
    [
        (ContextReadIntent(query="zebra", filters={"path_prefix": "a"}), ["a.txt"]),
        (ContextReadIntent(query="zebra", filters={"glob": "b*"}), ["b.txt"]),
        (
            ContextReadIntent(query="", filters={"media_types": ["text/plain"]}),
            ["a.txt", "b.txt", "c.txt"],
        ),
        (ContextReadIntent(query="", filters={"max_size": 5}), []),
        (ContextReadIntent(query="", filters={"metadata": {"team": "x"}}), []),
        (ContextReadIntent(query="zebra", roles=("information",)), ["a.txt", "b.txt"]),
        (ContextReadIntent(query="zebra", roles=("example",)), []),
    ],
    ids=["path_prefix", "glob", "media_types", "max_size", "metadata", "roles", "no role"],
)
def test_required_items_ignore_filters_and_roles(
    intent: ContextReadIntent, others: list[str]
) -> None:
    """Filters and roles narrow the optional candidates only; the core is always there."""
    package = read(context_with(guide_source()), intent)
    assert paths(package) == [GUIDE, *others]
    consistent(package.source_coverage["s"])


def test_an_excluded_binding_delivers_no_core() -> None:
    """filters.bindings that leaves the binding out: not searched, its core not delivered."""
    ctx = context_with(guide_source())
    ctx.attach(MemorySource({}), binding_id="other")
    package = read(ctx, ContextReadIntent(filters={"bindings": ["other"]}))
    assert package.blocks == ()
    assert package.source_coverage["s"].outcome is CoverageOutcome.NOT_SEARCHED


def test_optional_selection_none_delivers_the_core_only() -> None:
    """optional_selection='none' keeps the required core and nothing else."""
    intent = ContextReadIntent(query="zebra", optional_selection="none")
    package = read(context_with(guide_source()), intent)
    assert paths(package) == [GUIDE]
    cov = package.source_coverage["s"]
    assert "selection_disabled" in cov.reasons
    assert (cov.considered, cov.delivered, cov.omitted) == (3, 1, 2)


def test_two_bindings_each_deliver_their_core() -> None:
    """Every binding's required core is on page 1, in binding order."""
    ctx = TaskContext("task-req", host=lexical_host())
    ctx.attach(guide_source(), binding_id="first")
    ctx.attach(CoreSource({"rules.md": "# Rules\n", "x.txt": "x"}, required=["rules.md"]), "second")
    package = read(ctx, "nothing matches this")
    assert [(b.binding_id, b.ref.path) for b in package.blocks] == [
        ("first", GUIDE),
        ("second", "rules.md"),
    ]


def test_a_required_binary_item_is_reference_only() -> None:
    """A required item that is not text is omitted as reference only, never guessed."""
    source = CoreSource(
        {"logo.bin": b"\x00\x01\x02\xff" * 8, "a.txt": "zebra"}, required=["logo.bin"]
    )
    package = read(context_with(source), "zebra")
    assert paths(package) == ["a.txt"]
    (omission,) = package.omissions
    assert (omission.ref.path, omission.required) == ("logo.bin", True)
    assert omission.reason is OmissionReason.REFERENCE_ONLY


# -- never ranked twice, counted once ----------------------------------------------------------


def test_a_required_item_that_also_matches_is_delivered_once() -> None:
    """The core is removed from the ranked list: it matches, yet appears once."""
    package = read(context_with(guide_source()), "never delete zebra")
    assert paths(package).count(GUIDE) == 1
    assert paths(package)[0] == GUIDE
    assert GUIDE not in [o.ref.path for o in package.omissions]
    cov = package.source_coverage["s"]
    assert (cov.considered, cov.delivered, cov.omitted) == (3, 3, 0)


def test_the_core_is_delivered_once_across_all_pages() -> None:
    """Paging through a result delivers the core on page 1 and omits it later."""
    many = {f"n{i:02d}.txt": f"zebra {i}" for i in range(7)}
    ctx = context_with(CoreSource({GUIDE: GUIDE_TEXT + "zebra\n", **many}, required=[GUIDE]))
    reader = ctx.reader(consumer="agent", budget=ContextBudget(max_blocks=3))
    pages = [reader.read("zebra")]
    while pages[-1].has_more:
        pages.append(reader.read_next(pages[-1].cursor))
    assert len(pages) > 1
    delivered = [p for page in pages for p in paths(page)]
    assert delivered.count(GUIDE) == 1
    assert sorted(delivered) == sorted([GUIDE, *many])
    for page in pages[1:]:
        assert GUIDE not in paths(page)
        (again,) = [o for o in page.omissions if o.ref.path == GUIDE]
        assert (again.reason, again.required) == (OmissionReason.ALREADY_DISCLOSED, True)
    for page in pages:
        cov = page.source_coverage["s"]
        assert cov.considered == 8
        consistent(cov)


def _ranked_many() -> CoreSource:
    """260 zebra items ranked by count, and a required item that ranks last."""
    items = {f"item-{i:04d}.txt": "zebra " * (300 - i) for i in range(260)}
    return CoreSource({**items, "zz-guide.md": "zebra"}, required=["zz-guide.md"])


@pytest.mark.parametrize(
    ("source", "intent", "budget", "expected"),
    [
        pytest.param(
            guide_source(), ContextReadIntent(query="zebra"), ContextBudget(), (3, 3), id="query"
        ),
        pytest.param(
            guide_source(),
            ContextReadIntent(query="zebra"),
            ContextBudget(max_blocks=2),
            (3, 2),
            id="query, one over budget",
        ),
        pytest.param(
            guide_source(),
            ContextReadIntent(query="zebra", filters={"path_prefix": "a"}),
            ContextBudget(),
            (2, 2),
            id="filtered",
        ),
        pytest.param(
            guide_source(),
            ContextReadIntent(query="zebra", roles=("information",)),
            ContextBudget(max_blocks=2),
            (3, 2),
            id="roles, core outside the match",
        ),
        pytest.param(
            CoreSource(notes(**{GUIDE: GUIDE_TEXT + "zebra\n"}), required=[GUIDE]),
            ContextReadIntent(query="zebra", roles=("information",)),
            ContextBudget(max_blocks=2),
            (3, 2),
            id="roles, core inside the match",
        ),
        pytest.param(
            guide_source(),
            ContextReadIntent(query="zebra", explicit_refs=["ctx://s/c.txt"]),
            ContextBudget(max_blocks=3),
            (4, 3),
            id="explicit ref outside the match",
        ),
        pytest.param(
            guide_source(),
            ContextReadIntent(query="zebra", explicit_refs=["ctx://s/a.txt"]),
            ContextBudget(max_blocks=2),
            (3, 2),
            id="explicit ref inside the match",
        ),
        pytest.param(
            _ranked_many(),
            ContextReadIntent(query="zebra"),
            ContextBudget(max_chars=100_000, max_blocks=5),
            (261, 5),
            id="core ranked past the search window",
        ),
    ],
)
def test_coverage_counts_the_core_once(
    source: CoreSource,
    intent: ContextReadIntent,
    budget: ContextBudget,
    expected: tuple[int, int],
) -> None:
    """considered = the matching set plus the core outside it, each item once; a package
    that leaves an item out is never complete."""
    package = read(context_with(source), intent, budget)
    cov = package.source_coverage["s"]
    consistent(cov)
    considered, delivered = expected
    assert (cov.considered, cov.delivered) == (considered, delivered)
    left_out = [
        o
        for o in package.omissions
        if o.reason in (OmissionReason.OVER_BLOCK_BUDGET, OmissionReason.OVER_CHAR_BUDGET)
    ]
    if left_out:
        assert cov.status is CoverageStatus.PARTIAL


# -- the partition keeps the core up to date ---------------------------------------------------


def test_an_item_no_longer_required_leaves_the_core() -> None:
    """When the source stops marking an item required, a fresh read stops delivering it."""
    source = guide_source()
    ctx = context_with(source)
    assert paths(read(ctx, "lion")) == [GUIDE, "c.txt"]
    source.required.clear()
    source.put(GUIDE, GUIDE_TEXT + "\nUpdated.\n")
    assert paths(read(ctx, "lion")) == ["c.txt"]


def test_a_deleted_required_item_leaves_the_core() -> None:
    """A required item the source deleted is gone from the core, not reported missing."""
    source = guide_source()
    ctx = context_with(source)
    assert paths(read(ctx, "lion"))[0] == GUIDE
    source.delete(GUIDE)
    package = read(ctx, "lion")
    assert paths(package) == ["c.txt"]
    assert package.diagnostics == ()


def test_an_item_made_required_joins_the_core() -> None:
    """An item the source starts marking required is delivered from the next read."""
    source = guide_source()
    ctx = context_with(source)
    source.required.add("c.txt")
    source.put("c.txt", "lion three, now required")
    assert paths(read(ctx, "nothing matches this")) == ["c.txt", GUIDE]


# -- required overflow and the summary in a lossy digest ---------------------------------------

LONG_GUIDE = "# Rules\n\n" + "".join(f"## Rule {n}\n\n{'word ' * 60}\n\n" for n in range(1, 6))


def test_a_required_item_over_budget_fails_closed() -> None:
    """A required item larger than max_chars raises RequiredOverflowError by default."""
    source = CoreSource({GUIDE: LONG_GUIDE, "a.txt": "zebra"}, required=[GUIDE])
    with pytest.raises(RequiredOverflowError, match=GUIDE):
        read(context_with(source), "zebra", ContextBudget(max_chars=600))


def test_a_lossy_digest_carries_the_summary_in_its_head() -> None:
    """The digest of a required item with a summary has a 'summary:' line after its head."""
    source = CoreSource(
        {GUIDE: LONG_GUIDE, "a.txt": "zebra"}, required=[GUIDE], summaries={GUIDE: GUIDE_SUMMARY}
    )
    intent = ContextReadIntent(query="zebra", required_overflow="lossy_digest")
    package = read(context_with(source), intent, ContextBudget(max_chars=600))
    block = package.blocks[0]
    assert (block.ref.path, block.required) == (GUIDE, True)
    assert block.completeness is Completeness.LOSSY
    assert block.representation is Representation.LOSSY_DIGEST
    head, summary, listing = block.content.splitlines()[:3]
    assert head.startswith(f"[lossy digest of {GUIDE}: {len(LONG_GUIDE)} chars")
    assert summary == f"summary: {GUIDE_SUMMARY}"
    assert listing == "sections in order:"
    assert block.chars_original == len(LONG_GUIDE)
    assert [r.scope for r in block.section_refs] == [
        s.scope for s in source._descriptor(GUIDE, LONG_GUIDE).sections
    ]
    assert paths(package) == [GUIDE, "a.txt"]


def test_a_lossy_digest_without_a_summary_has_no_summary_line() -> None:
    """No summary, no 'summary:' line: the digest is the plain outline."""
    source = CoreSource({GUIDE: LONG_GUIDE}, required=[GUIDE])
    intent = ContextReadIntent(required_overflow="lossy_digest")
    block = read(context_with(source), intent, ContextBudget(max_chars=600)).blocks[0]
    assert block.completeness is Completeness.LOSSY
    assert "summary:" not in block.content
    assert block.content.splitlines()[1] == "sections in order:"


# -- the summary as selector preview -----------------------------------------------------------


class RecordingSelector:
    """Records each request and selects nothing (or the given titles)."""

    name = "recording"

    def __init__(self, pick: Sequence[str] = ()) -> None:
        self.pick = set(pick)
        self.requests: list[SelectionRequest] = []

    async def async_select(self, request: SelectionRequest) -> Sequence[str]:
        """The keys of candidates titled in ``pick``."""
        self.requests.append(request)
        return [c.key for c in request.candidates if c.title in self.pick]


def test_a_selector_sees_the_summary_instead_of_the_body() -> None:
    """An optional item with a summary is previewed by it; the body is not even read."""
    selector = RecordingSelector()
    source = CoreSource(
        {"x.md": "# X\n\nsecret body of x\n", "y.md": "# Y\n\nbody of y\n"},
        summaries={"x.md": "What x is about."},
    )
    ctx = context_with(source, selector_host(selector))
    package = ctx.reader(consumer="agent", selector="recording").read("")
    (request,) = selector.requests
    previews = {c.title: c for c in request.candidates}
    assert previews["x.md"].preview == "What x is about."
    assert previews["x.md"].chars == len("# X\n\nsecret body of x\n")
    assert previews["y.md"].preview == "# Y\n\nbody of y\n"
    assert source.reads == 1, "only the item without a summary was read for its preview"
    assert [o.reason for o in package.omissions] == [OmissionReason.NOT_SELECTED] * 2


def test_a_selected_summarised_item_is_delivered_whole() -> None:
    """Choosing an item by its summary delivers its full text, not the summary."""
    selector = RecordingSelector(pick=["x.md"])
    source = CoreSource({"x.md": "# X\n\nbody of x\n", "y.md": "y"}, summaries={"x.md": "About x."})
    package = (
        context_with(source, selector_host(selector))
        .reader(consumer="agent", selector="recording")
        .read("")
    )
    assert [(b.ref.path, b.content) for b in package.blocks] == [("x.md", "# X\n\nbody of x\n")]


def test_the_selector_is_not_offered_the_required_core() -> None:
    """Required items are delivered before selection and never shown as candidates."""
    selector = RecordingSelector()
    ctx = context_with(guide_source(), selector_host(selector))
    package = ctx.reader(consumer="agent", selector="recording").read("zebra")
    (request,) = selector.requests
    assert GUIDE not in [c.title for c in request.candidates]
    assert paths(package) == [GUIDE]
