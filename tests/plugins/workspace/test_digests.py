"""The digest cache: hashed once per stamp, persistent, batched, and self-healing."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path

import pytest
from taskctx_workspace import TaskWorkspace
from taskctx_workspace.digests import (
    COARSE_RACY_WINDOW_NS,
    RACY_WINDOW_NS,
    DigestCache,
    racy_wait_ns,
)
from taskctx_workspace.results import FileStat

from taskctx import PluginHost
from tests.plugins.workspace.helpers import age


@pytest.fixture
def many(root: Path) -> Path:
    """The root with 20 more text files, all modified a minute ago."""
    for n in range(20):
        (root / "src" / f"m{n:02}.py").write_text(f"value = {n}\n")
    age(*(p for p in root.rglob("*") if p.is_file()))
    return root


def test_second_scan_hashes_nothing(many: Path, host: PluginHost) -> None:
    """After one listing every file's digest comes from the cache, also in a new instance."""
    workspace = TaskWorkspace(many, host=host)
    first = workspace.list_files(include_hidden=True)
    assert workspace.hashed_count == len(first) == 23
    assert workspace.list_files(include_hidden=True) == first
    assert workspace.hashed_count == 23
    workspace.close()
    again = TaskWorkspace(many, host=host)
    assert again.list_files(include_hidden=True) == first
    assert again.hashed_count == 0


@pytest.mark.parametrize("change", ["touch", "rewrite", "replace"])
def test_one_changed_file_costs_one_hash(many: Path, host: PluginHost, change: str) -> None:
    """Changing one file's stamp (mtime, content or inode) rehashes exactly that file."""
    workspace = TaskWorkspace(many, host=host)
    workspace.list_files()
    hashed = workspace.hashed_count
    target = many / "src" / "m07.py"
    if change == "touch":
        os.utime(target)
    elif change == "rewrite":
        target.write_text("value = 'seven'\n")
    else:
        (many / "src" / "tmp").write_text("value = 7\n")
        os.replace(many / "src" / "tmp", target)
    entries = {e.path: e for e in workspace.list_files()}
    assert workspace.hashed_count == hashed + 1
    assert entries["src/m07.py"].sha256 == hashlib.sha256(target.read_bytes()).hexdigest()


def test_freshly_written_files_are_cached_too(root: Path, host: PluginHost) -> None:
    """A file written a moment ago is hashed after its time tick passed, then cached."""
    (root / "fresh.txt").write_text("just now\n")
    workspace = TaskWorkspace(root, host=host)
    workspace.list_files()
    hashed = workspace.hashed_count
    workspace.list_files()
    assert workspace.hashed_count == hashed


def test_stamp_digest_matches_the_bytes(many: Path, host: PluginHost) -> None:
    """stamp_digest takes a FileStat or an os.stat_result and returns the sha256 hex."""
    workspace = TaskWorkspace(many, host=host)
    path = many / "notes.txt"
    expected = hashlib.sha256(path.read_bytes()).hexdigest()
    assert workspace.stamp_digest("notes.txt", os.stat(path)) == expected
    assert workspace.stamp_digest("notes.txt", FileStat.of("notes.txt", os.stat(path))) == expected
    assert workspace.hashed_count == 1


def test_a_stale_stamp_never_returns_a_stale_digest(many: Path, host: PluginHost) -> None:
    """A stamp taken before a change still yields the digest of the current bytes."""
    workspace = TaskWorkspace(many, host=host)
    path = many / "notes.txt"
    old_stat = os.stat(path)
    workspace.stamp_digest("notes.txt", old_stat)
    path.write_text("changed and longer\n")
    age(path)
    current = hashlib.sha256(path.read_bytes()).hexdigest()
    assert workspace.stamp_digest("notes.txt", os.stat(path)) == current


