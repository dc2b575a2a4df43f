"""Opening beneath the root: symlinks at every kind of component, swaps at fixed moments,
a replaced root, the digest database's files, and hard links.

The race tests (test_races.py) attack with a real second process; these put the link
where the attack would, deterministically, one component kind at a time.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from taskctx_workspace import (
    TaskWorkspace,
    UnsupportedPlatformError,
    WorkspaceNotFoundError,
    staging,
)

from taskctx import PluginHost
from taskctx.errors import PolicyError
from tests.plugins.workspace.helpers import TinyHandler, pdf_bytes

OUTSIDE = b"OUTSIDE\n"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder next to the root holding what an escape would reach."""
    folder = tmp_path / "outside"
    (folder / "c").mkdir(parents=True)
    for name in ("f.txt", "secret.txt", "c/f.txt"):
        (folder / name).write_bytes(OUTSIDE)
    return folder


def _outside_files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


UNTOUCHED = {"f.txt": OUTSIDE, "secret.txt": OUTSIDE, "c/f.txt": OUTSIDE}

Operation = Callable[[TaskWorkspace, str], object]


def _read(ws: TaskWorkspace, path: str) -> object:
    return ws.read_file(path, origin="external" if ws.mode == "read_write" else "auto")


def _write(ws: TaskWorkspace, path: str) -> object:
    return ws.write_file(path, "new\n")


def _edit(ws: TaskWorkspace, path: str) -> object:
    return ws.edit_file(path, "OUTSIDE", "inside")


def _promote(ws: TaskWorkspace, path: str) -> object:
    staged = ws.stage("candidate.txt", "new\n")
    return ws.promote(staged, path, staged.sha256)


def _stage(ws: TaskWorkspace, path: str) -> object:
    return ws.stage(path, "new\n")


OPERATIONS: dict[str, Operation] = {
    "read": _read,
    "write": _write,
    "edit": _edit,
    "promote": _promote,
    "stage": _stage,
}

# (where the link is, what it points at relative to the outside folder, path used)
EXTERNAL_LINKS = [
    pytest.param("d", "", "d/f.txt", id="root-child-folder"),
    pytest.param("a/b", "", "a/b/c/f.txt", id="middle-folder"),
    pytest.param("a/f.txt", "f.txt", "a/f.txt", id="last-component"),
    pytest.param("a/up", "..", "a/up/outside/f.txt", id="relative-dotdot-folder"),
]


def _plant(root: Path, link: str, outside: Path, target: str) -> None:
    where = root / link
    where.parent.mkdir(parents=True, exist_ok=True)
    if target == "..":
        os.symlink("../..", where)  # a/up -> the root's parent, where outside/ is
    else:
        os.symlink(outside / target if target else outside, where)


@pytest.mark.parametrize("operation", ["read", "write", "edit", "promote"])
@pytest.mark.parametrize(("link", "target", "path"), EXTERNAL_LINKS)
def test_a_link_to_outside_at_any_component_is_refused(
    root: Path,
    outside: Path,
    host: PluginHost,
    link: str,
    target: str,
    path: str,
    operation: str,
) -> None:
    """Every operation on a path through a link to outside is refused; outside unchanged."""
    _plant(root, link, outside, target)
    ws = TaskWorkspace(root, mode="read_write", host=host)
    with pytest.raises(PolicyError, match="outside the workspace root"):
        OPERATIONS[operation](ws, path)
    assert _outside_files(outside) == UNTOUCHED


@pytest.mark.parametrize(("link", "target", "path"), EXTERNAL_LINKS)
def test_read_only_writes_through_a_link_to_outside_are_refused(
    root: Path, outside: Path, host: PluginHost, link: str, target: str, path: str
) -> None:
    """Read-only mode checks the external path too: nothing is written anywhere."""
    _plant(root, link, outside, target)
    ws = TaskWorkspace(root, host=host)
    with pytest.raises(PolicyError, match="outside the workspace root"):
        ws.write_file(path, "new\n")
    assert _outside_files(outside) == UNTOUCHED
    assert not (root / ".taskctx" / "files").exists()


@pytest.mark.parametrize(("link", "target", "path"), EXTERNAL_LINKS)
def test_links_to_outside_are_never_listed(
    root: Path, outside: Path, host: PluginHost, link: str, target: str, path: str
) -> None:
    """list_files and stamps() show no file reached through a link to outside."""
    _plant(root, link, outside, target)
    ws = TaskWorkspace(root, mode="read_write", host=host)
    listed = [entry.path for entry in ws.list_files(include_hidden=True)]
    assert listed == [".env", "notes.txt", "src/app.py"]
    assert sorted(ws.stamps()) == listed


