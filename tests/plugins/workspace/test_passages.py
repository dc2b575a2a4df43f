"""A workspace describes long text files in passages that follow their structure, sized
by ``chunk_chars`` (``--chunk-chars`` on the command line)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from click.testing import CliRunner

from taskctx import ContextBudget, ContextSource, EnumerationRequest, PluginHost, TaskContext
from taskctx.cli import main

ENV = {"TASKCTX_LOAD_PLUGINS": "taskctx-workspace,taskctx-fts"}


def guide(root: Path) -> Path:
    """A Markdown guide of 8,300 characters: a preamble, then seven parts of ~1,200."""
    root.mkdir()
    preamble = "# Guide\n\nThis guide explains the zeppelin mooring procedure first.\n\n"
    parts = "".join(
        f"## Part {n}\n\n" + f"words about part {n}. " * 60 + "\n\n" for n in range(1, 8)
    )
    (root / "guide.md").write_text(preamble + parts, encoding="utf-8")
    return root


def test_the_preamble_before_the_first_heading_is_a_passage(tmp_path: Path) -> None:
    """Text before the first subsection is indexed on its own, not lost between units."""
    root = guide(tmp_path / "docs")
    ctx = TaskContext("t", host=PluginHost(allow=["taskctx-workspace", "taskctx-fts"]))
    ctx.attach(ctx.host.source("task_workspace", root=str(root)), binding_id="docs")
    package = ctx.reader("a", budget=ContextBudget(max_chars=2000)).read("zeppelin mooring")
    (block,) = package.blocks
    assert block.ref.scope == "lines:1-4"
    assert "zeppelin mooring" in block.content


def test_chunk_chars_sizes_the_passages(tmp_path: Path) -> None:
    """At 4,000 the parts are whole sections; at 900 each part is cut between its lines."""
    root = guide(tmp_path / "docs")
    titles: dict[int, list[str]] = {}
    for chunk, most in ((4000, 4000), (900, 1300)):
        source = ctx_source(root, chunk)
        page = asyncio.run(source.async_enumerate_descriptors(EnumerationRequest()))
        passages = [d for d in page.descriptors if d.scope is not None]
        assert sum(d.chars or 0 for d in passages) == len((root / "guide.md").read_text())
        assert all((d.chars or 0) <= most for d in passages)
        titles[chunk] = [str(d.title) for d in passages]
    assert "guide.md: Guide > Part 2" in titles[4000]
    assert "guide.md: Guide > Part 2 (lines 9-12)" in titles[900]


def ctx_source(root: Path, chunk: int) -> ContextSource:
    """A task_workspace source of ``root`` made from text options, as the CLI makes it."""
    host = PluginHost(allow=["taskctx-workspace"])
    return host.source("task_workspace", root=str(root), chunk_chars=str(chunk))


def test_the_command_line_sets_chunk_chars_for_plain_paths(tmp_path: Path) -> None:
    """``taskctx read PATH --chunk-chars 900`` delivers a passage of about 900 characters."""
    root = guide(tmp_path / "docs")
    result = CliRunner().invoke(
        main,
        ["read", str(root), "-q", "part 5", "--chunk-chars", "900", "--max-chars", "1400"],
        env=ENV,
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    assert 'title="guide.md: Guide &gt; Part 5 (lines 21-24)"' in result.output
    indexed = CliRunner().invoke(
        main, ["index", str(root), "--chunk-chars", "900", "--json"], env=ENV
    )
    assert indexed.exit_code == 0, indexed.output
    row = json.loads(indexed.output)[0]
    assert row["added"] + row["unchanged"] > 1  # the read indexed the same partition


def test_a_bad_chunk_size_is_refused_naming_the_flag_or_option(tmp_path: Path) -> None:
    """``--chunk-chars 0`` is a usage error; ``chunk_chars=abc`` in --source names the option."""
    root = guide(tmp_path / "docs")
    flag = CliRunner().invoke(main, ["read", str(root), "--chunk-chars", "0"], env=ENV)
    assert flag.exit_code == 2
    assert "Invalid value for '--chunk-chars'" in flag.stderr
    spec = f"task_workspace:root={root},chunk_chars=abc"
    option = CliRunner().invoke(main, ["read", "--source", spec], env=ENV)
    assert option.exit_code != 0
    assert "option chunk_chars='abc' is not valid" in option.stderr
