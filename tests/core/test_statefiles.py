"""State folders, SQLite files and keys are never opened through a planted link (issue 13)."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from taskctx_records import RecordStore
from taskctx_skills import SkillLibrary
from taskctx_workspace import TaskWorkspace

from taskctx import ContextReadIntent, PluginHost, TaskContext
from taskctx.cursor import load_or_create_key
from taskctx.errors import StatePathError
from taskctx.statefiles import StateDir, connect_sqlite, ensure_state_dir, folder_state_dir


def _tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder outside every root, with one file that must never change."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "keep.txt").write_text("keep")
    return folder


def test_ensure_makes_every_part_below_the_base(tmp_path: Path) -> None:
    """Missing parts are made; the result is the real path of base/parts."""
    link = tmp_path / "base-link"
    (tmp_path / "base").mkdir()
    link.symlink_to(tmp_path / "base")  # the base itself is the caller's choice
    made = ensure_state_dir(link, ".taskctx", "index", "p1")
    assert made == tmp_path / "base" / ".taskctx" / "index" / "p1"
    assert made.is_dir()


@pytest.mark.parametrize("depth", [0, 1, 2])
def test_a_link_at_any_part_is_refused_and_nothing_is_written(
    tmp_path: Path, outside: Path, depth: int
) -> None:
    """A symlink at the first, middle or last part is refused; outside stays as it was."""
    base = tmp_path / "root"
    parts = (".taskctx", "index", "p1")
    (base.joinpath(*parts[:depth])).mkdir(parents=True)
    base.joinpath(*parts[: depth + 1]).symlink_to(outside, target_is_directory=True)
    before = _tree(outside)
    with pytest.raises(StatePathError, match="symlink") as caught:
        ensure_state_dir(base, *parts)
    assert caught.value.path == str(base.joinpath(*parts[: depth + 1]))
    assert _tree(outside) == before


@pytest.mark.parametrize("make", ["file", "fifo", "dangling"])
def test_a_non_folder_at_a_part_is_refused(tmp_path: Path, make: str) -> None:
    """A regular file, a FIFO or a dangling link where a folder belongs is refused."""
    base = tmp_path / "root"
    base.mkdir()
    where = base / ".taskctx"
    if make == "file":
        where.write_text("x")
    elif make == "fifo":
        os.mkfifo(where)
    else:
        where.symlink_to(tmp_path / "missing")
    with pytest.raises(StatePathError, match="not a folder"):
        ensure_state_dir(base, ".taskctx", "index")


@pytest.mark.parametrize("part", ["", ".", "..", "a/b", "a\0b"])
def test_parts_must_be_plain_names(tmp_path: Path, part: str) -> None:
    """A part that is not one plain name is a ValueError, not a path to walk."""
    with pytest.raises(ValueError, match="one plain name"):
        ensure_state_dir(tmp_path, part)


def test_state_dir_child_and_path(tmp_path: Path) -> None:
    """StateDir names base and parts; child() extends them; ensure() checks them."""
    home = StateDir(tmp_path, (".taskctx", "index"))
    assert home.child("p").path == tmp_path / ".taskctx" / "index" / "p"
    assert home.child("p").ensure() == tmp_path / ".taskctx" / "index" / "p"


Plant = Callable[[Path, Path], None]
PLANTS: dict[str, Plant] = {
    "symlink": lambda at, outside: at.symlink_to(outside / "keep.txt"),
    "dangling symlink": lambda at, outside: at.symlink_to(outside / "new.db"),
    "hard link": lambda at, outside: os.link(outside / "keep.txt", at),
    "folder": lambda at, outside: at.mkdir(),
    "fifo": lambda at, outside: os.mkfifo(at),
}


@pytest.mark.parametrize("suffix", ["", "-wal", "-shm", "-journal"])
@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_connect_refuses_planted_database_files(
    tmp_path: Path, outside: Path, plant: str, suffix: str
) -> None:
    """The database or a side file as a link, hard link, folder or FIFO: refused, unopened."""
    folder = ensure_state_dir(tmp_path, "state")
    PLANTS[plant](Path(f"{folder / 'x.db'}{suffix}"), outside)
    before = {p.name: p.read_bytes() for p in outside.iterdir()}
    with pytest.raises(StatePathError):
        connect_sqlite(folder / "x.db")
    assert {p.name: p.read_bytes() for p in outside.iterdir()} == before


def test_connect_refuses_a_folder_swapped_after_it_was_resolved(
    tmp_path: Path, outside: Path
) -> None:
    """A folder swapped for a link between ensure() and connect: SQLite's file is refused."""
    folder = ensure_state_dir(tmp_path, "state")
    folder.rename(tmp_path / "away")
    folder.symlink_to(outside, target_is_directory=True)
    with pytest.raises(StatePathError, match="SQLite opened"):
        connect_sqlite(folder / "x.db")
    assert not any(p.name.startswith("x.db-") for p in outside.iterdir())


