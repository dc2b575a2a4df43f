"""Fixtures of the tantivy tests: a small corpus with English and CJK documents."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from taskctx_tantivy import TantivyPartition, TantivyProvider

from taskctx.protocols import PartitionKey
from tests.lexical_corpus import CORPUS
from tests.lexical_corpus import corpus_doc as doc

__all__ = ["CORPUS", "KEY", "doc"]

KEY = PartitionKey(binding_id="b", source_identity="test:tantivy", provider="tantivy")


@pytest.fixture
def partition(tmp_path: Path) -> Iterator[TantivyPartition]:
    """A partition on disk holding CORPUS."""
    opened = TantivyProvider().open_partition(KEY, tmp_path)
    opened.apply([doc(doc_id) for doc_id in CORPUS], [])
    yield opened
    opened.close()
