"""Reading a workspace: construction, bounded reads, media, fallback reads, listings."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from taskctx_workspace import (
    FileEntry,
    TaskWorkspace,
    WorkspaceNotFoundError,
    default_agent_root,
)

from taskctx import PluginHost, hookimpl
from taskctx.errors import MediaError, PolicyError
from taskctx.model import Completeness, Representation
from tests.plugins.workspace.helpers import TinyHandler, pdf_bytes, png_bytes

# --- construction ---------------------------------------------------------------------------


def test_workspace_attributes(root: Path, host: PluginHost) -> None:
    """root is resolved, areas_dir is root/.taskctx, derived state is outside the root,
    execution ids default to uuid4 hex."""
    workspace = TaskWorkspace(os.path.relpath(root), host=host)
    assert workspace.root == root.resolve()
    assert workspace.root.is_absolute()
    assert workspace.areas_dir == workspace.root / ".taskctx"
    assert workspace.root not in workspace.derived_dir.parents
    assert workspace.mode == "read_only"
    assert workspace.host is host
    assert len(workspace.execution_id) == 32
    assert TaskWorkspace(root, host=host).execution_id != workspace.execution_id
    assert TaskWorkspace(root, execution_id="run-7", host=host).execution_id == "run-7"


def test_create_makes_a_missing_root(tmp_path: Path, host: PluginHost) -> None:
    """create=True (the default) makes the root; nothing else is created up front."""
    workspace = TaskWorkspace(tmp_path / "a" / "b", host=host)
    assert workspace.root.is_dir()
    assert list(workspace.root.iterdir()) == []


def test_missing_root_without_create_is_a_clear_error(tmp_path: Path, host: PluginHost) -> None:
    """create=False and no folder raises WorkspaceNotFoundError naming the root."""
    with pytest.raises(WorkspaceNotFoundError, match="does not exist"):
        TaskWorkspace(tmp_path / "missing", create=False, host=host)
    (tmp_path / "file").write_text("x")
    with pytest.raises(WorkspaceNotFoundError, match="not a folder"):
        TaskWorkspace(tmp_path / "file", host=host)


@pytest.mark.parametrize("mode", ["readonly", "rw", "", "READ_ONLY"])
def test_unknown_modes_are_refused(root: Path, host: PluginHost, mode: str) -> None:
    """Only read_only and read_write exist."""
    with pytest.raises(ValueError, match="mode"):
        TaskWorkspace(root, mode=mode, host=host)  # type: ignore[arg-type]


@pytest.mark.parametrize("execution_id", ["../x", "a/b", "", ".hidden", "x" * 200])
def test_unsafe_execution_ids_are_refused(root: Path, host: PluginHost, execution_id: str) -> None:
    """An execution id becomes a folder name, so it must be a safe name."""
    with pytest.raises(PolicyError, match="execution id"):
        TaskWorkspace(root, execution_id=execution_id, host=host)


def test_default_host_comes_from_the_environment(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """host=None builds PluginHost.from_environment() (TASKCTX_LOAD_PLUGINS honoured)."""
    monkeypatch.setenv("TASKCTX_LOAD_PLUGINS", "")
    workspace = TaskWorkspace(root)
    assert isinstance(workspace.host, PluginHost)
    assert workspace.host.allow == frozenset()


def test_default_agent_root_is_per_agent(tmp_path: Path) -> None:
    """<entry dir>/.taskctx/task_workspaces/<agent-id>, one per agent."""
    first = default_agent_root("agent-1", tmp_path)
    assert first == tmp_path.resolve() / ".taskctx" / "task_workspaces" / "agent-1"
    assert default_agent_root("agent-2", tmp_path) != first


def test_default_agent_root_uses_the_script_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without entry_dir the running script's folder is used, else the current folder."""
    script = tmp_path / "app" / "main.py"
    script.parent.mkdir()
    script.write_text("")
    monkeypatch.setattr(sys, "argv", [str(script)])
    assert default_agent_root("bot").parent.parent.parent == script.parent.resolve()
    monkeypatch.setattr(sys, "argv", ["-c"])
    monkeypatch.chdir(tmp_path)
    assert default_agent_root("bot").parent.parent.parent == tmp_path.resolve()


@pytest.mark.parametrize("agent_id", ["", "../other", "a/b", ".", "two words"])
def test_default_agent_root_refuses_unsafe_ids(tmp_path: Path, agent_id: str) -> None:
    """Agent ids are validated so agents cannot collide or escape."""
    with pytest.raises(PolicyError, match="agent id"):
        default_agent_root(agent_id, tmp_path)


