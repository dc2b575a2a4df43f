"""The stat walk and the revisions made from it: which files, in which order, how sensitive."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
import taskctx_workspace.source as source_module
from taskctx_workspace import TaskWorkspace
from taskctx_workspace.source import WorkspaceSource

from taskctx import PluginHost


def make_tree(root: Path) -> Path:
    """Names whose sort order interleaves folders and files: ``a`` (a folder) sorts before
    ``a-b`` and ``a.txt``, which sort before ``a/`` would if the slash counted."""
    (root / "a" / "deep").mkdir(parents=True)
    (root / "b").mkdir()
    for rel in ("a.txt", "a-b", "a/z.txt", "a/deep/x.md", "a/m.txt", "b/one.txt", "c.txt"):
        (root / rel).write_text(f"text of {rel}\n", encoding="utf-8")
    (root / ".hidden").write_text("h\n", encoding="utf-8")
    (root / "to-a.txt").symlink_to("a.txt")
    (root / "to-folder").symlink_to("a", target_is_directory=True)
    (root / "out.txt").symlink_to(root.parent / "outside.txt")
    (root.parent / "outside.txt").write_text("outside\n", encoding="utf-8")
    os.mkfifo(root / "pipe")
    return root


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A folder with nested folders, a hidden file, symlinks in and out, and a FIFO."""
    root = tmp_path / "ws"
    root.mkdir()
    return make_tree(root)


def test_the_walk_is_depth_first_by_name_with_folders_in_place(
    tree: Path, host: PluginHost
) -> None:
    """A folder's files come where its name sorts among its siblings' names."""
    ws = TaskWorkspace(tree, host=host)
    assert [st.path for st in ws.iter_entries()] == [
        ".hidden",
        "a/deep/x.md",
        "a/m.txt",
        "a/z.txt",
        "a-b",
        "a.txt",
        "b/one.txt",
        "c.txt",
        "to-a.txt",
    ]
    assert [st.path for st in ws.iter_entries(include_hidden=False, prefix="a/")] == [
        "a/deep/x.md",
        "a/m.txt",
        "a/z.txt",
    ]
    assert [st.path for st in ws.iter_entries(prefix="a")] == [
        "a/deep/x.md",
        "a/m.txt",
        "a/z.txt",
        "a-b",
        "a.txt",
    ]


def test_stamps_are_the_walks_files_and_stamps(tree: Path, host: PluginHost) -> None:
    """The unordered hot path sees exactly what the ordered walk sees, with equal stamps."""
    ws = TaskWorkspace(tree, host=host)
    (tree / ".taskctx").mkdir(exist_ok=True)
    (tree / ".taskctx" / "state.txt").write_text("kept out\n", encoding="utf-8")
    walked = {st.path: st.stamp for st in ws.iter_entries()}
    assert ws.stamps() == walked
    linked = os.stat(tree / "a.txt")
    assert walked["to-a.txt"] == (
        linked.st_size,
        linked.st_mtime_ns,
        linked.st_ino,
        linked.st_ctime_ns,
    )


def test_equal_stamps_make_equal_revisions_whichever_objects_they_share() -> None:
    """The revision depends on the stamps' values only, never on shared objects."""
    stamp = (12, 1_700_000_000_123_456_789, 77, 1_700_000_000_987_654_321)
    shared = {"a.txt": stamp, "b.txt": stamp}
    distinct = {"a.txt": (*stamp,), "b.txt": (*stamp,)}  # equal, not the same
    assert shared == distinct
    assert source_module._revision_of(shared) == source_module._revision_of(distinct)
    assert source_module._revision_of(shared) != source_module._revision_of({"a.txt": stamp})


def run_revision(source: WorkspaceSource) -> str:
    """One revision check."""
    return asyncio.run(source.async_revision())


def test_an_unchanged_tree_is_walked_but_its_stamps_not_hashed_again(
    tree: Path, host: PluginHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A revision check over an unchanged tree reuses the last revision; a change makes a new."""
    hashed: list[int] = []
    real = source_module._revision_of

    def counted(stamps: dict[str, tuple[int, int, int, int]]) -> str:
        hashed.append(len(stamps))
        return real(stamps)

    monkeypatch.setattr(source_module, "_revision_of", counted)
    source = TaskWorkspace(tree, host=host).source()
    first = run_revision(source)
    assert run_revision(source) == first
    assert run_revision(source) == first
    assert hashed == [9]
    (tree / "c.txt").write_text("changed\n", encoding="utf-8")
    assert run_revision(source) != first
    assert len(hashed) == 2


def test_the_revision_moves_on_every_kind_of_change(tree: Path, host: PluginHost) -> None:
    """Bytes, size, mtime, inode, ctime and the set of files each move the revision."""
    source = TaskWorkspace(tree, host=host).source()
    seen = {run_revision(source)}

    def moved() -> None:
        revision = run_revision(source)
        assert revision not in seen
        seen.add(revision)

    target = tree / "a" / "m.txt"
    before = os.stat(target)
    target.write_text("TEXT OF a/m.txt\n", encoding="utf-8")  # same size, same inode
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))  # mtime put back: ctime moved
    moved()
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
    moved()
    with target.open("a", encoding="utf-8") as handle:
        handle.write("more\n")
    moved()
    (tree / "a" / "deep" / "new.txt").write_text("", encoding="utf-8")
    moved()
    (tree / "a" / "deep" / "new.txt").rename(tree / "a" / "deep" / "renamed.txt")
    moved()
    copy = tree / "b" / "copy.tmp"
    copy.write_bytes((tree / "b" / "one.txt").read_bytes())
    os.replace(copy, tree / "b" / "one.txt")  # same bytes and size, another inode
    moved()
    (tree / "to-a.txt").unlink()
    (tree / "to-a.txt").symlink_to("c.txt")  # a link now naming another file
    moved()
    (tree / "c.txt").unlink()
    moved()


def test_reading_a_files_bytes_checks_the_root_and_the_file_once_each(
    tree: Path, host: PluginHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``read_bytes`` fstat's the root (its identity) and the opened file (regular) once
    each: no third stat nobody looks at."""
    ws = TaskWorkspace(tree, host=host)
    calls: list[int] = []
    real = os.fstat

    def fstat(fd: int) -> os.stat_result:
        calls.append(fd)
        return real(fd)

    monkeypatch.setattr(os, "fstat", fstat)
    assert ws.read_bytes("a/deep/x.md") == b"text of a/deep/x.md\n"
    assert len(calls) == 2
