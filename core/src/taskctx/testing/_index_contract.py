"""IndexProviderContract: the rules every IndexProvider keeps, as a pytest base class."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from taskctx.codes import CoverageReason
from taskctx.hookspecs import hookimpl
from taskctx.plugins import PluginHost
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
_EMPTY_QUERIES = ("", "   ", "!!!", "--- ...", "\x00")


def _document(
    doc_id: str, version: str = "v1", body: str | None = None, *, with_text: bool = True
) -> IndexDocument:
    title, text = _CORPUS[doc_id]
    return IndexDocument(
        doc_id=doc_id,
        path=doc_id,
        title=title,
        text=(body or text) if with_text else None,
        content_version=version,
    )


def _ids(partition: IndexPartition, query: str) -> list[str]:
    return [hit.doc_id for hit in partition.search(query, None, None).hits]


class IndexProviderContract:
    """The rules every IndexProvider keeps. Provide a ``provider`` fixture.

    Set ``persistent = False`` on the subclass for providers that keep nothing on disk
    and ``ranks = False`` for structural providers (no relevance ranking)::

        class TestMyProvider(IndexProviderContract):
            @pytest.fixture
            def provider(self) -> IndexProvider:
                return MyProvider()

    Set ``covers`` to the provider's name (``covers = "fts"``): the kit then checks the
    fixture's provider has that name, and a meta-test can find which providers are tested.
    """

    persistent = True
    ranks = True
    covers: str | None = None

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

    def test_covers_the_declared_provider(self, provider: IndexProvider) -> None:
        """A subclass that declares ``covers`` tests the provider of exactly that name."""
        if self.covers is None:
            pytest.skip("the subclass declares no `covers` provider name")
        assert provider.name == self.covers

    def test_registers_on_a_host(self, provider: IndexProvider) -> None:
        """The provider passes the host's registration checks (a known kind, a bool
        ``needs_text``, a callable ``open_partition``) and is found by its name."""

        class Plugin:
            @hookimpl
            def register_index_providers(self, register: Callable[[Any], None]) -> None:
                register(provider)

        host = PluginHost(allow=[], load_entrypoints=False)
        builtin = host.index_providers().get(provider.name)
        if builtin is not None:  # the name is taken by the kernel's built-ins: is it this one?
            assert type(builtin) is type(provider), f"{provider.name!r} is a built-in's name"
            return
        host.register(Plugin(), name="contract")
        record = host.plugins()[-1]
        assert (record.status, record.error) == ("loaded", None)
        assert host.index_provider(provider.name) is provider

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

    def test_scores_are_in_rank_order(self, partition: IndexPartition) -> None:
        """Hits come best first: finite float scores that never increase down the list."""
        for query in ("upload", "upload proxy", "tomatoes"):
            scores = [hit.score for hit in partition.search(query, None, None).hits]
            assert all(isinstance(s, float) and math.isfinite(s) for s in scores), scores
            assert scores == sorted(scores, reverse=True), f"{query!r}: {scores}"

    def test_no_limit_returns_every_match(self, partition: IndexPartition) -> None:
        """``limit=None`` returns all matches: as many hits as ``considered`` counts."""
        for query in ("upload", "proxy", "tomatoes basil"):
            result = partition.search(query, None, None)
            if result.considered is not None:
                assert len(result.hits) == result.considered, query

    def test_restriction_is_honoured(self, partition: IndexPartition) -> None:
        """A search restricted to some doc ids returns none of the others."""
        allowed = ["notes/proxy.md", "src/retry.py"]
        result = partition.search("upload", allowed, None)
        assert {hit.doc_id for hit in result.hits} <= set(allowed)

    def test_empty_restriction_finds_nothing(self, partition: IndexPartition) -> None:
        """A search restricted to no doc ids at all returns no hits."""
        assert partition.search("upload", [], None).hits == ()

    def test_search_follows_apply(self, partition: IndexPartition) -> None:
        """A deleted document is never a hit again; a ranking provider finds an updated
        document by its new text and no longer by words only its old text had."""
        partition.apply(
            [_document("notes/proxy.md", "v2", "a zebra crossing near the station")],
            ["notes/upload.md"],
        )
        for query in ("upload", "upload timeouts", "zebra", "proxy"):
            assert "notes/upload.md" not in _ids(partition, query), query
        if not self.ranks:
            return
        assert "notes/proxy.md" in _ids(partition, "zebra")
        assert "notes/proxy.md" not in _ids(partition, "idle connections")

    def test_apply_is_idempotent(self, partition: IndexPartition) -> None:
        """Applying the same documents again changes neither the versions nor the hits."""
        versions = dict(partition.indexed_versions())
        before = partition.search("upload proxy", None, None).hits
        partition.apply([_document(doc_id) for doc_id in _CORPUS], [])
        assert dict(partition.indexed_versions()) == versions
        assert partition.search("upload proxy", None, None).hits == before

    def test_applies_in_chunks_equal_one_apply(
        self, provider: IndexProvider, key: PartitionKey, partition: IndexPartition, tmp_path: Path
    ) -> None:
        """A sync may hand its documents over in several ``apply`` calls (bounded chunks,
        the deletes with the first): the partition then holds and ranks as after one."""
        chunked = provider.open_partition(key, tmp_path / "chunked")
        try:
            chunked.apply([_document("notes/garden.md", "v0")], [])
            doc_ids = list(_CORPUS)
            chunked.apply([_document(doc_ids[0])], ["notes/garden.md"])
            for doc_id in doc_ids[1:]:
                chunked.apply([_document(doc_id)], [])
            assert dict(chunked.indexed_versions()) == dict(partition.indexed_versions())
            for query in ("upload", "upload proxy", "tomatoes basil"):
                one = partition.search(query, None, None)
                several = chunked.search(query, None, None)
                assert [h.doc_id for h in several.hits] == [h.doc_id for h in one.hits], query
                for a, b in zip(several.hits, one.hits, strict=True):
                    assert math.isclose(a.score, b.score, rel_tol=1e-9, abs_tol=1e-12), query
                assert several.considered == one.considered
        finally:
            chunked.close()

    def test_documents_without_text(
        self, provider: IndexProvider, key: PartitionKey, tmp_path: Path
    ) -> None:
        """A provider that does not need text indexes documents whose text is None (the
        kernel reads no text for it)."""
        if provider.needs_text:
            pytest.skip("the provider needs text")
        partition = provider.open_partition(key, tmp_path / "textless")
        try:
            partition.apply([_document(d, with_text=False) for d in _CORPUS], [])
            assert dict(partition.indexed_versions()) == dict.fromkeys(_CORPUS, "v1")
        finally:
            partition.close()

    def test_opens_in_memory_without_a_directory(
        self, provider: IndexProvider, key: PartitionKey
    ) -> None:
        """``open_partition(key, None)`` works (a source without an identity is indexed in
        memory): it applies, reports versions and searches."""
        partition = provider.open_partition(key.model_copy(update={"profile": "memory"}), None)
        try:
            partition.apply([_document("notes/garden.md", "m1")], [])
            assert dict(partition.indexed_versions()).get("notes/garden.md") == "m1"
            result = partition.search("tomatoes", None, None)
            assert {hit.doc_id for hit in result.hits} <= set(_CORPUS)
            if self.ranks:
                assert "notes/garden.md" in {hit.doc_id for hit in result.hits}
        finally:
            partition.close()

    def test_stats_report_size_facts(self, partition: IndexPartition) -> None:
        """``stats()`` is a mapping keyed by str; a ``documents`` fact is the document count."""
        stats = partition.stats()
        assert isinstance(stats, Mapping)
        assert all(isinstance(k, str) for k in stats)
        if "documents" in stats:
            assert stats["documents"] == len(partition.indexed_versions())

    def test_generation_moves_on_apply(self, partition: IndexPartition) -> None:
        """A partition that offers ``generation()`` moves it whenever it is applied to, so
        other contexts sharing it re-diff before trusting it."""
        generation = getattr(partition, "generation", None)
        if not callable(generation):
            pytest.skip("the partition offers no generation()")
        before = str(generation())
        partition.apply([_document("notes/garden.md", "v9")], [])
        assert str(generation()) != before

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

    @pytest.mark.parametrize("query", _EMPTY_QUERIES)
    def test_unsearchable_queries_say_so(self, partition: IndexPartition, query: str) -> None:
        """A query with nothing to search never raises; a result marked not searchable has
        no hits and the reason ``query_not_searchable``."""
        result = partition.search(query, None, 10)
        if not result.searchable:
            assert result.hits == ()
            assert CoverageReason.QUERY_NOT_SEARCHABLE in result.reasons

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