def test_links_inside_the_root_still_work(root: Path, host: PluginHost) -> None:
    """Relative, absolute and folder links that stay inside the root are followed."""
    (root / "real").mkdir()
    (root / "real" / "f.txt").write_text("inside\n")
    os.symlink("real", root / "rel-folder")
    os.symlink(root / "real", root / "abs-folder")
    os.symlink("../real/f.txt", root / "src" / "up-file")
    os.symlink("rel-folder", root / "chain")
    ws = TaskWorkspace(root, mode="read_write", host=host)
    for path in ("rel-folder/f.txt", "abs-folder/f.txt", "src/up-file", "chain/f.txt"):
        assert ws.read_file(path).text == "inside\n", path
    ws.write_file("abs-folder/new.txt", "x")
    assert (root / "real" / "new.txt").read_text() == "x"
    ws.write_file("src/up-file", "through the link\n")  # the link's target is replaced
    assert (root / "real" / "f.txt").read_text() == "through the link\n"
    assert (root / "src" / "up-file").is_symlink()


def test_an_absolute_link_that_only_looks_inside_is_refused(
    root: Path, tmp_path: Path, host: PluginHost
) -> None:
    """``<root>-other/x`` shares the root's spelling as a prefix but is outside it."""
    sibling = Path(f"{root}-other")
    sibling.mkdir()
    (sibling / "f.txt").write_bytes(OUTSIDE)
    os.symlink(sibling / "f.txt", root / "prefix-trick")
    os.symlink(f"{root}/../outside-ish", root / "dotdot-trick")
    ws = TaskWorkspace(root, host=host)
    for path in ("prefix-trick", "dotdot-trick"):
        with pytest.raises(PolicyError, match="outside the workspace root"):
            ws.read_file(path)


@pytest.mark.parametrize("link", [".taskctx/files", ".taskctx/files/run"])
def test_a_link_where_the_fallback_area_is_is_refused(
    root: Path, outside: Path, host: PluginHost, link: str
) -> None:
    """A link standing for a level of the fallback area: read-only writes, promotions and
    fallback reads refuse it; nothing is written through it."""
    (root / link).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(outside, root / link)
    ws = TaskWorkspace(root, execution_id="run", host=host)
    staged = ws.stage("candidate.txt", "x")
    attempts: list[Callable[[], object]] = [
        lambda: ws.write_file("notes.txt", "x"),
        lambda: ws.write_file("new/x.txt", "x"),
        lambda: ws.promote(staged, "notes.txt", staged.sha256),
        lambda: ws.read_file("f.txt", origin="fallback"),
    ]
    for attempt in attempts:
        with pytest.raises(PolicyError, match="not a real folder"):
            attempt()
    assert _outside_files(outside) == UNTOUCHED


@pytest.mark.parametrize("link", [".taskctx/staged", ".taskctx/staged/run"])
@pytest.mark.parametrize("mode", ["read_only", "read_write"])
def test_a_link_where_the_staging_area_is_is_refused(
    root: Path, outside: Path, host: PluginHost, link: str, mode: str
) -> None:
    """A link standing for a level of the staging area: staging and promotion refuse it."""
    ws = TaskWorkspace(root, mode=mode, execution_id="run", host=host)  # type: ignore[arg-type]
    staged = ws.stage("candidate.txt", "x")
    area = root / ".taskctx" / "staged"
    os.rename(area, area.with_name("staged.away"))
    if link.endswith("run"):
        area.mkdir()
    os.symlink(outside, root / link)
    (outside / "candidate.txt").write_text("x")  # what an escaping promotion would deliver
    with pytest.raises(PolicyError, match="not a real folder"):
        ws.stage("other.txt", "y")
    with pytest.raises(PolicyError, match="not a real folder"):
        ws.promote(staged, "delivered.txt", staged.sha256)
    assert not (root / "delivered.txt").exists()
    assert sorted(_outside_files(outside)) == ["c/f.txt", "candidate.txt", "f.txt", "secret.txt"]


@pytest.mark.parametrize("area", ["files", "staged"])
def test_a_link_inside_an_area_is_refused(
    root: Path, outside: Path, host: PluginHost, area: str
) -> None:
    """A folder inside this execution's area replaced by a link to outside is refused."""
    ws = TaskWorkspace(root, execution_id="run", host=host)
    ws.write_file("d/f.txt", "mine\n")
    ws.stage("d/c.txt", "candidate\n")
    folder = root / ".taskctx" / area / "run" / "d"
    os.rename(folder, folder.with_name("d.away"))
    os.symlink(outside, folder)
    write = ws.write_file if area == "files" else ws.stage
    with pytest.raises(PolicyError, match="outside this execution's"):
        write("d/new.txt", "x")
    if area == "files":
        with pytest.raises(PolicyError, match="outside this execution's area"):
            ws.read_file("d/f.txt", origin="fallback")
    assert _outside_files(outside) == UNTOUCHED


