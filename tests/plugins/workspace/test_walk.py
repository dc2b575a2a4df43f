"""The stat walk and the revisions made from it: which files, in which order, how sensitive."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from taskctx_workspace import TaskWorkspace

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
