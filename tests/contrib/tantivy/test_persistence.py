"""The ``tantivy`` provider on disk: reopened, shared between processes, locked, rebuilt."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from taskctx_tantivy import TantivyIndexError, TantivyLockTimeoutError, TantivyProvider
from taskctx_tantivy.store import DIR_NAME

from .conftest import CORPUS, KEY, doc

_PREAMBLE = """
import sys, time
from pathlib import Path
from taskctx.protocols import IndexDocument, PartitionKey
from taskctx_tantivy import TantivyProvider
KEY = PartitionKey(binding_id="b", source_identity="test:tantivy", provider="tantivy")
folder = Path(sys.argv[1])
"""


Spawn = Callable[[str, Path], "subprocess.Popen[str]"]


@pytest.fixture
def spawn() -> Iterator[Spawn]:
    """Run a script (after _PREAMBLE) in another Python process; killed at teardown."""
    started: list[subprocess.Popen[str]] = []

    def run(script: str, folder: Path) -> subprocess.Popen[str]:
        code = _PREAMBLE + textwrap.dedent(script)
        process = subprocess.Popen(
            [sys.executable, "-c", code, str(folder)], stdout=subprocess.PIPE, text=True
        )
        started.append(process)
        return process

    yield run
    for process in started:
        process.kill()
        process.wait()
        if process.stdout is not None:
            process.stdout.close()


def test_reopen_reuses_the_index(tmp_path: Path) -> None:
    """A new provider (a new process) on the same directory holds the same documents and
    finds them, and a further apply changes only what it names."""
    first = TantivyProvider().open_partition(KEY, tmp_path)
    first.apply([doc(doc_id) for doc_id in CORPUS], [])
    first.close()
    again = TantivyProvider().open_partition(KEY, tmp_path)
    assert again.search("tomatoes", None, 1).hits[0].doc_id == "notes/garden.md"
    assert dict(again.indexed_versions()) == dict.fromkeys(CORPUS, "1")
    assert again.search("tomatoes", None, 1).hits[0].doc_id == "notes/garden.md"
    again.apply([doc("notes/garden.md", "2", "now only roses")], ["ja/猫.md"])
    versions = dict(again.indexed_versions())
    assert versions["notes/garden.md"] == "2"
    assert "ja/猫.md" not in versions
    assert again.search("tomatoes", None, None).hits == ()
    assert (tmp_path / DIR_NAME / "meta.json").is_file()
    again.close()


def test_one_apply_is_one_commit(tmp_path: Path) -> None:
    """An apply of many documents is one commit: one segment, one generation step."""
    opened = TantivyProvider().open_partition(KEY, tmp_path)
    before = opened.generation()
    many = [doc("notes/upload.md").model_copy(update={"doc_id": f"d/{n}"}) for n in range(500)]
    opened.apply(many, [])
    assert opened.stats()["segments"] == 1
    assert opened.stats()["documents"] == 500
    assert opened.generation() != before
    opened.close()


def test_another_process_applying_moves_the_generation(tmp_path: Path, spawn: Spawn) -> None:
    """A commit by another process moves ``generation()`` here, and the next
    ``indexed_versions()`` and searches see its documents."""
    opened = TantivyProvider().open_partition(KEY, tmp_path)
    opened.apply([doc("notes/upload.md")], [])
    seen = opened.generation()
    assert opened.search("basil", None, None).considered == 0
    other = spawn(
        """
        part = TantivyProvider().open_partition(KEY, folder)
        part.apply([IndexDocument(doc_id="far/basil.md", path="far/basil.md",
                                  text="basil from another process", content_version="9")], [])
        """,
        tmp_path,
    )
    assert other.wait(timeout=60) == 0
    assert opened.generation() != seen
    assert dict(opened.indexed_versions()) == {"notes/upload.md": "1", "far/basil.md": "9"}
    assert [h.doc_id for h in opened.search("basil", None, None).hits] == ["far/basil.md"]
    opened.close()


def test_an_apply_waits_for_another_writer_then_fails_naming_the_lock(
    tmp_path: Path, spawn: Spawn
) -> None:
    """While another process holds the writer lock, an apply retries; past its
    ``lock_timeout`` it fails with a message naming the directory, and nothing is lost."""
    TantivyProvider().open_partition(KEY, tmp_path).apply([doc("notes/upload.md")], [])
    holder = spawn(
        """
        from taskctx_tantivy.store import TantivyStore
        store = TantivyStore(folder / "tantivy", lock_timeout=1)
        writer = store.index.writer(heap_size=15_000_000, num_threads=1)
        print("holding", flush=True)
        time.sleep(2.0)
        writer.rollback()
        writer.wait_merging_threads()
        """,
        tmp_path,
    )
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "holding"
    impatient = TantivyProvider(lock_timeout=0.3).open_partition(KEY, tmp_path)
    started = time.monotonic()
    with pytest.raises(TantivyLockTimeoutError, match=r"tantivy.*writer\.lock.*0\.3 s"):
        impatient.apply([doc("notes/proxy.md")], [])
    assert time.monotonic() - started >= 0.3
    patient = TantivyProvider(lock_timeout=30).open_partition(KEY, tmp_path)
    patient.apply([doc("notes/proxy.md")], [])  # waits for the holder to let go
    assert holder.wait(timeout=60) == 0
    assert set(patient.indexed_versions()) == {"notes/upload.md", "notes/proxy.md"}
    impatient.close()
    patient.close()


def test_concurrent_appliers_lose_nothing(tmp_path: Path, spawn: Spawn) -> None:
    """Three processes applying to one index at once take turns: every document lands."""
    TantivyProvider().open_partition(KEY, tmp_path).close()
    workers = [
        spawn(
            f"""
            part = TantivyProvider().open_partition(KEY, folder)
            for n in range(10):
                part.apply([IndexDocument(doc_id=f"w{worker}/{{n}}", path="p",
                                          text="shared words", content_version="1")], [])
            """,
            tmp_path,
        )
        for worker in range(3)
    ]
    assert [w.wait(timeout=120) for w in workers] == [0, 0, 0]
    opened = TantivyProvider().open_partition(KEY, tmp_path)
    assert len(opened.indexed_versions()) == 30
    assert opened.search("shared", None, 0).considered == 30
    opened.close()


@pytest.mark.parametrize("damage", ["garbage", "truncated", "other-schema"])
def test_a_damaged_index_is_rebuilt_empty(tmp_path: Path, damage: str) -> None:
    """An index tantivy cannot open is rebuilt empty, ``recovered`` says why, and the
    next apply fills it."""
    TantivyProvider().open_partition(KEY, tmp_path).apply([doc("notes/upload.md")], [])
    meta = tmp_path / DIR_NAME / "meta.json"
    text = meta.read_text()
    if damage == "garbage":
        meta.write_bytes(b"\x00not json")
    elif damage == "truncated":
        meta.write_text(text[: len(text) // 2])
    else:
        meta.write_text(text.replace('"name": "text"', '"name": "content"'))
    opened = TantivyProvider().open_partition(KEY, tmp_path)
    assert opened.recovered is not None
    assert opened.stats()["recovered"] == opened.recovered
    assert dict(opened.indexed_versions()) == {}
    opened.apply([doc("notes/proxy.md")], [])
    assert [h.doc_id for h in opened.search("proxy", None, None).hits] == ["notes/proxy.md"]
    opened.close()


def test_stats_report_the_directory(tmp_path: Path) -> None:
    """stats(): documents, segments, bytes on disk, the path and the last apply's time."""
    opened = TantivyProvider().open_partition(KEY, tmp_path)
    opened.apply([doc(doc_id) for doc_id in CORPUS], [])
    stats = opened.stats()
    assert stats["documents"] == len(CORPUS)
    assert stats["bytes_on_disk"] > 0
    assert stats["path"] == str(tmp_path / DIR_NAME)
    assert stats["last_apply_seconds"] is not None
    assert stats["recovered"] is None
    opened.close()
    with pytest.raises(TantivyIndexError, match="closed"):
        opened.search("upload", None, 1)
