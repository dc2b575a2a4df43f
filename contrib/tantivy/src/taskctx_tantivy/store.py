"""The tantivy index of one partition: its schema, opening it (and rebuilding a damaged
one), the writer taken under tantivy's cross-process lock, and the commit state.

Layout
    ``<directory>/tantivy/`` holds tantivy's own files (``meta.json``, the segments and
    the lock files); without a directory the index lives in memory. Fields: ``doc_id``
    and ``version`` (stored, untokenized), ``key`` (a 63-bit digest of the doc id in a
    fast field: hits are named by one columnar read, not one stored-document read each)
    and ``text``: the fts tokens of the title
    (title plus path) repeated ``title_weight`` times, then those of the body, joined by
    spaces and split on whitespace, with term frequencies and no positions (ranking needs
    no phrase queries).

Writing
    One writer per index at a time, across processes: tantivy takes
    ``.tantivy-writer.lock`` when a writer is made and fails at once when another holds
    it. :meth:`TantivyStore.writing` retries every ``LOCK_RETRY_SECONDS`` until the
    store's ``lock_timeout`` and then raises :class:`TantivyLockTimeoutError` naming the
    directory. The writer is committed once when the block ends (rolled back if it
    raises), its merges are waited for, and the lock is released before it returns: an
    idle partition holds no lock.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import tantivy

from taskctx.errors import TaskCtxError

__all__ = [
    "DIR_NAME",
    "FORMAT_VERSION",
    "LOCK_RETRY_SECONDS",
    "TantivyIndexError",
    "TantivyLockTimeoutError",
    "TantivyStore",
    "build_schema",
    "key_of",
]

FORMAT_VERSION = "1"
"""Bump when the fields change: it is part of the provider version."""
DIR_NAME = "tantivy"
LOCK_RETRY_SECONDS = 0.05
_HEAP_PER_THREAD = 32_000_000  # tantivy refuses less than 15 MB per indexing thread
_PARALLEL_FROM = 2_000
"""An apply of at least this many documents indexes on every core; smaller ones on one
(each indexing thread writes its own segment, which a small apply gains nothing from)."""


class TantivyIndexError(TaskCtxError):
    """A tantivy index failed; the message names its directory."""


class TantivyLockTimeoutError(TantivyIndexError):
    """Another writer (in this or another process) held the index's lock too long."""


def key_of(doc_id: str) -> int:
    """The doc id's 63-bit digest (tantivy reads larger Python ints as floats)."""
    digest = hashlib.blake2b(doc_id.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1


def build_schema() -> tantivy.Schema:
    """The fields of every partition's index."""
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("doc_id", stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("version", stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_unsigned_field("key", fast=True)
    builder.add_text_field("text", tokenizer_name="whitespace", index_option="freq")
    return builder.build()


class TantivyStore:
    """One partition's index: opened (or rebuilt empty when it cannot be opened), written
    under the cross-process lock, and its state told by ``meta.json``."""

    __slots__ = (
        "_index",
        "_memory_commits",
        "_meta",
        "_meta_seen",
        "lock_timeout",
        "path",
        "recovered",
        "schema",
    )

    def __init__(self, path: Path | None, *, lock_timeout: float) -> None:
        self.path = path
        self.lock_timeout = lock_timeout
        self.schema = build_schema()
        self.recovered: str | None = None
        self._memory_commits = 0
        self._meta_seen: tuple[tuple[int, int, int], str] | None = None
        self._meta = None if path is None else os.path.join(path, "meta.json")
        self._index: tantivy.Index | None = self._open()

    def _open(self) -> tantivy.Index:
        if self.path is None:
            return tantivy.Index(self.schema)
        self.path.mkdir(parents=True, exist_ok=True)
        try:
            return tantivy.Index(self.schema, path=str(self.path), reuse=True)
        except ValueError as exc:
            # a damaged meta.json, another schema, a format this tantivy cannot read: the
            # index is derived data, so it is rebuilt empty and the next sync refills it
            self.recovered = f"{type(exc).__name__}: {exc}"
            shutil.rmtree(self.path)
            self.path.mkdir(parents=True)
            return tantivy.Index(self.schema, path=str(self.path), reuse=False)

    @property
    def index(self) -> tantivy.Index:
        """The open index; ``TantivyIndexError`` once closed."""
        if self._index is None:
            raise TantivyIndexError(f"tantivy index {self.where}: the partition is closed")
        return self._index

    @property
    def where(self) -> str:
        """The directory, for messages (``memory`` without one)."""
        return "in memory" if self.path is None else str(self.path)

    def state(self) -> str:
        """Changes with every commit (and merge) by anyone: a digest of ``meta.json``,
        read again only when its inode, size or mtime moved (a commit replaces it)."""
        if self._meta is None:
            return f"memory:{self._memory_commits}"
        try:
            status = os.stat(self._meta)
        except FileNotFoundError:
            return "empty"
        stamp = (status.st_ino, status.st_size, status.st_mtime_ns)
        if self._meta_seen is None or self._meta_seen[0] != stamp:
            digest = hashlib.blake2b(Path(self._meta).read_bytes(), digest_size=12).hexdigest()
            self._meta_seen = (stamp, digest)
        return self._meta_seen[1]

    @contextmanager
    def writing(self, documents: int) -> Iterator[tantivy.IndexWriter]:
        """A writer under the index lock; committed once when the block ends."""
        threads = 1 if documents < _PARALLEL_FROM else max(1, min(4, os.cpu_count() or 1))
        writer = self._writer(threads)
        try:
            yield writer
            writer.commit()
        except BaseException:
            writer.rollback()
            raise
        finally:
            writer.wait_merging_threads()  # finishes merges and releases the lock
        self._memory_commits += 1
        self.index.reload()

    def _writer(self, threads: int) -> tantivy.IndexWriter:
        deadline = time.monotonic() + self.lock_timeout
        while True:
            try:
                return self.index.writer(heap_size=_HEAP_PER_THREAD * threads, num_threads=threads)
            except ValueError as exc:
                if "LockBusy" not in str(exc):
                    raise TantivyIndexError(f"tantivy index {self.where}: {exc}") from None
            if time.monotonic() >= deadline:
                raise TantivyLockTimeoutError(
                    f"tantivy index {self.where}: another writer held its lock "
                    f"(.tantivy-writer.lock) for more than {self.lock_timeout:g} s"
                )
            time.sleep(LOCK_RETRY_SECONDS)

    def documents(self) -> dict[str, str]:
        """doc_id -> version of every live document (read from the stored fields)."""
        searcher = self.index.searcher()
        count = searcher.num_docs
        if count == 0:
            return {}
        found: dict[str, str] = {}
        for _, address in searcher.search(tantivy.Query.all_query(), count, count=False).hits:
            stored = searcher.doc(address)
            found[str(stored.get_first("doc_id"))] = str(stored.get_first("version"))
        return found

    def bytes_on_disk(self) -> int:
        """The size of the index directory's files (0 in memory)."""
        if self.path is None:
            return 0
        return sum(entry.stat().st_size for entry in self.path.iterdir() if entry.is_file())

    def close(self) -> None:
        """Drop the index: tantivy unmaps its files when the object goes."""
        self._index = None
