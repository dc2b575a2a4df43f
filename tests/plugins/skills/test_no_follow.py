"""Links and special files: discovery, binding and the store never follow a symlink below
the library root, never open a FIFO or device, and report each as an invalid skill."""

from __future__ import annotations

import os
import socket
import stat
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from taskctx_skills import SkillLibrary, SkillStoreError, SkillValidationError

from taskctx.errors import TaskCtxError
from tests.plugins.skills.conftest import store_files, store_root, write_skill
from tests.plugins.skills.hostile import assert_rest_discovered, discover_in_child, run_child

ALL = ["review-code", "deploy-app", "triage-incidents"]
SECRET = "SECRET-outside-the-library"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A valid skill folder outside the library whose description is a secret."""
    return write_skill(tmp_path / "outside", "victim", f"{SECRET} token=hunter2")


def problems_of(lib: Path, folder: str) -> tuple[str, ...]:
    """Discovery's problems for ``folder``; the rest is discovered and no secret shows."""
    entries = {e.folder: e for e in SkillLibrary(lib).discover()}
    assert_rest_discovered(entries, ALL)
    assert SECRET not in str(entries)
    entry = entries[folder]
    assert (entry.valid, entry.name, entry.description) == (False, None, None)
    return entry.problems


# -- SKILL.md as a symlink -------------------------------------------------------------------

SKILL_MD_LINKS: dict[str, Callable[[Path, Path], str]] = {
    "outside-file": lambda lib, outside: str(outside / "SKILL.md"),
    "relative-inside-library": lambda lib, outside: "../deploy-app/SKILL.md",
    "device": lambda lib, outside: "/dev/zero",
    "dangling": lambda lib, outside: str(outside / "missing.md"),
    "to-a-folder": lambda lib, outside: str(outside),
}


@pytest.mark.parametrize("name", ["SKILL.md", "skill.md"])
@pytest.mark.parametrize("target", sorted(SKILL_MD_LINKS))
def test_a_skill_md_symlink_is_not_followed(
    lib: Path, outside: Path, target: str, name: str
) -> None:
    """A SKILL.md that is a symlink, wherever it points, is an invalid skill: its target's
    name and description are never shown."""
    folder = lib / "victim"
    folder.mkdir()
    os.symlink(SKILL_MD_LINKS[target](lib, outside), folder / name)
    assert problems_of(lib, "victim") == (f"{name} is a symlink (not followed, not allowed)",)


# -- the skill folder as a symlink ------------------------------------------------------------

FOLDER_LINKS: dict[str, Callable[[Path, Path], str]] = {
    "outside-skill": lambda lib, outside: str(outside),
    "sibling-skill": lambda lib, outside: "deploy-app",
    "root": lambda lib, outside: "/",
    "a-file": lambda lib, outside: str(outside / "SKILL.md"),
    "dangling": lambda lib, outside: str(outside / "missing"),
}


@pytest.mark.parametrize("target", sorted(FOLDER_LINKS))
def test_a_skill_folder_symlink_is_listed_as_invalid(lib: Path, outside: Path, target: str) -> None:
    """A symlink at the library root is listed as an invalid skill, never followed; bind()
    of it (even trusted) is refused with the same message and stores nothing."""
    os.symlink(FOLDER_LINKS[target](lib, outside), lib / "victim")
    message = "the skill folder is a symlink (not followed, not allowed)"
    assert problems_of(lib, "victim") == (message,)
    library = SkillLibrary(lib, trusted=[*ALL, "victim"])
    with pytest.raises(SkillValidationError) as raised:
        library.bind("victim")
    assert raised.value.messages == (message,)


# -- special files named SKILL.md ------------------------------------------------------------


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _socket(path: Path) -> None:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    here = Path.cwd()
    os.chdir(path.parent)  # a relative name: AF_UNIX paths are short
    try:
        server.bind(path.name)
    finally:
        os.chdir(here)
        server.close()


def _folder(path: Path) -> None:
    path.mkdir()
    (path / "SKILL.md").write_text("---\nname: x\ndescription: y\n---\n", encoding="utf-8")


SPECIAL: dict[str, tuple[Callable[[Path], None], str]] = {
    "fifo": (_fifo, "is not a regular file (FIFO)"),
    "socket": (_socket, "is not a regular file (socket)"),
    "folder": (_folder, "is a folder, not a file"),
}


def _make_specials(lib: Path) -> dict[str, str]:
    """One skill per special kind and spelling; returns folder -> expected problem."""
    expected = {}
    for kind, (make, problem) in SPECIAL.items():
        for name in ("SKILL.md", "skill.md"):
            folder = lib / f"{kind}-{name.split('.')[0]}"
            folder.mkdir()
            make(folder / name)
            expected[folder.name] = f"{name} {problem}"
    return expected


