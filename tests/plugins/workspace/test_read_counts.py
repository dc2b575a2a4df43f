"""One read and one digest per item per sync: a first read of a long file with fts."""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from taskctx_workspace import TaskWorkspace

from taskctx import ContextBudget, ContextReadIntent, PluginHost, TaskContext

LONG = "long.md"


def long_markdown() -> str:
    """About 29 KB of Markdown in many sections: described as the file and its parts."""
    parts = []
    for number in range(48):
        body = f"paragraph {number} about the retry upload loop and its keepalive.\n" * 10
        parts.append(f"## Part {number}\n\n{body}\n")
    return "# Notes\n\n" + "".join(parts)


@pytest.fixture
def counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[TaskContext, Counter[str]]:
    """A context over a workspace of one long file and a few short ones, with fts, whose
    file reads (``TaskWorkspace.read_bytes``) and sha256 of the long file's whole bytes
    are counted."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / LONG).write_text(long_markdown(), encoding="utf-8")
    for number in range(3):
        (root / f"short{number}.txt").write_text(f"short note {number}\n", encoding="utf-8")
    data = (root / LONG).read_bytes()
    assert len(data) > 25_000
    counts: Counter[str] = Counter()
    real_read = TaskWorkspace.read_bytes
    real_sha256 = hashlib.sha256

    def read_bytes(self: TaskWorkspace, rel_path: str, **kwargs: Any) -> bytes:
        counts[f"read:{rel_path}"] += 1
        return real_read(self, rel_path, **kwargs)

    def sha256(value: Any = b"", **kwargs: Any) -> Any:
        if bytes(value) == data:
            counts["sha256:" + LONG] += 1
        return real_sha256(value, **kwargs)

    monkeypatch.setattr(TaskWorkspace, "read_bytes", read_bytes)
    monkeypatch.setattr(hashlib, "sha256", sha256)
    host = PluginHost(allow=["taskctx-workspace", "taskctx-fts"])
    ctx = TaskContext("counts", host=host, state_dir=tmp_path / "state")
    ctx.attach(TaskWorkspace(root, host=host).source(), binding_id="ws")
    return ctx, counts


def test_a_first_sync_reads_and_hashes_each_file_twice_at_most(
    counted: tuple[TaskContext, Counter[str]],
) -> None:
    """Indexing a long file and all its sections reads and hashes it once (and once more
    to describe it), not once per section: at most 2 reads and 2 full sha256 (main: 10
    reads, 11 sha256). A short file is read once: enumeration hands its text to the sync."""
    ctx, counts = counted
    reports = ctx.sync_index()
    assert reports["ws"].added > 5  # the file, its parts and the short files
    assert counts["read:" + LONG] <= 2, counts
    assert counts["sha256:" + LONG] <= 2, counts
    for number in range(3):  # described once; the sync indexes the text enumeration handed
        assert counts[f"read:short{number}.txt"] == 1, counts


def test_a_first_read_reads_and_hashes_each_file_twice_at_most(
    counted: tuple[TaskContext, Counter[str]],
) -> None:
    """A first read (enumerate, index every section, deliver some) reads the long file and
    hashes its whole bytes at most twice (describe, index): delivery reuses the texts the
    sync read at the pinned version, where main read and hashed the file 11 times."""
    ctx, counts = counted
    reader = ctx.reader("agent", budget=ContextBudget(max_chars=6_000, max_blocks=12))
    package = reader.read(ContextReadIntent(query="retry upload keepalive"))
    assert any(block.ref.path == LONG for block in package.blocks)
    assert counts["read:" + LONG] <= 2, counts
    assert counts["sha256:" + LONG] <= 2, counts
    for number in range(3):
        assert counts[f"read:short{number}.txt"] <= 2, counts


def test_a_warm_read_after_a_change_reads_the_changed_file_twice_at_most(
    counted: tuple[TaskContext, Counter[str]], tmp_path: Path
) -> None:
    """A read after one file changed (described, re-indexed and delivered) reads that
    file at most twice; an unchanged one is read once at most (to deliver it), never
    described or indexed again."""
    ctx, counts = counted
    reader = ctx.reader("agent", budget=ContextBudget(max_chars=6_000, max_blocks=12))
    reader.read(ContextReadIntent(query="retry upload keepalive"))
    counts.clear()
    (tmp_path / "ws" / "short0.txt").write_text("zebra quokka\n", encoding="utf-8")
    package = ctx.reader("agent", budget=ContextBudget(max_chars=6_000, max_blocks=12)).read(
        ContextReadIntent(query="zebra quokka")
    )
    assert any(block.ref.path == "short0.txt" for block in package.blocks)
    assert counts["read:short0.txt"] <= 2, counts
    assert counts["read:short1.txt"] <= 1, counts
    assert counts["read:" + LONG] <= 1, counts
