"""Writing: the read-only policy, atomic writes in read_write mode, and edit_file rules."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest
from taskctx_workspace import (
    EditError,
    TaskWorkspace,
    WorkspaceConflictError,
    WorkspaceNotFoundError,
)
from taskctx_workspace.paths import TEMP_MARKER

from taskctx.errors import MediaError, PolicyError
from tests.plugins.workspace.helpers import TinyHandler, pdf_bytes, png_bytes, snapshot


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- read-only mode never modifies external files ---------------------------------------------


def test_read_only_never_modifies_external_files(ro: TaskWorkspace) -> None:
    """Writes, edits, stages and promotions leave every external byte and mtime alone."""
    before = snapshot(ro.root)
    ref = ro.write_file("notes.txt", "overwritten\n")
    ro.write_file("src/new.py", "x = 1\n")
    ro.write_file("deep/new/dir/file.txt", b"bytes")
    ro.edit_file("src/app.py", "hi", "bye")
    staged = ro.stage("notes.txt", "promoted\n")
    ro.promote(staged, "notes.txt", staged.sha256)
    ro.read_file("notes.txt")
    ro.list_files(include_hidden=True)
    assert snapshot(ro.root) == before
    assert not (ro.root / "deep").exists()
    assert ref.origin == "fallback"
    area = ro.areas_dir / "files" / ro.execution_id
    assert (area / "notes.txt").read_text() == "promoted\n"
    assert (area / "src" / "app.py").read_text() == "print('bye')\n"
    assert (area / "deep" / "new" / "dir" / "file.txt").read_bytes() == b"bytes"


def test_read_only_state_lives_only_under_taskctx(ro: TaskWorkspace) -> None:
    """What an execution writes is under .taskctx/; what is derived (digests, parse
    cache, index) is in the state folder, outside the root."""
    names_before = sorted(p.name for p in ro.root.iterdir())
    ro.list_files()
    assert sorted(p.name for p in ro.root.iterdir()) == names_before
    ro.write_file("x.txt", "x")
    ro.stage("y.txt", "y")
    assert sorted(p.name for p in ro.root.iterdir()) == sorted([*names_before, ".taskctx"])
    assert sorted(p.name for p in ro.areas_dir.iterdir()) == ["files", "staged"]
    assert (ro.derived_dir / "workspace" / "digests.db").is_file()


def test_write_file_returns_a_ref_of_the_bytes(ro: TaskWorkspace) -> None:
    """FileRef carries path, sha256, size and where the bytes went."""
    ref = ro.write_file("./a//b.txt", "héllo")
    data = "héllo".encode()
    assert (ref.path, ref.sha256, ref.size) == ("a/b.txt", _sha(data), len(data))
    assert ref.readback_verified is False


def test_write_file_refuses_other_content_types(ro: TaskWorkspace) -> None:
    """Only str (as UTF-8) or bytes are written."""
    with pytest.raises(TypeError, match="str or bytes"):
        ro.write_file("x.txt", 42)  # type: ignore[arg-type]


# --- read_write mode --------------------------------------------------------------------------


def test_read_write_writes_the_real_file(rw: TaskWorkspace) -> None:
    """read_write writes the external path and creates parent folders."""
    ref = rw.write_file("notes.txt", "new\n")
    rw.write_file("a/b/c.txt", b"deep")
    assert (rw.root / "notes.txt").read_text() == "new\n"
    assert (rw.root / "a" / "b" / "c.txt").read_bytes() == b"deep"
    assert ref.origin == "external"
    assert rw.read_file("notes.txt").origin == "external"


def test_read_write_replaces_atomically(rw: TaskWorkspace, monkeypatch: pytest.MonkeyPatch) -> None:
    """The new bytes arrive by a rename of a hidden temp sibling in the same folder
    (both ends named by that folder's descriptor); no temp is left."""
    replaced: list[tuple[str, str, str, str]] = []
    real_replace = os.replace

    def spy(src: str, dst: str, *, src_dir_fd: int, dst_dir_fd: int) -> None:
        folders = (
            os.readlink(f"/proc/self/fd/{src_dir_fd}"),
            os.readlink(f"/proc/self/fd/{dst_dir_fd}"),
        )
        replaced.append((src, dst, *folders))
        real_replace(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)

    monkeypatch.setattr(os, "replace", spy)
    rw.write_file("src/app.py", "print('new')\n")
    ((src, dst, src_folder, dst_folder),) = replaced
    assert "/" not in src
    assert dst == "app.py"
    assert Path(src_folder) == Path(dst_folder) == rw.root / "src"
    assert Path(src).name.startswith(".")
    assert TEMP_MARKER in Path(src).name
    assert [p.name for p in (rw.root / "src").iterdir()] == ["app.py"]


def test_failed_write_leaves_the_old_bytes_and_no_temp(
    rw: TaskWorkspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """If the replace fails the target keeps its bytes and the temp file is removed."""

    def broken(src: object, dst: object, **folders: int) -> None:
        raise OSError("disk says no")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OSError, match="disk says no"):
        rw.write_file("notes.txt", "lost")
    assert (rw.root / "notes.txt").read_text() == "alpha\nbeta\n"
    assert sorted(p.name for p in rw.root.iterdir()) == [".env", "notes.txt", "src"]


def test_read_write_keeps_permission_bits(rw: TaskWorkspace) -> None:
    """Replacing an executable script keeps it executable."""
    script = rw.root / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    rw.write_file("run.sh", "#!/bin/sh\necho hi\n")
    assert stat.S_IMODE(script.stat().st_mode) == 0o755


@pytest.mark.parametrize("mode", ["read_only", "read_write"])
def test_writing_over_a_folder_is_refused(rw: TaskWorkspace, mode: str) -> None:
    """A folder at the path is refused, in both modes."""
    workspace = TaskWorkspace(rw.root, mode=mode, host=rw.host)  # type: ignore[arg-type]
    with pytest.raises(PolicyError, match="a folder"):
        workspace.write_file("src", "x")


def test_writing_below_a_file_is_refused(rw: TaskWorkspace) -> None:
    """A parent that is a file cannot become a folder."""
    with pytest.raises(PolicyError, match="parent"):
        rw.write_file("notes.txt/child.txt", "x")


# --- edit_file --------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["read_only", "read_write"])
def test_edit_replaces_the_one_occurrence(rw: TaskWorkspace, mode: str) -> None:
    """The one occurrence is replaced; the ref has the new digest."""
    workspace = TaskWorkspace(rw.root, mode=mode, host=rw.host)  # type: ignore[arg-type]
    ref = workspace.edit_file("notes.txt", "beta", "gamma")
    new = b"alpha\ngamma\n"
    assert (ref.sha256, ref.size) == (_sha(new), len(new))
    written = rw.root / "notes.txt" if mode == "read_write" else None
    if written is not None:
        assert written.read_bytes() == new
    else:
        assert workspace.read_bytes("notes.txt", origin="fallback") == new
        assert (rw.root / "notes.txt").read_text() == "alpha\nbeta\n"


@pytest.mark.parametrize(
    ("text", "old", "count"),
    [
        ("alpha\nbeta\n", "delta", 0),
        ("one one\n", "one", 2),
        ("aaa", "aa", 2),
        ("x\nx\nx\n", "x\n", 3),
    ],
)
def test_edit_needs_exactly_one_occurrence(
    rw: TaskWorkspace, text: str, old: str, count: int
) -> None:
    """Zero or several occurrences (overlapping ones count) raise EditError; nothing changes."""
    (rw.root / "f.txt").write_text(text)
    with pytest.raises(EditError, match=f"found {count} occurrences") as info:
        rw.edit_file("f.txt", old, "new")
    assert info.value.occurrences == count
    assert (rw.root / "f.txt").read_text() == text


def test_edit_refuses_an_empty_old(rw: TaskWorkspace) -> None:
    """An empty old string would match everywhere."""
    with pytest.raises(EditError, match="empty"):
        rw.edit_file("notes.txt", "", "x")


def test_edit_checks_the_expected_digest(rw: TaskWorkspace) -> None:
    """expected_sha256 must be the file's current digest, else a conflict and no change."""
    current = _sha(b"alpha\nbeta\n")
    with pytest.raises(WorkspaceConflictError) as info:
        rw.edit_file("notes.txt", "beta", "gamma", expected_sha256="0" * 64)
    assert (info.value.expected, info.value.actual) == ("0" * 64, current)
    assert (rw.root / "notes.txt").read_text() == "alpha\nbeta\n"
    ref = rw.edit_file("notes.txt", "beta", "gamma", expected_sha256=current)
    with pytest.raises(WorkspaceConflictError):
        rw.edit_file("notes.txt", "gamma", "delta", expected_sha256=current)
    rw.edit_file("notes.txt", "gamma", "delta", expected_sha256=ref.sha256)
    assert (rw.root / "notes.txt").read_text() == "alpha\ndelta\n"


def test_edit_detects_a_change_racing_the_replace(
    rw: TaskWorkspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file changed between the edit's read and its replace is not overwritten."""
    from taskctx_workspace import staging

    def meddle(step: str) -> None:
        if step == "temp_synced":
            (rw.root / "notes.txt").write_text("someone else\n")

    monkeypatch.setattr(staging, "_step_hook", meddle)
    with pytest.raises(WorkspaceConflictError, match="changed while"):
        rw.edit_file("notes.txt", "beta", "gamma")
    assert (rw.root / "notes.txt").read_text() == "someone else\n"
    assert sorted(p.name for p in rw.root.iterdir()) == [".env", "notes.txt", "src"]


def test_read_only_edits_compound_in_the_executions_copy(ro: TaskWorkspace) -> None:
    """The first edit copies the external file; later edits edit that copy."""
    first = ro.edit_file("notes.txt", "alpha", "one")
    ro.edit_file("notes.txt", "beta", "two", expected_sha256=first.sha256)
    assert ro.read_file("notes.txt", origin="fallback").text == "one\ntwo\n"
    assert ro.read_file("notes.txt").text == "alpha\nbeta\n"


def test_edit_keeps_a_byte_order_mark(rw: TaskWorkspace) -> None:
    """A UTF-8 BOM survives an edit."""
    (rw.root / "bom.txt").write_bytes(b"\xef\xbb\xbfhello\n")
    rw.edit_file("bom.txt", "hello", "bye")
    assert (rw.root / "bom.txt").read_bytes() == b"\xef\xbb\xbfbye\n"


@pytest.mark.parametrize(
    ("name", "data", "code"),
    [
        ("pic.png", png_bytes(), "not_text"),
        ("r.pdf", pdf_bytes("hello"), "not_text"),
        ("bad.txt", b"hello " * 3000 + b"\xff", "invalid_text"),
    ],
)
def test_edit_refuses_non_text(rw: TaskWorkspace, name: str, data: bytes, code: str) -> None:
    """Images, documents (even parseable ones) and invalid UTF-8 are not edited."""
    rw.register_file_io_handler(TinyHandler())
    (rw.root / name).write_bytes(data)
    with pytest.raises(MediaError) as info:
        rw.edit_file(name, "hello", "bye")
    assert info.value.code == code
    assert (rw.root / name).read_bytes() == data


def test_edit_of_a_missing_file_is_not_found(rw: TaskWorkspace, ro: TaskWorkspace) -> None:
    """There is nothing to edit."""
    for workspace in (rw, ro):
        with pytest.raises(WorkspaceNotFoundError):
            workspace.edit_file("nope.txt", "a", "b")