@pytest.mark.slow
def test_special_files_named_skill_md_are_reported_without_blocking(lib: Path) -> None:
    """A FIFO, a socket or a folder named SKILL.md (or skill.md) is an invalid skill, found
    without opening it for reading: discovery (run in a child, with a timeout) never blocks."""
    expected = _make_specials(lib)
    found = discover_in_child(lib, timeout=30)
    assert_rest_discovered(found.entries, ALL)
    for folder, problem in expected.items():
        assert found.entries[folder].problems == (problem,), folder


def test_bind_reports_special_files_as_discovery_does(lib: Path) -> None:
    """bind() of a trusted skill whose SKILL.md is special refuses it with discovery's
    message, and a FIFO among its resources is named with its kind; nothing is stored."""
    expected = _make_specials(lib)
    os.mkfifo(lib / "deploy-app" / "notes.md")
    expected["deploy-app"] = "notes.md is not a regular file (FIFO)"
    library = SkillLibrary(lib, trusted=[*ALL, *expected])
    for folder, problem in expected.items():
        with pytest.raises(SkillValidationError) as raised:
            library.bind(folder)
        assert raised.value.messages == (problem,), folder
        assert library.validate(folder) == [problem]
    assert store_files(lib) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
def test_a_device_named_skill_md_is_reported(lib: Path) -> None:
    """A character device named SKILL.md is reported, never opened."""
    (lib / "device").mkdir()
    try:
        os.mknod(lib / "device" / "SKILL.md", stat.S_IFCHR | 0o600, os.makedev(1, 5))
    except PermissionError:
        pytest.skip("this container refuses mknod")
    assert problems_of(lib, "device") == ("SKILL.md is not a regular file (character device)",)


# -- swaps while the library is read ----------------------------------------------------------


SWAP_PAUSE = 0.0002
"""Seconds each state lasts: at this pace the unfixed library leaks several times a second."""


@pytest.fixture
def swapper() -> Iterator[Callable[[Path, Path], None]]:
    """Start a thread that keeps swapping a real folder for a symlink to ``target`` and back."""
    stop = threading.Event()
    threads: list[threading.Thread] = []

    def start(real: Path, target: Path) -> None:
        away = real.with_name(f".{real.name}-away")

        def swap() -> None:
            while not stop.is_set():
                os.rename(real, away)
                os.symlink(target, real, target_is_directory=True)
                time.sleep(SWAP_PAUSE)
                os.unlink(real)
                os.rename(away, real)
                time.sleep(SWAP_PAUSE)

        thread = threading.Thread(target=swap, daemon=True)
        thread.start()
        threads.append(thread)

    yield start
    stop.set()
    for thread in threads:
        thread.join()


@pytest.mark.slow
def test_discovery_never_follows_a_folder_swapped_for_a_symlink(
    lib: Path, outside: Path, swapper: Callable[[Path, Path], None]
) -> None:
    """With a skill folder swapped for a symlink to outside in a loop, discovery shows the
    real skill, a symlink problem or nothing for it: never the outside skill's text."""
    write_skill(lib, "victim", "The real skill.")
    library = SkillLibrary(lib)
    swapper(lib / "victim", outside)
    deadline = time.monotonic() + 1.5
    seen = set()
    while time.monotonic() < deadline:
        for entry in library.discover():
            assert SECRET not in (entry.description or ""), entry
            if entry.folder == "victim":
                seen.add(entry.problems)
    assert seen <= {
        (),
        ("the skill folder is a symlink (not followed, not allowed)",),
        ("the skill folder changed while it was read",),
    }


@pytest.mark.slow
def test_bind_never_stores_bytes_from_a_folder_swapped_for_a_symlink(
    lib: Path, tmp_path: Path, swapper: Callable[[Path, Path], None]
) -> None:
    """With references/ swapped for a symlink to an outside folder holding a file of the
    same name, bind() pins the real bytes or refuses: outside bytes never reach the store."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "style-guide.md").write_text(f"{SECRET}\n", encoding="utf-8")
    library = SkillLibrary(lib, trusted=ALL)
    swapper(lib / "review-code" / "references", elsewhere)
    deadline = time.monotonic() + 1.5
    outcomes = set()
    while time.monotonic() < deadline:
        try:
            skill = library.bind("review-code")
        except TaskCtxError as exc:  # a symlink seen, or kept changing
            outcomes.add(type(exc).__name__)
            continue
        outcomes.add("bound")
        for file in skill.files:
            assert SECRET.encode() not in library.store.blob(file.sha256), file.path
    store = store_root(lib) / "objects"
    for blob in store.rglob("*"):
        assert not blob.is_file() or SECRET.encode() not in blob.read_bytes()
    assert outcomes


# -- the store's own files ---------------------------------------------------------------------

_RESTORE = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from taskctx_skills import SkillLibrary
library = SkillLibrary(sys.argv[1], trusted=sys.argv[2].split("+"))
results = []
for revision in sys.argv[3:]:
    try:
        library.restore_source(revision)
    except Exception as exc:
        results.append([type(exc).__name__, str(exc)])
    else:
        results.append(None)
print(json.dumps({"results": results}))
"""


