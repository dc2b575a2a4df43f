"""The record store refuses to open its files through links or as the wrong kind of file.

``<root>/.taskctx/records/records.db``, its folders, SQLite's side files and the cursor
key: a symlink (to a real store elsewhere, or to any file), a folder or FIFO where a file
should be, a file where a folder should be, or a hard link, is refused at construction
with a RecordStorePathError naming the path, and nothing outside is opened or written.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from taskctx_records import RecordStore, RecordStorePathError

from taskctx.errors import TaskCtxError

MODES = ["read_write", "read_only"]


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    """A real, working store outside the root under test."""
    other = tmp_path / "elsewhere"
    with RecordStore(other) as store:
        store.put({"secret": "outside"}, collection="c")
        store.signer  # noqa: B018 - makes cursor.key
    return other


def _fingerprint(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in folder.rglob("*")
        if p.is_file() and not p.is_symlink()
    }


def _refused(root: Path, mode: str, where: Path, problem: str) -> RecordStorePathError:
    with pytest.raises(RecordStorePathError, match=problem) as info:
        RecordStore(root, mode=mode)  # type: ignore[arg-type]
    assert info.value.path == str(where)
    assert str(where) in str(info.value)
    assert isinstance(info.value, TaskCtxError)
    return info.value


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("link", "target"),
    [
        pytest.param(".taskctx", ".taskctx", id="state-folder"),
        pytest.param(".taskctx/records", ".taskctx/records", id="records-folder"),
        pytest.param(".taskctx/records/records.db", ".taskctx/records/records.db", id="db"),
    ],
)
def test_links_to_another_store_are_refused(
    tmp_path: Path, elsewhere: Path, mode: str, link: str, target: str
) -> None:
    """A link at any level of the store's path is refused, even to a valid store."""
    root = tmp_path / "root"
    (root / link).parent.mkdir(parents=True)
    os.symlink(elsewhere / target, root / link)
    before = _fingerprint(elsewhere)
    error = _refused(root, mode, root / link, "is a symlink to")
    assert str(elsewhere) in str(error)  # says where the link points
    assert _fingerprint(elsewhere) == before


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("side", ["records.db-wal", "records.db-shm", "records.db-journal"])
def test_linked_side_files_are_refused(
    tmp_path: Path, elsewhere: Path, mode: str, side: str
) -> None:
    """SQLite's side files as links (to a file SQLite would write) are refused."""
    root = tmp_path / "root"
    RecordStore(root).close()
    victim = tmp_path / "victim"
    victim.write_bytes(b"do not overwrite")
    os.symlink(victim, root / ".taskctx" / "records" / side)
    _refused(root, mode, root / ".taskctx" / "records" / side, "is a symlink")
    assert victim.read_bytes() == b"do not overwrite"


@pytest.mark.parametrize("mode", MODES)
def test_a_dangling_database_link_is_refused_and_nothing_is_created(
    tmp_path: Path, mode: str
) -> None:
    """A link to a file that does not exist yet: SQLite would create it there."""
    root = tmp_path / "root"
    (root / ".taskctx" / "records").mkdir(parents=True)
    target = tmp_path / "made-outside.db"
    os.symlink(target, root / ".taskctx" / "records" / "records.db")
    _refused(root, mode, root / ".taskctx" / "records" / "records.db", "is a symlink")
    assert not target.exists()


@pytest.mark.parametrize("mode", MODES)
def test_a_folder_where_the_database_is_is_refused(tmp_path: Path, mode: str) -> None:
    """``records.db`` as a folder is refused with what stands there."""
    root = tmp_path / "root"
    (root / ".taskctx" / "records" / "records.db").mkdir(parents=True)
    _refused(root, mode, root / ".taskctx" / "records" / "records.db", "is a folder")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("level", [".taskctx", ".taskctx/records"])
def test_a_file_where_a_folder_is_is_refused(tmp_path: Path, mode: str, level: str) -> None:
    """``.taskctx`` or ``records`` as a regular file is refused, not a bare OSError."""
    root = tmp_path / "root"
    (root / level).parent.mkdir(parents=True, exist_ok=True)
    (root / level).write_text("not a folder")
    _refused(root, mode, root / level, "is a regular file, not a folder")


@pytest.mark.parametrize("mode", MODES)
def test_a_fifo_where_the_database_is_is_refused(tmp_path: Path, mode: str) -> None:
    """A FIFO at ``records.db`` is refused before anything opens it (it would block)."""
    root = tmp_path / "root"
    (root / ".taskctx" / "records").mkdir(parents=True)
    os.mkfifo(root / ".taskctx" / "records" / "records.db")
    _refused(root, mode, root / ".taskctx" / "records" / "records.db", "is a FIFO")


@pytest.mark.parametrize("mode", MODES)
def test_a_hard_linked_database_is_refused(tmp_path: Path, elsewhere: Path, mode: str) -> None:
    """records.db sharing its inode with another store's file: SQLite writes in place, so
    the other name would change too. Refused."""
    root = tmp_path / "root"
    (root / ".taskctx" / "records").mkdir(parents=True)
    os.link(elsewhere / ".taskctx/records/records.db", root / ".taskctx/records/records.db")
    before = _fingerprint(elsewhere)
    _refused(root, mode, root / ".taskctx" / "records" / "records.db", "hard link")
    assert _fingerprint(elsewhere) == before


def test_a_linked_cursor_key_is_refused(tmp_path: Path, elsewhere: Path) -> None:
    """``cursor.key`` linked to another store's key would let cursors cross stores."""
    root = tmp_path / "root"
    RecordStore(root).close()
    os.symlink(elsewhere / ".taskctx/records/cursor.key", root / ".taskctx/records/cursor.key")
    _refused(root, "read_write", root / ".taskctx" / "records" / "cursor.key", "is a symlink")


def test_a_cursor_key_linked_after_opening_is_refused_when_first_used(
    tmp_path: Path, elsewhere: Path
) -> None:
    """The key is checked again when it is first loaded, not only at construction."""
    root = tmp_path / "root"
    store = RecordStore(root)
    store.put_many([{"content": n, "collection": "c"} for n in range(2)])
    os.symlink(elsewhere / ".taskctx/records/cursor.key", root / ".taskctx/records/cursor.key")
    with pytest.raises(RecordStorePathError, match="is a symlink"):
        store.query(collection="c", page_size=1)
    store.close()


def test_a_root_that_is_a_link_is_the_callers_choice(tmp_path: Path, elsewhere: Path) -> None:
    """The root itself may be a symlink: the store below it is opened as usual."""
    os.symlink(elsewhere, tmp_path / "alias")
    with RecordStore(tmp_path / "alias", mode="read_only") as store:
        assert store.query(collection="c").records[0].content == {"secret": "outside"}
