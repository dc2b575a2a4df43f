"""The flat view of a package: one block's facts as flat metadata, coverage in words."""

from __future__ import annotations

from taskctx import ContextBudget, ContextPackage, PluginHost, TaskContext
from taskctx.flatview import METADATA_FIELDS, block_metadata, coverage_statement
from taskctx.testing import MemorySource


def read(max_blocks: int = 1) -> ContextPackage:
    ctx = TaskContext("t1", host=PluginHost(allow=["taskctx-fts"]))
    ctx.attach(
        MemorySource({"a.txt": "upload timeout 30 s", "b.txt": "cache", "c.txt": "upload retries"}),
        "notes",
    )
    ctx.attach(MemorySource({"x.txt": "nothing related"}), "other")
    budget = ContextBudget(max_chars=6000, max_blocks=max_blocks)
    return ctx.reader(consumer="x", budget=budget).read("upload")


def test_every_field_is_flat_listed_and_taken_from_the_package() -> None:
    package = read()
    block = package.blocks[0]
    meta = block_metadata(package, block, 1)
    assert list(meta) == list(METADATA_FIELDS)
    assert all(v is None or isinstance(v, (str, int, float, bool)) for v in meta.values())
    assert meta["ref"] == str(block.ref)
    assert meta["digest"] == block.digest
    assert meta["context_revision"] == package.snapshot.context_revision
    assert meta["source_revision"] == package.snapshot.sources["notes"]
    coverage = package.source_coverage["notes"]
    assert (meta["coverage_status"], meta["coverage_considered"], meta["coverage_omitted"]) == (
        coverage.status.value,
        coverage.considered,
        coverage.omitted,
    )
    assert meta["has_more"] is True


def test_the_statement_names_each_binding_its_omissions_and_what_is_next() -> None:
    text = coverage_statement(read())
    assert "- notes (memory): partial, matched; 1 delivered of 2 considered, 1 left out" in text
    assert "over_block_budget: 1" in text
    assert "- other (memory):" in text
    assert "no match in scope" in text
    assert text.endswith("More of the same snapshot can be read (has_more).")
    assert coverage_statement(read(max_blocks=12)).endswith("This is the last page of this read.")