@pytest.mark.parametrize(
    ("mtime_ns", "now_ns", "wait"),
    [
        (10_000_000_123, 10_000_000_123, RACY_WINDOW_NS),
        (10_000_000_123, 10_010_000_123, RACY_WINDOW_NS - 10_000_000),
        (10_000_000_123, 10_000_000_123 + RACY_WINDOW_NS, 0),
        (10_000_000_123, 99_000_000_000, 0),
        (10_000_000_000, 10_500_000_000, COARSE_RACY_WINDOW_NS - 500_000_000),
        (10_000_000_000, 13_000_000_000, 0),
        (90_000_000_123, 10_000_000_000, 0),
    ],
)
def test_racy_stamps_wait_for_the_tick(mtime_ns: int, now_ns: int, wait: int) -> None:
    """A file modified within one time tick is hashed only after the tick; far-future never."""
    assert racy_wait_ns(mtime_ns, now_ns) == wait


def test_scans_write_in_one_transaction(many: Path, host: PluginHost) -> None:
    """Rows written during a listing become visible together, at its end."""
    workspace = TaskWorkspace(many, host=host)
    db = workspace.derived_dir / "workspace" / "digests.db"
    with workspace.digest_batch():
        for st in workspace.iter_entries():
            workspace.stamp_digest(st.path, st)
        with sqlite3.connect(db) as other:
            assert other.execute("SELECT COUNT(*) FROM digests").fetchone() == (0,)
    with sqlite3.connect(db) as other:
        assert other.execute("SELECT COUNT(*) FROM digests").fetchone() == (23,)
    other.close()


def test_deleted_files_are_forgotten_after_a_full_listing(many: Path, host: PluginHost) -> None:
    """A whole listing drops rows of files that are gone (and keeps hidden ones it skipped)."""
    workspace = TaskWorkspace(many, host=host)
    workspace.list_files(include_hidden=True)
    (many / "src" / "m01.py").unlink()
    workspace.list_files()
    cache = DigestCache(workspace.derived_dir / "workspace" / "digests.db")
    assert len(cache) == 22
    assert cache.lookup(".env", FileStat.of(".env", os.stat(many / ".env")).stamp) is not None
    cache.close()


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty-header"])
def test_damaged_database_is_rebuilt(many: Path, host: PluginHost, damage: str) -> None:
    """A truncated or garbage digests.db is detected, deleted and rebuilt without warnings."""
    workspace = TaskWorkspace(many, host=host)
    for n in range(300):
        (many / f"extra{n:03}.txt").write_text("x" * n)
    age(*many.glob("extra*.txt"))
    expected = workspace.list_files()
    workspace.close()
    db = workspace.derived_dir / "workspace" / "digests.db"
    data = db.read_bytes()
    assert not (workspace.derived_dir / "workspace" / "digests.db-wal").exists()
    if damage == "truncate":
        db.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        db.write_bytes(b"not a database at all " * 200)
    else:
        db.write_bytes(b"\x00" * 100 + data[100:])
    cache = DigestCache(db)
    assert cache.recovered
    assert len(cache) == 0
    cache.close()
    db.write_bytes(data[: len(data) // 2] if damage == "truncate" else b"garbage" * 500)
    again = TaskWorkspace(many, host=host)
    assert again.list_files() == expected
    assert again.hashed_count == len(expected)


def test_memory_cache_and_wide_inodes(tmp_path: Path) -> None:
    """Without a path the cache lives in memory; 64-bit inode numbers round-trip."""
    cache = DigestCache(None)
    stamp = (10, 1_000_000_123, (1 << 64) - 5, 2_000_000_456)
    cache.store("a.txt", stamp, "f" * 64)
    assert cache.lookup("a.txt", stamp) == "f" * 64
    assert cache.lookup("a.txt", (11, *stamp[1:])) is None
    assert cache.lookup("b.txt", stamp) is None
    cache.close()


def test_undecodable_file_names_are_cached(root: Path, host: PluginHost) -> None:
    """A file name that is not UTF-8 is stored without error."""
    name = os.fsdecode(b"caf\xe9.txt")
    (root / name).write_text("bytes name\n")
    age(root / name)
    workspace = TaskWorkspace(root, host=host)
    workspace.list_files()
    hashed = workspace.hashed_count
    assert name in {e.path for e in workspace.list_files()}
    assert workspace.hashed_count == hashed
