"""Path confinement: lexical rules, symlinks, special files and the state folder."""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import Callable
from pathlib import Path, PurePosixPath

import pytest
from taskctx_workspace import TaskWorkspace, WorkspaceNotFoundError
from taskctx_workspace.beneath import Root
from taskctx_workspace.paths import (
    normalize_prefix,
    normalize_relative,
    safe_name,
)

from taskctx import PluginHost
from taskctx.errors import PolicyError
from taskctx.nofollow import describe_mode

# --- lexical rules ----------------------------------------------------------------------

REFUSED: list[tuple[object, str]] = [
    ("", "empty"),
    (".", "names the workspace root"),
    ("./", "names the workspace root"),
    ("a/..", "'..'"),
    ("..", "'..'"),
    ("../secret", "'..'"),
    ("a/../../b", "'..'"),
    ("a/b/..", "'..'"),
    ("/etc/passwd", "absolute"),
    ("//server/share", "absolute"),
    ("/", "absolute"),
    ("a\x00b", "NUL"),
    ("\x00", "NUL"),
    ("C:foo", "drive letter"),
    ("C:\\x", "backslashes"),
    ("c:/windows", "drive letter"),
    ("Z:", "drive letter"),
    ("a:b", "drive letter"),
    ("a\\b", "backslashes"),
    ("..\\secret", "backslashes"),
    ("\\\\server\\share", "backslashes"),
    ("\\etc", "backslashes"),
    (".taskctx", ".taskctx/"),
    (".taskctx/files/x/a.txt", ".taskctx/"),
    ("./.taskctx/workspace/digests.db", ".taskctx/"),
    (".TaskCtx/x", ".taskctx/"),
    ("a/.x.taskctx-tmp-0123", "reserved"),
    (b"bytes/path", "must be text"),
]


@pytest.mark.parametrize(("path", "rule"), REFUSED)
def test_refused_paths_name_the_path_and_the_rule(path: str, rule: str) -> None:
    """Each lexical rule raises PolicyError naming the path and the rule."""
    with pytest.raises(PolicyError) as info:
        normalize_relative(path)
    assert rule in str(info.value)
    assert repr(path) in str(info.value)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("a.txt", "a.txt"),
        ("./a.txt", "a.txt"),
        ("src//app.py", "src/app.py"),
        ("src/./app.py", "src/app.py"),
        ("src/", "src"),
        ("ab:c", "ab:c"),
        (".env", ".env"),
        ("dir/.taskctx/x", "dir/.taskctx/x"),
        ("..foo", "..foo"),
        ("foo..", "foo.."),
        ("über/naïve.md", "über/naïve.md"),
        (PurePosixPath("src/app.py"), "src/app.py"),
    ],
)
def test_allowed_paths_are_normalized(path: str, expected: str) -> None:
    """Relative paths come back in canonical POSIX form."""
    assert normalize_relative(path) == expected


@pytest.mark.parametrize(
    ("prefix", "expected"),
    [
        ("", ""),
        ("./", ""),
        ("src", "src"),
        ("src/", "src/"),
        ("./src//ap", "src/ap"),
        (".", "."),
        ("src/.", "src/."),
    ],
)
def test_prefixes_keep_their_partial_last_component(prefix: str, expected: str) -> None:
    """A listing prefix is a string prefix; only complete components are normalized."""
    assert normalize_prefix(prefix) == expected


@pytest.mark.parametrize("prefix", ["/abs", "../x", "a/../b", "C:x", "a\\b", "x\x00", ".taskctx/"])
def test_prefixes_follow_the_same_rules(prefix: str) -> None:
    """A prefix cannot escape or name internals either."""
    with pytest.raises(PolicyError):
        normalize_prefix(prefix)


@pytest.mark.parametrize("name", ["agent-1", "a", "A.b_c-9", "x" * 128])
def test_safe_names_pass(name: str) -> None:
    """Letters, digits, '_', '.', '-' up to 128 characters are safe names."""
    assert safe_name(name, "agent id") == name


@pytest.mark.parametrize("name", ["", ".", "..", ".hidden", "a/b", "a\\b", "a b", "x" * 129, "é"])
def test_unsafe_names_are_refused(name: str) -> None:
    """Anything that is not one plain path component is refused."""
    with pytest.raises(PolicyError, match="agent id"):
        safe_name(name, "agent id")


# --- symlinks and special files on disk -------------------------------------------------


def resolve_confined(base: Path, rel: str) -> Path:
    """Where ``rel`` resolves beneath ``base`` (symlinks resolved without following them)."""
    with Root.pin(base).base().locate(rel) as at:
        return base / at.real


def open_regular(base: Path, rel: str) -> int:
    """A descriptor of the regular file ``rel`` beneath ``base``."""
    with Root.pin(base).base().locate(rel) as at:
        return at.open_regular()


@pytest.fixture
def base(tmp_path: Path) -> Path:
    """A resolved root with an outside neighbour."""
    folder = tmp_path / "root"
    (folder / "dir").mkdir(parents=True)
    (folder / "dir" / "inside.txt").write_text("in")
    (folder / ".taskctx").mkdir()
    (folder / ".taskctx" / "state").write_text("private")
    (tmp_path / "outside.txt").write_text("out")
    return folder.resolve()


LINKS: list[tuple[str, str, str]] = [
    ("up", "../outside.txt", "outside the workspace root"),
    ("abs", "/etc/passwd", "outside the workspace root"),
    ("dirlink", "..", "outside the workspace root"),
    ("state", ".taskctx/state", "into .taskctx/"),
    ("statedir", ".taskctx", "into .taskctx/"),
]


