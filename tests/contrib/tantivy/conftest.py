"""Fixtures of the tantivy tests: a small corpus with English and CJK documents."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from taskctx_tantivy import TantivyPartition, TantivyProvider

from taskctx.protocols import IndexDocument, PartitionKey

KEY = PartitionKey(binding_id="b", source_identity="test:tantivy", provider="tantivy")
CORPUS = {
    "notes/upload.md": ("Upload timeouts", "The nightly upload times out after thirty seconds."),
    "notes/proxy.md": ("Proxy", "The proxy closes idle connections; uploads then fail."),
    "notes/garden.md": ("Garden", "Tomatoes and basil grow well in the sunny corner."),
    "notes/retry.md": ("Retries", "Retries of the upload service back off exponentially."),
    "zh/说明.md": ("说明", "上传服务在重建索引时会超时。"),
    "ja/猫.md": ("猫", "吾輩は猫である。名前はまだ無い。"),
}


def doc(doc_id: str, version: str = "1", text: str | None = None) -> IndexDocument:
    """A document of CORPUS (or with ``text`` instead of its own)."""
    title, body = CORPUS[doc_id]
    return IndexDocument(
        doc_id=doc_id, path=doc_id, title=title, text=body if text is None else text,
        content_version=version,
    )  # fmt: skip


@pytest.fixture
def partition(tmp_path: Path) -> Iterator[TantivyPartition]:
    """A partition on disk holding CORPUS."""
    opened = TantivyProvider().open_partition(KEY, tmp_path)
    opened.apply([doc(doc_id) for doc_id in CORPUS], [])
    yield opened
    opened.close()