# --- read_file ------------------------------------------------------------------------------

TEXTS = [
    "plain ascii text\n",
    "héllo wörld, naïve café\n",
    "日本語のテキスト、中文文本。\n",
    "emoji 😀🎉👍 and more 🚀\n",
    "mixed: a€b😀c日d\n" * 5,
    "",
]


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("limit", [0, 1, 2, 3, 5, 7, 11, 1000, None])
def test_bounded_reads_never_split_a_character(
    ro: TaskWorkspace, text: str, limit: int | None
) -> None:
    """A limit counts characters; the cut text is a prefix of the decoded text."""
    (ro.root / "t.txt").write_text(text, encoding="utf-8")
    result = ro.read_file("t.txt", limit=limit)
    expected = text if limit is None else text[:limit]
    assert result.text == expected
    assert result.text is not None
    assert result.text.encode("utf-8").decode("utf-8") == expected
    assert result.chars_total == len(text)
    assert result.complete is (len(expected) == len(text))
    assert result.completeness is (Completeness.COMPLETE if result.complete else Completeness.LOSSY)
    assert result.representation is Representation.TEXT
    assert result.size == len(text.encode("utf-8"))


def test_read_file_reports_the_digest_of_the_whole_file(ro: TaskWorkspace) -> None:
    """sha256 is of all raw bytes even when the text is cut."""
    import hashlib

    data = ("x" * 100 + "\n").encode()
    (ro.root / "big.txt").write_bytes(data)
    result = ro.read_file("big.txt", limit=10)
    assert result.sha256 == hashlib.sha256(data).hexdigest()
    assert result.origin == "external"
    assert result.media_type == "text/plain"


def test_negative_limits_are_refused(ro: TaskWorkspace) -> None:
    """A negative limit is a caller error."""
    with pytest.raises(ValueError, match="limit"):
        ro.read_file("notes.txt", limit=-1)


def test_invalid_utf8_is_reference_only_with_invalid_text(ro: TaskWorkspace) -> None:
    """Text-named bytes that are not UTF-8 past the head are reference only, never guessed."""
    (ro.root / "bad.txt").write_bytes(b"ok " * 5000 + b"\xff\xfe broken")
    result = ro.read_file("bad.txt")
    assert result.text is None
    assert result.representation is Representation.REFERENCE_ONLY
    assert result.completeness is Completeness.REFERENCE_ONLY
    assert result.problem is not None
    assert result.problem.code == "invalid_text"


@pytest.mark.parametrize(
    ("name", "data", "media_type"),
    [
        ("pic.png", png_bytes(), "image/png"),
        ("blob.bin", b"\x00\x01\x02binary", "application/octet-stream"),
        ("archive.zip", b"PK\x03\x04" + b"\x00" * 30, "application/zip"),
        ("fake.txt", png_bytes(), "image/png"),
    ],
)
def test_images_and_binaries_are_reference_only(
    ro: TaskWorkspace, name: str, data: bytes, media_type: str
) -> None:
    """No text for images or binaries, whatever the name claims; bytes on request."""
    (ro.root / name).write_bytes(data)
    result = ro.read_file(name)
    assert (result.text, result.chars_total, result.complete) == (None, None, False)
    assert result.representation is Representation.REFERENCE_ONLY
    assert result.media_type == media_type
    assert ro.read_bytes(name) == data


def test_documents_without_a_handler_say_handler_missing(ro: TaskWorkspace) -> None:
    """A PDF with no FileIOHandler is reference only with handler_missing."""
    (ro.root / "r.pdf").write_bytes(pdf_bytes())
    result = ro.read_file("r.pdf")
    assert result.representation is Representation.REFERENCE_ONLY
    assert result.problem is not None
    assert result.problem.code == "handler_missing"
    with pytest.raises(MediaError) as info:
        ro.parsed("r.pdf")
    assert info.value.code == "handler_missing"


def test_documents_with_a_handler_are_parsed_text(ro: TaskWorkspace) -> None:
    """A registered handler turns a document into parsed text with sections, bounded."""
    handler = TinyHandler()
    ro.register_file_io_handler(handler)
    (ro.root / "r.pdf").write_bytes(pdf_bytes("first page"))
    result = ro.read_file("r.pdf", limit=5)
    assert result.text == "FIRST"
    assert result.chars_total == len("FIRST PAGE")
    assert result.representation is Representation.PARSED_TEXT
    assert result.completeness is Completeness.LOSSY
    assert [s.scope for s in result.sections] == ["page:1"]
    assert ro.read_file("r.pdf").completeness is Completeness.COMPLETE
    assert handler.calls == 1


