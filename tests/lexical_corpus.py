"""The small corpora the lexical provider tests share (fts, postgres, tantivy): English
items with stems to find and a Chinese and a Japanese item for CJK queries."""

from __future__ import annotations

from taskctx.protocols import IndexDocument

__all__ = ["CORPUS", "ITEMS", "corpus_doc"]

CORPUS = {
    "notes/upload.md": ("Upload timeouts", "The nightly upload times out after thirty seconds."),
    "notes/proxy.md": ("Proxy", "The proxy closes idle connections; uploads then fail."),
    "notes/garden.md": ("Garden", "Tomatoes and basil grow well in the sunny corner."),
    "notes/retry.md": ("Retries", "Retries of the upload service back off exponentially."),
    "zh/说明.md": ("说明", "上传服务在重建索引时会超时。"),
    "ja/猫.md": ("猫", "吾輩は猫である。名前はまだ無い。"),
}
"""doc id -> (title, text), for tests on a partition."""

ITEMS = {
    "notes/upload.md": "The upload times out after 30 s when the index is rebuilt.",
    "notes/retries.md": "Retries of the upload service back off exponentially.",
    "notes/garden.md": "Tomatoes need sun and water.",
    "src/timeout_config.py": "UPLOAD_TIMEOUT = 30  # seconds before an upload times out",
    "zh/说明.md": "上传服务在重建索引时会超时。",
}
"""path -> text, for tests through a TaskContext (a ``MemorySource``)."""


def corpus_doc(doc_id: str, version: str = "1", text: str | None = None) -> IndexDocument:
    """A document of CORPUS (or with ``text`` instead of its own)."""
    title, body = CORPUS[doc_id]
    return IndexDocument(
        doc_id=doc_id, path=doc_id, title=title, text=body if text is None else text,
        content_version=version,
    )  # fmt: skip