@pytest.mark.parametrize(("name", "target", "rule"), LINKS)
def test_symlinks_resolving_outside_or_into_state_are_refused(
    base: Path, name: str, target: str, rule: str
) -> None:
    """A symlink escaping the root or entering .taskctx/ is refused by resolution."""
    os.symlink(target, base / name)
    with pytest.raises(PolicyError, match=rule):
        resolve_confined(base, name)


def test_paths_through_an_escaping_folder_link_are_refused(base: Path) -> None:
    """A folder symlink pointing outside refuses every path through it."""
    os.symlink(base.parent, base / "out")
    with pytest.raises(PolicyError, match="outside"):
        resolve_confined(base, "out/outside.txt")


@pytest.mark.parametrize("path", ["loop_a", "loop_b", "loop_a/x", "self"])
def test_symlink_loops_are_refused(base: Path, path: str) -> None:
    """Symlink loops are refused instead of spinning or failing obscurely."""
    os.symlink("loop_b", base / "loop_a")
    os.symlink("loop_a", base / "loop_b")
    os.symlink("self", base / "self")
    with pytest.raises(PolicyError, match="loop"):
        resolve_confined(base, path)


def test_internal_links_resolve_inside(base: Path) -> None:
    """A symlink to a file inside the root resolves to it; missing files are not refused."""
    os.symlink("dir/inside.txt", base / "alias.txt")
    assert resolve_confined(base, "alias.txt") == base / "dir" / "inside.txt"
    assert resolve_confined(base, "dir/new.txt") == base / "dir" / "new.txt"


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _socket(path: Path) -> None:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(os.fspath(path))
    server.close()


@pytest.mark.parametrize(("make", "kind"), [(_fifo, "FIFO"), (_socket, "socket")])
def test_special_files_are_never_opened(
    base: Path, make: Callable[[Path], None], kind: str
) -> None:
    """FIFOs and sockets are refused before any open (a FIFO would block)."""
    make(base / "special")
    with pytest.raises(PolicyError, match=kind):
        open_regular(base, "special")


def test_device_files_are_refused(base: Path) -> None:
    """A character device (linked in from /dev) is refused; its link also escapes."""
    os.symlink("/dev/null", base / "null")
    with pytest.raises(PolicyError, match="character device"):
        open_regular(Path("/dev"), "null")
    with pytest.raises(PolicyError, match="outside"):
        resolve_confined(base, "null")


def test_directories_are_not_regular_files(base: Path) -> None:
    """A folder is refused where a file is read."""
    with pytest.raises(PolicyError, match="a folder"):
        open_regular(base, "dir")


def test_missing_files_raise_not_found(base: Path) -> None:
    """A missing file is both a kernel NotFoundError and a FileNotFoundError."""
    with pytest.raises(WorkspaceNotFoundError):
        open_regular(base, "nope")
    with pytest.raises(FileNotFoundError):
        open_regular(base, "nope")


@pytest.mark.parametrize(
    ("mode", "name"),
    [
        (stat.S_IFREG, "a regular file"),
        (stat.S_IFDIR, "a folder"),
        (stat.S_IFIFO, "a FIFO"),
        (stat.S_IFSOCK, "a socket"),
        (stat.S_IFCHR, "a character device"),
        (stat.S_IFBLK, "a block device"),
        (stat.S_IFLNK, "a symlink"),
    ],
)
def test_file_kinds_have_names(mode: int, name: str) -> None:
    """Refusals name the kind of file they met."""
    assert describe_mode(mode) == name


# --- through the workspace API ------------------------------------------------------------

API_REFUSED = ["../x", "/etc/passwd", "a\x00", "C:\\x", "", ".taskctx/workspace/digests.db"]


@pytest.mark.parametrize("path", API_REFUSED)
@pytest.mark.parametrize("call", ["read_file", "read_bytes", "write_file", "stage", "parsed"])
def test_every_entry_point_confines_before_io(rw: TaskWorkspace, path: str, call: str) -> None:
    """read, write, stage and parse all refuse the same paths, and nothing is created."""
    before = sorted(p.name for p in rw.root.iterdir())
    method = getattr(rw, call)
    with pytest.raises(PolicyError):
        method(path, "x") if call in ("write_file", "stage") else method(path)
    assert sorted(p.name for p in rw.root.iterdir()) == before


def _attempt(workspace: TaskWorkspace, call: str, path: str) -> object:
    if call == "read_file":
        return workspace.read_file(path)
    if call == "write_file":
        return workspace.write_file(path, "new")
    return workspace.edit_file(path, "keep", "lost")


@pytest.mark.parametrize("call", ["read_file", "write_file", "edit_file"])
def test_workspace_refuses_symlink_escape_and_fifo(
    rw: TaskWorkspace, tmp_path: Path, call: str
) -> None:
    """An escaping symlink and a FIFO are refused by reads, writes and edits alike."""
    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    os.symlink(outside, rw.root / "link.txt")
    os.mkfifo(rw.root / "pipe")
    for path, rule in (("link.txt", "outside"), ("pipe", "FIFO")):
        with pytest.raises(PolicyError, match=rule):
            _attempt(rw, call, path)
    assert outside.read_text() == "keep"


def test_state_folder_replaced_by_a_symlink_is_refused(
    root: Path, tmp_path: Path, host: PluginHost
) -> None:
    """A .taskctx symlink planted in the folder cannot redirect the workspace's state."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, root / ".taskctx")
    workspace = TaskWorkspace(root, host=host)
    with pytest.raises(PolicyError, match="not a real folder"):
        workspace.write_file("new.txt", "x")
    assert list(elsewhere.iterdir()) == []