def _blob_of(lib: Path, digest: str) -> Path:
    value = digest.removeprefix("sha256:")
    return store_root(lib) / "objects" / value[:2] / value[2:]


def _to_dev_zero(path: Path) -> None:
    path.unlink()
    os.symlink("/dev/zero", path)


def _to_fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


@pytest.mark.slow
def test_a_store_blob_replaced_by_a_special_file_fails_fast(
    library: SkillLibrary, lib: Path
) -> None:
    """A blob swapped for a symlink to /dev/zero or for a FIFO makes the restore fail at
    once with SkillStoreError naming it (in a child, with a timeout and a memory cap)."""
    tampered = {"review-code": _to_dev_zero, "deploy-app": _to_fifo}
    revisions = []
    for name, tamper in tampered.items():
        source = library.source(required=[name])
        tamper(_blob_of(lib, source.skills[name].skill_md.sha256))
        revisions.append(source.revision)
    raw = run_child(_RESTORE, str(lib), "+".join(tampered), *revisions, timeout=30)
    (link_error, link_message), (fifo_error, fifo_message) = raw["results"]
    assert (link_error, fifo_error) == (SkillStoreError.__name__, SkillStoreError.__name__)
    assert "is a symlink (not followed, not allowed): tampered with" in link_message
    assert "is not a regular file (FIFO): tampered with" in fifo_message


def test_a_store_blob_over_the_file_limit_is_not_read(library: SkillLibrary, lib: Path) -> None:
    """A blob grown to a 600 MB sparse file is refused by its size, before it is read."""
    source = library.source(required=["review-code"])
    os.truncate(_blob_of(lib, source.skills["review-code"].skill_md.sha256), 600 * 1024 * 1024)
    with pytest.raises(SkillStoreError, match="bytes, over the 16777216-byte file limit"):
        library.restore_source(source.revision)


def test_a_store_folder_swapped_for_a_symlink_is_refused(library: SkillLibrary, lib: Path) -> None:
    """The store's objects/ folder as a symlink is not followed: the restore fails loudly."""
    source = library.source(required=["review-code"])
    objects = store_root(lib) / "objects"
    objects.rename(objects.with_name("objects-real"))
    os.symlink(objects.with_name("objects-real"), objects, target_is_directory=True)
    with pytest.raises(SkillStoreError, match=r": objects is a symlink \(not followed"):
        library.restore_source(source.revision)


@pytest.mark.parametrize("linked", [(".taskctx",), (".taskctx", "skills")])
def test_a_library_shipping_a_linked_store_binds_outside_it(
    lib: Path, tmp_path: Path, linked: tuple[str, ...]
) -> None:
    """A library shipping ``.taskctx`` (or its ``skills``) as a link is not an earlier
    version's store: the binding is kept in the state folder, nothing lands through it."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    lib.joinpath(*linked[:-1]).mkdir(parents=True, exist_ok=True)
    lib.joinpath(*linked).symlink_to(elsewhere, target_is_directory=True)
    library = SkillLibrary(lib, trusted=ALL)
    library.bind("review-code")
    assert library.store.root == store_root(lib)
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("linked", [("objects",), ()])
def test_store_writes_never_go_through_a_planted_link(
    lib: Path, tmp_path: Path, linked: tuple[str, ...]
) -> None:
    """A link planted in the store (its objects folder, or the store itself in the state
    folder) is refused, and nothing is written through it."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    where = store_root(lib).joinpath(*linked)
    where.parent.mkdir(parents=True, exist_ok=True)
    where.symlink_to(elsewhere, target_is_directory=True)
    library = SkillLibrary(lib, trusted=ALL)
    with pytest.raises(SkillStoreError, match="symlink"):
        library.bind("review-code")
    assert list(elsewhere.iterdir()) == []


def test_a_store_an_earlier_version_kept_inside_the_library_is_still_used(lib: Path) -> None:
    """``<root>/.taskctx/skills`` made by an earlier version keeps serving its bindings."""
    inside = lib / ".taskctx" / "skills"
    inside.mkdir(parents=True)
    library = SkillLibrary(lib, trusted=ALL)
    source = library.source(required=["review-code"])
    assert library.store.root == inside
    assert (inside / "bindings" / (source.revision[7:] + ".json")).is_file()
    assert SkillLibrary(lib, trusted=ALL).restore_source(source.revision).revision == (
        source.revision
    )
