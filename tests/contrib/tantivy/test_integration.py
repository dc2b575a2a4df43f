"""The ``tantivy`` provider through the kernel: entry point, reads, CLI, incremental sync."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from taskctx_tantivy import TantivyProvider

from taskctx import ContextBudget, ContextPackage, PluginHost, TaskContext
from taskctx.cli import main
from taskctx.model import CoverageOutcome, Enumeration
from taskctx.testing import MemorySource
from tests.lexical_corpus import ITEMS

BUDGET = ContextBudget(max_chars=4000, max_blocks=2)


@pytest.fixture
def host() -> PluginHost:
    """A host that loads taskctx-fts and taskctx-tantivy from the entry points."""
    return PluginHost(allow=["taskctx-fts", "taskctx-tantivy"], strict=True)


def _context(host: PluginHost, state_dir: Path, source: MemorySource) -> TaskContext:
    ctx = TaskContext("tantivy-task", host=host, state_dir=state_dir)
    ctx.configure_index("tantivy")
    ctx.attach(source, binding_id="mem")
    return ctx


def test_entry_point_registers_the_provider_and_fts_stays_default(host: PluginHost) -> None:
    """The ``tantivy`` entry point registers TantivyProvider; ``fts`` remains the default."""
    assert isinstance(host.index_provider("tantivy"), TantivyProvider)
    default = host.default_lexical_provider()
    assert default is not None
    assert default.name == "fts"


def test_reader_ranks_with_tantivy(host: PluginHost, tmp_path: Path) -> None:
    """Coverage says ranked, considered is the matching count, the best match comes first."""
    ctx = _context(host, tmp_path, MemorySource(ITEMS, identity="test:tantivy-items"))
    package = ctx.reader(consumer="agent", budget=BUDGET).read("why does the upload time out?")
    coverage = package.source_coverage["mem"]
    assert (coverage.enumeration, coverage.outcome) == (Enumeration.RANKED, CoverageOutcome.MATCHED)
    assert coverage.considered == 3
    assert package.blocks[0].ref.path == "notes/upload.md"
    chinese = ctx.reader(consumer="agent", budget=BUDGET).read("上传超时")
    assert [b.ref.path for b in chinese.blocks] == ["zh/说明.md"]
    ctx.index.close()


def test_a_second_context_indexes_only_what_changed(host: PluginHost, tmp_path: Path) -> None:
    """A new TaskContext on the same state dir re-indexes nothing; after one change, one."""
    source = MemorySource(dict(ITEMS), identity="test:tantivy-items")
    first = _context(host, tmp_path, source)
    report = first.sync_index()["mem"]
    assert (report.added, report.updated, report.unchanged) == (len(ITEMS), 0, 0)
    first.index.close()
    second = _context(host, tmp_path, source)
    report = second.sync_index()["mem"]
    assert (report.added, report.updated, report.unchanged) == (0, 0, len(ITEMS))
    source.put("notes/garden.md", "Now the garden notes mention the upload too.")
    report = second.sync_index()["mem"]
    assert (report.added, report.updated, report.unchanged) == (0, 1, len(ITEMS) - 1)
    package = second.reader(consumer="agent", budget=ContextBudget(max_chars=9000)).read("upload")
    assert package.source_coverage["mem"].considered == 4
    second.index.close()


def test_cli_read_with_provider_tantivy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``taskctx read DIR --provider tantivy`` ranks a folder with tantivy."""
    folder = tmp_path / "project"
    folder.mkdir()
    for name, text in ITEMS.items():
        (folder / name.replace("/", "_")).write_text(text, encoding="utf-8")
    monkeypatch.setenv("TASKCTX_STATE_DIR", str(tmp_path / "state"))
    args = ["read", str(folder), "--query", "upload time out", "--provider", "tantivy"]
    result = CliRunner().invoke(main, [*args, "--json"])
    assert result.exit_code == 0, result.output
    package = ContextPackage.model_validate_json(result.output)
    (coverage,) = package.source_coverage.values()
    assert coverage.enumeration is Enumeration.RANKED
    assert package.blocks[0].ref.path == "notes_upload.md"
    assert any((tmp_path / "state").rglob("tantivy/meta.json"))
