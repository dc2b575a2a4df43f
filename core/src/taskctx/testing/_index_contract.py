"""IndexProviderContract: the rules every IndexProvider keeps, as a pytest base class."""

from __future__ import annotations

from pathlib import Path

import pytest

from taskctx.protocols import IndexDocument, IndexPartition, IndexProvider, PartitionKey

__all__ = ["IndexProviderContract"]

_CORPUS = {
    "notes/upload.md": (
        "Upload timeouts",
        "upload timeouts: the nightly upload times out after thirty seconds",
    ),
    "notes/proxy.md": ("Proxy", "the proxy closes idle connections; uploads then fail"),
    "notes/garden.md": ("Garden", "tomatoes and basil grow well in the sunny corner"),
    "src/retry.py": ("retry.py", "def retry_upload(): keep alive while hashing the file"),
}
_NASTY_QUERIES = (
    '"unbalanced',
    "upload NEAR proxy",
    "upload*",
    "^upload",
    "title:upload",
    "(upload OR",
    "upload AND NOT proxy",
    "'; DROP TABLE docs; --",
    "\x00upload",
)


def _document(doc_id: str, version: str = "v1", body: str | None = None) -> IndexDocument:
    title, text = _CORPUS[doc_id]
    return IndexDocument(
        doc_id=doc_id, path=doc_id, title=title, text=body or text, content_version=version
    )


class IndexProviderContract:
    """The rules every IndexProvider keeps. Provide a ``provider`` fixture.

    Set ``persistent = False`` on the subclass for providers that keep nothing on disk
    and ``ranks = False`` for structural providers (no relevance ranking)::

        class TestMyProvider(IndexProviderContract):
            @pytest.fixture
            def provider(self) -> IndexProvider:
                return MyProvider()
    """

    persistent = True
    ranks = True

    @pytest.fixture
    def provider(self) -> IndexProvider:
        """Override: return the provider under test."""
        raise NotImplementedError("subclass IndexProviderContract and define a `provider` fixture")

    @pytest.fixture
    def key(self, provider: IndexProvider) -> PartitionKey:
        """The partition key the kit uses."""
        return PartitionKey(
            binding_id="contract", source_identity="contract:1", provider=provider.name
        )

    @pytest.fixture
    def partition(
        self, provider: IndexProvider, key: PartitionKey, tmp_path: Path
    ) -> IndexPartition:
        """A partition holding the kit's small corpus."""
        partition = provider.open_partition(key, tmp_path)
        partition.apply([_document(doc_id) for doc_id in _CORPUS], [])
        return partition

    def test_names_its_kind(self, provider: IndexProvider) -> None:
        """The provider has a name, a known kind and says whether it needs text."""
        assert isinstance(provider.name, str)
        assert provider.name
        assert provider.kind in ("structural", "lexical", "vector", "hybrid")
        assert isinstance(provider.needs_text, bool)

    def test_versions_follow_apply(self, partition: IndexPartition) -> None:
        """indexed_versions reports exactly what apply stored, updated and deleted."""
        assert dict(partition.indexed_versions()) == dict.fromkeys(_CORPUS, "v1")
        partition.apply([_document("notes/proxy.md", "v2")], ["notes/garden.md"])
        versions = dict(partition.indexed_versions())
        assert versions["notes/proxy.md"] == "v2"
        assert "notes/garden.md" not in versions

    def test_hits_name_indexed_documents_only(self, partition: IndexPartition) -> None:
        """Hits are indexed doc ids, without duplicates, within the limit."""
        result = partition.search("upload", None, 2)
        ids = [hit.doc_id for hit in result.hits]
        assert len(ids) <= 2
        assert len(set(ids)) == len(ids)
        assert set(ids) <= set(_CORPUS)
        if result.considered is not None:
            assert result.considered >= len(ids)

    def test_restriction_is_honoured(self, partition: IndexPartition) -> None:
        """A search restricted to some doc ids returns none of the others."""
        allowed = ["notes/proxy.md", "src/retry.py"]
        result = partition.search("upload", allowed, None)
        assert {hit.doc_id for hit in result.hits} <= set(allowed)

    def test_ranking_puts_matches_first(self, partition: IndexPartition) -> None:
        """A ranking provider ranks a document about the query above one that is not."""
        if not self.ranks:
            pytest.skip("structural provider: no relevance ranking")
        ids = [hit.doc_id for hit in partition.search("upload timeouts", None, None).hits]
        assert ids
        assert ids[0] == "notes/upload.md"
        assert "notes/garden.md" not in ids

    def test_search_is_deterministic(self, partition: IndexPartition) -> None:
        """The same search on the same partition gives the same hits in the same order."""
        assert partition.search("upload proxy", None, None) == partition.search(
            "upload proxy", None, None
        )

    @pytest.mark.parametrize("query", _NASTY_QUERIES)
    def test_query_text_is_literal(self, partition: IndexPartition, query: str) -> None:
        """Query syntax characters never raise: user text is always literal."""
        result = partition.search(query, None, 10)
        assert isinstance(result.searchable, bool)

    def test_reopen_keeps_the_index(
        self,
        provider: IndexProvider,
        key: PartitionKey,
        partition: IndexPartition,
        tmp_path: Path,
    ) -> None:
        """A persistent partition reopened from its directory holds the same versions."""
        if not self.persistent:
            pytest.skip("provider keeps nothing on disk")
        before = dict(partition.indexed_versions())
        partition.close()
        again = provider.open_partition(key, tmp_path)
        try:
            assert dict(again.indexed_versions()) == before
            if self.ranks:
                assert again.search("upload", None, 1).hits
        finally:
            again.close()