def test_connect_opens_and_creates_a_real_database(tmp_path: Path) -> None:
    """A fresh real path is created and usable; read_only needs the file to exist."""
    folder = ensure_state_dir(tmp_path, "state")
    with pytest.raises(sqlite3.OperationalError):
        connect_sqlite(folder / "x.db", read_only=True)
    conn = connect_sqlite(folder / "x.db")
    conn.execute("CREATE TABLE t (a)")
    conn.close()
    assert (folder / "x.db").stat().st_size > 0


@pytest.mark.parametrize("plant", ["symlink", "hard link", "fifo"])
def test_a_planted_cursor_key_is_refused(tmp_path: Path, outside: Path, plant: str) -> None:
    """A cursor key that is a link (whose maker could choose the key) is refused."""
    (outside / "keep.txt").write_text("k" * 64)
    PLANTS[plant](tmp_path / "cursor.key", outside)
    with pytest.raises(StatePathError):
        load_or_create_key(tmp_path)


def _read(ctx: TaskContext) -> None:
    ctx.reader(consumer="test").read(ContextReadIntent(query="upload"))


def test_a_workspace_whose_taskctx_is_a_link_is_read_and_nothing_lands_outside(
    tmp_path: Path, outside: Path
) -> None:
    """A folder shipping ``.taskctx -> outside`` (a hostile checkout) is read: a read-only
    workspace keeps its derived state outside the folder and never goes through it."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("the upload fails")
    (root / ".taskctx").symlink_to(outside, target_is_directory=True)
    ctx = TaskContext("t", host=PluginHost.from_environment(), state_dir=tmp_path / "state")
    ctx.attach(TaskWorkspace(root, state_dir=tmp_path / "state").source(), binding_id="files")
    before = _tree(outside)
    package = ctx.reader("a").read("upload")
    assert [b.ref.path for b in package.blocks] == ["a.txt"]
    assert _tree(outside) == before


def test_a_workspace_whose_index_folder_is_a_link_never_indexes_outside(
    tmp_path: Path, outside: Path
) -> None:
    """The folder's ``index`` in the state folder is a link: refused; nothing created or
    deleted outside."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("the upload fails")
    workspace = TaskWorkspace(root, state_dir=tmp_path / "state")
    workspace.derived_dir.mkdir(parents=True)
    (workspace.derived_dir / "index").symlink_to(outside, target_is_directory=True)
    ctx = TaskContext("t", host=PluginHost.from_environment(), state_dir=tmp_path / "state")
    ctx.attach(workspace.source(), binding_id="files")
    before = _tree(outside)
    with pytest.raises(StatePathError, match="index"):
        _read(ctx)
    assert _tree(outside) == before


def test_record_and_skill_indexes_refuse_a_linked_index_folder(
    tmp_path: Path, outside: Path
) -> None:
    """The record store's and the skill library's index folders follow the same rule."""
    store = RecordStore(tmp_path / "records")
    store.put({"reason": "upload"}, collection="c", kind="k")
    (tmp_path / "records" / ".taskctx" / "index").symlink_to(outside, target_is_directory=True)
    library_root = tmp_path / "skills"
    library_root.mkdir()
    derived = folder_state_dir(library_root).path  # a library's state is outside it
    derived.mkdir(parents=True)
    (derived / "index").symlink_to(outside, target_is_directory=True)
    library = SkillLibrary(library_root)
    before = _tree(outside)
    for source in (store.source(), library.source()):
        ctx = TaskContext("t", host=PluginHost.from_environment(), state_dir=tmp_path / "st")
        ctx.attach(source, binding_id="b")
        with pytest.raises(StatePathError, match="index"):
            _read(ctx)
    assert _tree(outside) == before
