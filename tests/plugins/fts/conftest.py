"""Fixtures of the fts tests: partitions in memory and on disk, and a document factory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from taskctx_fts import FtsPartition, FtsProvider

from taskctx.protocols import IndexDocument, PartitionKey

KEY = PartitionKey(binding_id="b", source_identity="test:fts", provider="fts")


def doc(
    doc_id: str, text: str, *, title: str | None = None, version: str = "1", path: str = ""
) -> IndexDocument:
    """An IndexDocument whose path defaults to its id."""
    return IndexDocument(
        doc_id=doc_id, path=path or doc_id, title=title, text=text, content_version=version
    )


def ids(partition: FtsPartition, query: str, limit: int | None = 10) -> list[str]:
    """The doc ids ``query`` ranks, best first."""
    return [hit.doc_id for hit in partition.search(query, None, limit).hits]


@pytest.fixture
def memory() -> Iterator[FtsPartition]:
    """An in-memory partition."""
    partition = FtsProvider().open_partition(KEY, None)
    yield partition
    partition.close()


@pytest.fixture
def index_dir(tmp_path: Path) -> Path:
    """A partition directory, as the kernel makes one under the state dir."""
    directory = tmp_path / "index" / KEY.slug()
    directory.mkdir(parents=True)
    return directory


@pytest.fixture
def disk(index_dir: Path) -> Iterator[FtsPartition]:
    """A partition persisted in ``index_dir``."""
    partition = FtsProvider().open_partition(KEY, index_dir)
    yield partition
    partition.close()
