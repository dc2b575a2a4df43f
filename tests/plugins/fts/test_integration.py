"""Through the kernel: the entry point, a TaskContext read, persistence across contexts."""

from __future__ import annotations

from pathlib import Path

import pytest
from taskctx_fts import FtsProvider

from taskctx import ContextBudget, ContextPackage, ContextReadIntent, PluginHost, TaskContext
from taskctx.model import CoverageOutcome, Enumeration
from taskctx.testing import MemorySource
from tests.lexical_corpus import ITEMS


@pytest.fixture
def host() -> PluginHost:
    """A host that loads only taskctx-fts from the entry points."""
    return PluginHost(allow=["taskctx-fts"], strict=True)


def test_entry_point_registers_the_provider(host: PluginHost) -> None:
    """The ``fts`` entry point registers FtsProvider, the default lexical provider."""
    provider = host.index_provider("fts")
    assert isinstance(provider, FtsProvider)
    assert host.default_lexical_provider() is provider


def _read(host: PluginHost, state_dir: Path, query: str, source: MemorySource) -> ContextPackage:
    ctx = TaskContext("fts-task", host=host, state_dir=state_dir)
    assert ctx.index_provider.name == "fts"
    ctx.attach(source, binding_id="mem")
    reader = ctx.reader(consumer="agent", budget=ContextBudget(max_chars=4000, max_blocks=2))
    return reader.read(ContextReadIntent(query=query))


def test_reader_ranks_with_fts(host: PluginHost, tmp_path: Path) -> None:
    """Coverage says ranked, considered is the matching count, the best match comes first."""
    source = MemorySource(ITEMS, identity="test:fts-items")
    package = _read(host, tmp_path, "why does the upload time out?", source)
    coverage = package.source_coverage["mem"]
    assert coverage.enumeration is Enumeration.RANKED
    assert coverage.outcome is CoverageOutcome.MATCHED
    assert coverage.considered == 3  # upload.md, retries.md, timeout_config.py
    blocks = package.blocks
    assert blocks[0].ref.path == "notes/upload.md"
    assert coverage.delivered == len(blocks) == 2


def test_chinese_query_through_the_reader(host: PluginHost, tmp_path: Path) -> None:
    """A Chinese query finds the Chinese item."""
    source = MemorySource(ITEMS, identity="test:fts-items")
    package = _read(host, tmp_path, "上传超时", source)
    coverage = package.source_coverage["mem"]
    assert coverage.considered == 1
    assert [b.ref.path for b in package.blocks] == ["zh/说明.md"]


def test_not_searchable_query_is_not_zero_matches(host: PluginHost, tmp_path: Path) -> None:
    """Only stop words: the binding was not searched, which is not "nothing matched"."""
    source = MemorySource(ITEMS, identity="test:fts-items")
    package = _read(host, tmp_path, "which of these is it?", source)
    coverage = package.source_coverage["mem"]
    assert coverage.outcome is CoverageOutcome.NOT_SEARCHED
    assert coverage.considered is None
    assert "query_not_searchable" in coverage.reasons


def test_index_persists_under_the_state_dir(host: PluginHost, tmp_path: Path) -> None:
    """A second TaskContext on the same state dir re-indexes nothing unchanged."""
    source = MemorySource(ITEMS, identity="test:fts-items")
    _read(host, tmp_path, "upload", source)
    files = list((tmp_path / "index").glob("fts-*/fts.db"))
    assert len(files) == 1
    reads = source.reads
    package = _read(host, tmp_path, "upload", source)
    assert source.reads - reads <= len(package.blocks)  # only the delivered blocks are read
    source.put("notes/garden.md", "Now the garden notes mention the upload too.")
    reads = source.reads
    package = _read(host, tmp_path, "upload", source)
    assert package.source_coverage["mem"].considered == 4
    assert source.reads - reads <= 1 + len(package.blocks)


def test_readme_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """The Python block of plugins/fts/README.md runs as written."""
    readme = Path(__file__).resolve().parents[3] / "plugins" / "fts" / "README.md"
    source = readme.read_text(encoding="utf-8").split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(source, str(readme), "exec"), {})
    assert capsys.readouterr().out.strip() == "['a.md'] 1"


def test_two_contexts_sharing_a_partition_never_lose_items(tmp_path: Path) -> None:
    """A context re-diffs a shared partition another context changed, so nothing vanishes."""
    from taskctx import ContextBudget, PluginHost, TaskContext
    from taskctx.model import CoverageStatus
    from taskctx.testing import MemorySource

    first_items = {f"doc{n}.txt": f"shared topic number {n}" for n in range(5)}
    second_items = {k: v for k, v in first_items.items() if k != "doc0.txt"}
    second_items["doc9.txt"] = "shared topic number 9"

    def context(items: dict[str, str]) -> TaskContext:
        ctx = TaskContext("t", host=PluginHost(allow=["taskctx-fts"]), state_dir=tmp_path)
        ctx.attach(MemorySource(items, identity="mem:shared"), binding_id="mem")
        return ctx

    budget = ContextBudget(max_chars=10_000)
    a, b = context(first_items), context(second_items)
    assert len(a.reader(consumer="x", budget=budget).read("shared topic").blocks) == 5
    assert len(b.reader(consumer="x", budget=budget).read("shared topic").blocks) == 5
    again = a.reader(consumer="x", budget=budget).read("shared topic")
    assert sorted(block.ref.path for block in again.blocks) == sorted(first_items)
    cov = again.source_coverage["mem"]
    assert (cov.considered, cov.delivered, cov.status) == (5, 5, CoverageStatus.COMPLETE)
