"""taskctx-fts: the default lexical index provider, on SQLite FTS5 with BM25.

Modules: ``tokenize`` (the one tokenizer for documents and queries), ``schema`` and
``store`` (SQLite), ``terms`` (cached term statistics), ``plan`` (query plan and
scoring), ``provider`` (the IndexProvider), ``plugin`` (the hook).
"""

from __future__ import annotations

from taskctx_fts.provider import PROVIDER_VERSION, FtsPartition, FtsProvider

__all__ = ["PROVIDER_VERSION", "FtsPartition", "FtsProvider"]