def test_documents_the_handler_refuses_carry_its_code(ro: TaskWorkspace) -> None:
    """An encrypted document is reference only with the handler's code."""
    ro.register_file_io_handler(TinyHandler())
    (ro.root / "locked.pdf").write_bytes(pdf_bytes("ENCRYPTED"))
    result = ro.read_file("locked.pdf")
    assert result.problem is not None
    assert result.problem.code == "encrypted"
    assert result.text is None


def test_host_handlers_fill_the_workspace_registry(root: Path) -> None:
    """Handlers registered through the host's hook are in the workspace's one registry."""
    handler = TinyHandler(name="from-host")

    class Plugin:
        @hookimpl
        def register_file_io_handlers(self, register: object) -> None:
            register(handler)  # type: ignore[operator]

    host = PluginHost(allow=[])
    host.register(Plugin(), name="handlers")
    workspace = TaskWorkspace(root, host=host)
    assert workspace.file_io_handlers() == (handler,)
    assert workspace.file_io_handler_for("x.pdf") is handler
    assert workspace.file_io_handler_for(None, "application/pdf") is handler
    own = TinyHandler(name="own")
    workspace.register_file_io_handler(own)
    assert workspace.file_io_handler_for("x.pdf") is own  # explicit registrations first
    with pytest.raises(ValueError, match="already registered"):
        workspace.register_file_io_handler(TinyHandler(name="own"))
    with pytest.raises(TypeError):
        workspace.register_file_io_handler(object())  # type: ignore[arg-type]


def test_missing_files_raise_not_found(ro: TaskWorkspace) -> None:
    """A path that is nowhere raises WorkspaceNotFoundError (a FileNotFoundError too)."""
    with pytest.raises(WorkspaceNotFoundError):
        ro.read_file("nope.txt")
    with pytest.raises(FileNotFoundError):
        ro.read_bytes("nope.txt")


def test_reading_a_folder_is_refused(ro: TaskWorkspace) -> None:
    """A folder is not a file."""
    with pytest.raises(PolicyError, match="a folder"):
        ro.read_file("src")


def test_symlinks_inside_the_root_are_followed(ro: TaskWorkspace) -> None:
    """A symlink to a file inside the root reads the file."""
    os.symlink("src/app.py", ro.root / "alias.py")
    assert ro.read_file("alias.py").text == "print('hi')\n"


def test_media_decisions_use_the_kernel_table(ro: TaskWorkspace) -> None:
    """media() is the kernel's classify for a confined path."""
    assert ro.media("a.py", b"").enters_as_text
    assert ro.media("a.txt", png_bytes()).media_type == "image/png"
    assert ro.media("r.pdf", None).needs_handler
    with pytest.raises(PolicyError):
        ro.media("../a.py", None)


# --- fallback reads -----------------------------------------------------------------------


def test_reads_fall_back_to_this_executions_copy(ro: TaskWorkspace) -> None:
    """A path missing externally is read from this execution's area, and says so."""
    ro.write_file("draft.md", "# draft\n")
    assert not (ro.root / "draft.md").exists()
    result = ro.read_file("draft.md")
    assert (result.text, result.origin) == ("# draft\n", "fallback")
    assert ro.read_bytes("draft.md") == b"# draft\n"


def test_another_execution_does_not_see_the_fallback(root: Path, host: PluginHost) -> None:
    """Fallback copies belong to one execution id."""
    TaskWorkspace(root, execution_id="one", host=host).write_file("draft.md", "x")
    assert TaskWorkspace(root, execution_id="one", host=host).read_file("draft.md").text == "x"
    with pytest.raises(WorkspaceNotFoundError):
        TaskWorkspace(root, execution_id="two", host=host).read_file("draft.md")


def test_external_files_win_unless_the_copy_is_asked_for(ro: TaskWorkspace) -> None:
    """origin='auto' reads the external file; origin='fallback' this execution's copy."""
    ro.write_file("notes.txt", "mine\n")
    assert ro.read_file("notes.txt").text == "alpha\nbeta\n"
    copy = ro.read_file("notes.txt", origin="fallback")
    assert (copy.text, copy.origin) == ("mine\n", "fallback")
    with pytest.raises(WorkspaceNotFoundError):
        ro.read_file("src/app.py", origin="fallback")
    ro.write_file("only-mine.txt", "x")
    with pytest.raises(WorkspaceNotFoundError):
        ro.read_file("only-mine.txt", origin="external")