def test_a_file_where_a_folder_should_be(root: Path, host: PluginHost) -> None:
    """``notes.txt/x``: a read finds nothing, a read-write write is refused, a read-only
    write lands in this execution's copy (the real file is never a folder)."""
    with pytest.raises(WorkspaceNotFoundError):
        TaskWorkspace(root, host=host).read_file("notes.txt/x")
    with pytest.raises(PolicyError, match="a parent of it is not a folder"):
        TaskWorkspace(root, mode="read_write", host=host).write_file("notes.txt/x", "y")
    assert TaskWorkspace(root, host=host).write_file("notes.txt/x", "y").origin == "fallback"
    assert (root / "notes.txt").read_text() == "alpha\nbeta\n"


# --- swaps at fixed moments of an operation -------------------------------------------------


def _swap(folder: Path, outside: Path) -> None:
    """The attack's move: the real folder renamed away, a link to outside in its place."""
    os.rename(folder, folder.with_name(folder.name + ".away"))
    os.symlink(outside, folder)


@pytest.mark.parametrize("step", ["temp_written", "temp_synced"])
def test_a_folder_swapped_during_a_write_keeps_the_write_inside(
    rw: TaskWorkspace, outside: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    """The folder is swapped after the temp file is written: the rename happens in the
    folder held open (now ``src.away``), never through the link."""
    monkeypatch.setattr(
        staging,
        "_step_hook",
        lambda name: _swap(rw.root / "src", outside) if name == step else None,
    )
    ref = rw.write_file("src/app.py", "print('new')\n")
    assert (rw.root / "src.away" / "app.py").read_text() == "print('new')\n"
    assert ref.sha256 == hashlib.sha256(b"print('new')\n").hexdigest()
    assert _outside_files(outside) == UNTOUCHED


def test_a_folder_swapped_before_readback_reads_back_what_was_written(
    rw: TaskWorkspace, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Promotion reads the target back from the folder it wrote in, not through a link
    swapped in since (which would read outside bytes)."""
    (outside / "report.txt").write_bytes(OUTSIDE)
    staged = rw.stage("report.txt", "the report\n")
    (rw.root / "out").mkdir()
    monkeypatch.setattr(
        staging,
        "_step_hook",
        lambda name: _swap(rw.root / "out", outside) if name == "dir_synced" else None,
    )
    ref = rw.promote(staged, "out/report.txt", staged.sha256)
    assert ref.readback_verified
    assert (rw.root / "out.away" / "report.txt").read_text() == "the report\n"
    assert (outside / "report.txt").read_bytes() == OUTSIDE


def test_a_swapped_root_is_refused(root: Path, outside: Path, host: PluginHost) -> None:
    """The root renamed away and replaced (by a folder or a link) after the workspace was
    opened: every operation refuses instead of working in the other folder."""
    ws = TaskWorkspace(root, mode="read_write", host=host)
    os.rename(root, root.with_name("ws.away"))
    os.symlink(outside, root)
    operations: tuple[Callable[[], object], ...] = (
        lambda: ws.read_file("f.txt"),
        lambda: ws.write_file("x.txt", "x"),
    )
    for operation in operations:
        with pytest.raises(PolicyError, match="no longer a real folder"):
            operation()
    os.unlink(root)
    root.mkdir()
    (root / "f.txt").write_text("another folder\n")
    operations = (lambda: ws.read_file("f.txt"), ws.list_files, ws.stamps)
    for again in operations:
        with pytest.raises(PolicyError, match="another folder stands at its path"):
            again()
    assert _outside_files(outside) == UNTOUCHED


# --- the digest database ----------------------------------------------------------------


@pytest.mark.parametrize("name", ["digests.db", "digests.db-wal", "digests.db-shm"])
def test_digest_database_files_that_are_links_are_refused(
    root: Path, outside: Path, host: PluginHost, name: str
) -> None:
    """A link planted at the digest cache or its side files (in the state folder) is
    refused, and SQLite never writes through it."""
    ws = TaskWorkspace(root, host=host)
    folder = ws.derived_dir / "workspace"
    folder.mkdir(parents=True)
    (outside / "target.db").write_bytes(b"")
    os.symlink(outside / "target.db", folder / name)
    with pytest.raises(PolicyError, match="not a regular file"):
        ws.list_files()
    assert (outside / "target.db").read_bytes() == b""
    assert sorted(p.name for p in outside.iterdir()) == ["c", "f.txt", "secret.txt", "target.db"]


def test_digest_database_folder_that_is_a_link_is_refused(
    root: Path, outside: Path, host: PluginHost
) -> None:
    """The digest cache's folder in the state folder as a link: not made through it."""
    ws = TaskWorkspace(root, host=host)
    ws.derived_dir.mkdir(parents=True)
    os.symlink(outside, ws.derived_dir / "workspace")
    with pytest.raises(PolicyError, match="it is a symlink"):
        ws.list_files()
    assert _outside_files(outside) == UNTOUCHED


# --- hard links ---------------------------------------------------------------------------


@pytest.fixture
def linked(root: Path, outside: Path) -> Path:
    """``notes.txt`` is a second name of ``outside/shared.txt`` (st_nlink == 2)."""
    shared = outside / "shared.txt"
    shared.write_bytes(b"shared\n")
    (root / "notes.txt").unlink()
    os.link(shared, root / "notes.txt")
    return shared


@pytest.mark.parametrize("operation", ["write", "edit", "promote"])
def test_writes_to_hard_linked_files_are_refused(
    rw: TaskWorkspace, linked: Path, operation: str
) -> None:
    """A write or promotion onto a file with other names is refused; both names keep
    their bytes and stay linked."""
    op = OPERATIONS[operation]
    with pytest.raises(PolicyError, match="hard link"):
        op(rw, "notes.txt") if operation != "edit" else rw.edit_file("notes.txt", "shared", "x")
    assert linked.read_bytes() == b"shared\n"
    assert os.stat(rw.root / "notes.txt").st_ino == os.stat(linked).st_ino


def test_a_hard_linked_staging_location_is_refused(
    ro: TaskWorkspace, linked: Path, outside: Path
) -> None:
    """A hard link planted where a candidate is staged is refused, not written over."""
    area = ro.root / ".taskctx" / "staged" / ro.execution_id
    area.mkdir(parents=True)
    os.link(linked, area / "candidate.txt")
    with pytest.raises(PolicyError, match="hard link"):
        ro.stage("candidate.txt", "x")
    assert linked.read_bytes() == b"shared\n"


def test_hard_linked_files_are_read_and_copied_in_read_only_mode(
    ro: TaskWorkspace, linked: Path
) -> None:
    """Reads of a hard-linked file are allowed (see docs/workspace.md); a read-only write
    lands in this execution's copy and leaves both names alone."""
    assert ro.read_file("notes.txt").text == "shared\n"
    assert ro.write_file("notes.txt", "mine\n").origin == "fallback"
    ro.edit_file("notes.txt", "mine", "edited")
    assert linked.read_bytes() == b"shared\n"
    assert ro.read_file("notes.txt", origin="fallback").text == "edited\n"


# --- the parse cache ------------------------------------------------------------------------


def test_a_parse_cache_folder_swapped_for_a_link_is_never_written_through(
    root: Path, outside: Path, host: PluginHost
) -> None:
    """The parse cache's folder replaced by a link after the cache was opened: the parsed
    text of the next document is not written outside; the read is refused."""
    ws = TaskWorkspace(root, host=host)
    ws.register_file_io_handler(TinyHandler())
    (root / "a.pdf").write_bytes(pdf_bytes("first document"))
    assert ws.read_file("a.pdf").text == "FIRST DOCUMENT"
    parsed = ws.derived_dir / "parsed"
    os.rename(parsed, parsed.with_name("parsed.away"))
    os.symlink(outside, parsed)
    (root / "b.pdf").write_bytes(pdf_bytes("second document"))
    with pytest.raises(PolicyError, match="it is a symlink"):
        ws.read_file("b.pdf")
    assert _outside_files(outside) == UNTOUCHED


# --- platforms ------------------------------------------------------------------------------


@pytest.mark.parametrize("missing", ["open", "readlink", "rename"])
def test_a_platform_without_dir_fd_is_refused_not_raced(
    root: Path, host: PluginHost, monkeypatch: pytest.MonkeyPatch, missing: str
) -> None:
    """Where ``os`` cannot open relative to a folder descriptor (Windows), the workspace
    refuses to start instead of falling back to path checks a process could race."""
    without = {f for f in os.supports_dir_fd if f.__name__ != missing}
    monkeypatch.setattr(os, "supports_dir_fd", without)
    with pytest.raises(UnsupportedPlatformError, match=f"missing: {missing}"):
        TaskWorkspace(root, host=host)
