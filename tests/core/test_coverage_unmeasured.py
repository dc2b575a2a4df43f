"""Coverage never claims less than was examined: streaming_scan_unmeasured (issue 14 §3)."""

from __future__ import annotations

from taskctx import ContextBudget, ContextReadIntent, TaskContext
from taskctx.coverage import REASON_SENTENCES, describe_reason
from taskctx.model import (
    CoverageReason,
    CoverageStatus,
    DescriptorPage,
    EnumerationRequest,
    SourceDescriptor,
)
from taskctx.testing import MemorySource
from tests.core.test_required_descriptors import lexical_host

UNMEASURED = CoverageReason.STREAMING_SCAN_UNMEASURED.value


class RoledSource(MemorySource):
    """Items under ``spec/`` have the role ``specification``, the rest ``information``."""

    def _descriptor(self, path: str, content: str | bytes) -> SourceDescriptor:
        base = super()._descriptor(path, content)
        role = "specification" if path.startswith("spec/") else "information"
        return base.model_copy(update={"role": role})


class UncountedScanSource(MemorySource):
    """A source whose enumeration says it examined more than it returned, uncounted."""

    async def async_enumerate_descriptors(self, request: EnumerationRequest) -> DescriptorPage:
        page = await super().async_enumerate_descriptors(request)
        return page.model_copy(update={"reasons": (UNMEASURED,)})


def _roled(specs: int, others: int) -> RoledSource:
    items = {f"spec/s{n:03d}.txt": f"upload upload spec {n}" for n in range(specs)}
    items |= {f"notes/n{n:03d}.txt": f"upload note {n}" for n in range(others)}
    return RoledSource(items)


def test_roles_on_a_truncated_ranked_window_do_not_claim_a_count() -> None:
    """Roles kept from a window of ranked hits: considered is None with the reason, not the
    number kept from the window (which is less than was examined and than what matched)."""
    ctx = TaskContext("task-u", host=lexical_host())
    ctx.attach(_roled(specs=250, others=100), binding_id="docs")  # 250 > the 200-hit window
    intent = ContextReadIntent(query="upload", roles=["specification"])
    reader = ctx.reader(consumer="a", budget=ContextBudget(max_chars=100_000, max_blocks=5))
    package = reader.read(intent)
    cov = package.source_coverage["docs"]
    assert cov.considered is None
    assert cov.omitted is None
    assert UNMEASURED in cov.reasons
    assert cov.status is not CoverageStatus.COMPLETE
    assert {b.role for b in package.blocks} == {"specification"}
    assert f'reasons="{UNMEASURED}"' in package.render()


def test_roles_on_every_ranked_match_count_exactly() -> None:
    """When the provider returned every match, roles filter a whole set: an exact count."""
    ctx = TaskContext("task-u", host=lexical_host())
    ctx.attach(_roled(specs=3, others=4), binding_id="docs")
    intent = ContextReadIntent(query="upload", roles=["specification"])
    package = ctx.reader(consumer="a").read(intent)
    cov = package.source_coverage["docs"]
    assert cov.considered == 3
    assert cov.status is CoverageStatus.COMPLETE
    assert UNMEASURED not in cov.reasons


def test_a_source_that_scanned_uncounted_gets_no_count() -> None:
    """A source whose enumeration reports streaming_scan_unmeasured: considered is None, the
    status is not complete, and the reason is on the coverage."""
    ctx = TaskContext("task-u", host=lexical_host())
    ctx.attach(UncountedScanSource({"a.txt": "alpha", "b.txt": "beta"}), binding_id="s")
    package = ctx.reader(consumer="a").read("")
    cov = package.source_coverage["s"]
    assert cov.considered is None
    assert cov.delivered == 2
    assert cov.status is CoverageStatus.UNKNOWN
    assert cov.reasons == (UNMEASURED,)


def test_every_kernel_reason_has_one_sentence() -> None:
    """Prose lives in one table: each CoverageReason maps to a sentence; other codes pass."""
    assert set(REASON_SENTENCES) == set(CoverageReason)
    assert describe_reason(UNMEASURED).startswith("streaming scan cost unmeasured")
    assert describe_reason("provider_specific") == "provider_specific"