# --- list_files -----------------------------------------------------------------------------


def _paths(entries: list[FileEntry]) -> list[str]:
    return [e.path for e in entries]


def test_list_files_skips_hidden_state_links_and_special_files(
    ro: TaskWorkspace, tmp_path: Path
) -> None:
    """Hidden files (unless asked), .taskctx/, escaping links and FIFOs are never listed."""
    (tmp_path / "outside.txt").write_text("secret")
    os.symlink(tmp_path / "outside.txt", ro.root / "escape.txt")
    os.symlink("/", ro.root / "rootlink")
    os.symlink("src", ro.root / "srclink")
    os.symlink("src/app.py", ro.root / "alias.py")
    os.symlink(".env", ro.root / "env-alias")
    os.symlink("loop", ro.root / "loop")
    os.mkfifo(ro.root / "pipe")
    (ro.root / ".git").mkdir()
    (ro.root / ".git" / "HEAD").write_text("ref\n")
    ro.write_file("artifact.txt", "in .taskctx")
    assert _paths(ro.list_files()) == ["alias.py", "notes.txt", "src/app.py"]
    assert _paths(ro.list_files(include_hidden=True)) == [
        ".env",
        ".git/HEAD",
        "alias.py",
        "env-alias",
        "notes.txt",
        "src/app.py",
    ]


def test_list_files_entries_carry_digest_and_media(ro: TaskWorkspace) -> None:
    """Each entry has path, size, sha256, media type, representation and completeness."""
    import hashlib

    ro.register_file_io_handler(TinyHandler())
    (ro.root / "r.pdf").write_bytes(pdf_bytes())
    (ro.root / "pic.png").write_bytes(png_bytes())
    entries = {e.path: e for e in ro.list_files()}
    notes = entries["notes.txt"]
    assert notes.size == len(b"alpha\nbeta\n")
    assert notes.sha256 == hashlib.sha256(b"alpha\nbeta\n").hexdigest()
    assert (notes.representation, notes.completeness) == (
        Representation.TEXT,
        Completeness.COMPLETE,
    )
    assert entries["r.pdf"].representation is Representation.PARSED_TEXT
    assert entries["pic.png"].media_type == "image/png"
    assert entries["pic.png"].completeness is Completeness.REFERENCE_ONLY


@pytest.mark.parametrize(
    ("prefix", "expected"),
    [
        ("", ["notes.txt", "src/app.py", "src/lib/util.py", "srcx.txt"]),
        ("src", ["src/app.py", "src/lib/util.py", "srcx.txt"]),
        ("src/", ["src/app.py", "src/lib/util.py"]),
        ("src/lib", ["src/lib/util.py"]),
        ("./src/a", ["src/app.py"]),
        ("no", ["notes.txt"]),
        ("zzz", []),
    ],
)
def test_list_files_prefix_is_a_string_prefix(
    ro: TaskWorkspace, prefix: str, expected: list[str]
) -> None:
    """prefix works like the kernel's path_prefix: a plain prefix of the relative path."""
    (ro.root / "src" / "lib").mkdir()
    (ro.root / "src" / "lib" / "util.py").write_text("x = 1\n")
    (ro.root / "srcx.txt").write_text("x\n")
    assert _paths(ro.list_files(prefix=prefix)) == expected


def test_iter_entries_is_deterministic_and_stamped(ro: TaskWorkspace) -> None:
    """Two walks give the same files in the same order with their stat stamps."""
    first = list(ro.iter_entries())
    assert first == list(ro.iter_entries())
    assert [e.path for e in first] == [".env", "notes.txt", "src/app.py"]
    st = os.stat(ro.root / "notes.txt")
    notes = first[1]
    assert (notes.size, notes.mtime_ns, notes.ino, notes.ctime_ns) == (
        st.st_size,
        st.st_mtime_ns,
        st.st_ino,
        st.st_ctime_ns,
    )
    assert [e.path for e in ro.iter_entries(include_hidden=False)] == ["notes.txt", "src/app.py"]


def test_iter_entries_reports_unreadable_folders(ro: TaskWorkspace) -> None:
    """A folder that cannot be scanned goes to on_error instead of vanishing silently."""
    errors: list[str] = []
    (ro.root / "gone").mkdir()
    entries = ro.iter_entries(on_error=lambda path, exc: errors.append(path))
    first = next(entries)
    (ro.root / "gone").rmdir()
    rest = list(entries)
    assert [first.path, *(e.path for e in rest)] == [".env", "notes.txt", "src/app.py"]
    assert errors == ["gone"]
