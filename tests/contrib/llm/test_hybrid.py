"""``hybrid``: fts and the vector provider fused by reciprocal rank fusion, through a
TaskContext; the vector member degrading to lexical when its model fails."""

from __future__ import annotations

from pathlib import Path

import pytest
from taskctx_fts import FtsProvider
from taskctx_llm.embedding import ENV_VAR, EmbeddingFailedError, EmbeddingModelNotConfiguredError
from taskctx_llm.hybrid import hybrid_provider
from taskctx_llm.vector import LlmVectorProvider

from taskctx import ContextBudget, ContextPackage, PluginHost, TaskContext
from taskctx.fusion import RRF_K, FusedPartition, FusedProvider
from taskctx.model import CoverageOutcome, Enumeration
from taskctx.partition import doc_id_of
from taskctx.protocols import IndexProvider, PartitionKey
from taskctx.testing import IndexProviderContract, MemorySource

from .hash_embeddings import HASH_MODEL, HashEmbeddings, collisions

ITEMS = {
    "notes/hamlet.md": "Hamlet, Prince of Denmark: a tragedy.",
    # every word of the line is an English stop word to fts: only the vector member sees it
    "notes/soliloquy.md": "To be, or not to be, that is the question.",
    "notes/upload.md": "The nightly upload times out after thirty seconds.",
    # "uploads" is "upload" to fts (stemmed), another word to the hash model
    "notes/uploads.md": "Many uploads failed yesterday.",
    "notes/garden.md": "Tomatoes and basil grow in the sunny corner.",
}
HAMLET = "to be or not to be hamlet"
BUDGET = ContextBudget(max_chars=4000, max_blocks=5)


def _context(
    tmp_path: Path, provider: IndexProvider | str, host: PluginHost | None = None
) -> TaskContext:
    ctx = TaskContext("hybrid-task", host=host or PluginHost(allow=[]), state_dir=tmp_path)
    ctx.configure_index(provider)
    ctx.attach(MemorySource(dict(ITEMS), identity="test:hybrid-items"), binding_id="mem")
    return ctx


def _read(ctx: TaskContext, query: str) -> ContextPackage:
    return ctx.reader(consumer="agent", budget=BUDGET).read(query)


def _paths(package: ContextPackage) -> list[str]:
    return [block.ref.path for block in package.blocks]


@pytest.fixture
def hybrid(hash_model: type[HashEmbeddings]) -> FusedProvider:
    """fts and the vector provider on the hash model, fused."""
    return hybrid_provider(LlmVectorProvider(HASH_MODEL))


class TestHybridContract(IndexProviderContract):
    """The conformance kit of taskctx.testing, run on the hybrid (fts + hash vectors)."""

    covers = "hybrid"

    @pytest.fixture
    def provider(self, hybrid: FusedProvider) -> IndexProvider:
        """The provider under test."""
        return hybrid


def test_the_corpus_hashes_without_collisions() -> None:
    """No two words of the items and queries share a bucket of the hash model."""
    assert collisions([*ITEMS, *ITEMS.values(), HAMLET, "upload"]) == {}


def test_hybrid_provider_is_fts_and_vector_with_vector_optional(
    hybrid: FusedProvider,
) -> None:
    """The hybrid fuses fts (by default) and the vector member, which alone may fail."""
    assert hybrid.name == "hybrid"
    assert [p.name for p in hybrid.providers] == ["fts", "vector"]
    assert isinstance(hybrid.providers[0], FtsProvider)
    assert (hybrid.optional, hybrid.degrade, hybrid.kind) == (frozenset({"vector"}), True, "hybrid")
    assert HASH_MODEL in hybrid.version  # another model: another partition
    named = hybrid_provider(LlmVectorProvider(HASH_MODEL, name="vec"), FtsProvider(), name="h2")
    assert (named.name, named.optional) == ("h2", frozenset({"vec"}))


def test_the_hybrid_finds_what_only_the_vector_member_finds(
    hybrid: FusedProvider, tmp_path: Path
) -> None:
    """A line whose words are all stop words to fts is found through its embedding; the
    item both members find ranks first (RRF rewards agreement)."""
    lexical = _read(_context(tmp_path / "fts", FtsProvider()), HAMLET)
    assert _paths(lexical) == ["notes/hamlet.md"]
    package = _read(_context(tmp_path / "hybrid", hybrid), HAMLET)
    assert _paths(package) == ["notes/hamlet.md", "notes/soliloquy.md"]
    coverage = package.source_coverage["mem"]
    assert (coverage.enumeration, coverage.outcome) == (Enumeration.RANKED, CoverageOutcome.MATCHED)
    assert (coverage.considered, coverage.delivered, coverage.omitted) == (2, 2, 0)
    assert not package.diagnostics


def test_rrf_ranks_items_found_by_either_member(hybrid: FusedProvider, tmp_path: Path) -> None:
    """fts finds both upload notes (stemming; the short plural one first), the hash model
    only the exact word: the fused ranking holds both, the one both found first, each
    scored ``sum(1 / (k + rank))`` over the members that found it."""
    ctx = _context(tmp_path, hybrid)
    ctx.sync_index()
    partition = ctx.partition_state(ctx.bindings["mem"]).partition
    result = partition.search("upload", None, None)
    ranked = [doc_id_of(path, None) for path in ("notes/upload.md", "notes/uploads.md")]
    assert [h.doc_id for h in result.hits] == ranked
    fused = ctx.partition_state(ctx.bindings["mem"]).partition
    assert isinstance(fused, FusedPartition)
    lexical = fused.members[0][1]
    assert [h.doc_id for h in lexical.search("upload", None, None).hits] == ranked[::-1]
    assert result.hits[0].score == pytest.approx(1 / (RRF_K + 2) + 1 / (RRF_K + 1))
    assert result.hits[1].score == pytest.approx(1 / (RRF_K + 1))
    assert result.considered == 2
    assert _paths(_read(ctx, "upload")) == ["notes/upload.md", "notes/uploads.md"]
    ctx.index.close()


def test_a_failing_vector_search_degrades_to_lexical_with_a_diagnostic(
    hybrid: FusedProvider, hash_model: type[HashEmbeddings], tmp_path: Path
) -> None:
    """The model failing at search time drops the vector member from that search: fts
    ranks alone and the package says why, naming the model."""
    ctx = _context(tmp_path, hybrid)
    ctx.sync_index()
    hash_model.failing = "embedding service unreachable"
    package = _read(ctx, HAMLET)
    assert _paths(package) == ["notes/hamlet.md"]
    coverage = package.source_coverage["mem"]
    assert (coverage.outcome, coverage.considered) == (CoverageOutcome.MATCHED, 1)
    (diagnostic,) = package.diagnostics
    assert diagnostic.code == "index_degraded"
    assert "'vector'" in diagnostic.message
    assert HASH_MODEL in diagnostic.message
    assert "embedding service unreachable" in diagnostic.message
    ctx.index.close()


def test_without_the_degrade_policy_the_search_fails(
    hash_model: type[HashEmbeddings], tmp_path: Path
) -> None:
    """``degrade=False``: the failing member fails the search (the partition raises the
    named error; the reader reports the binding unavailable, never a silent lexical-only)."""
    vector = LlmVectorProvider(HASH_MODEL)
    strict = FusedProvider(name="hybrid", providers=(FtsProvider(), vector), degrade=False)
    ctx = _context(tmp_path, strict)
    ctx.sync_index()
    hash_model.failing = "embedding service unreachable"
    partition = ctx.partition_state(ctx.bindings["mem"]).partition
    with pytest.raises(EmbeddingFailedError, match=HASH_MODEL):
        partition.search(HAMLET, None, None)
    package = _read(ctx, HAMLET)
    assert package.source_coverage["mem"].outcome is CoverageOutcome.UNAVAILABLE
    assert package.blocks == ()
    assert "embedding service unreachable" in package.diagnostics[0].message
    ctx.index.close()


def test_a_failing_model_during_sync_makes_the_binding_unavailable_until_it_recovers(
    hybrid: FusedProvider, hash_model: type[HashEmbeddings], tmp_path: Path
) -> None:
    """An apply goes to both members and fails when the vector member fails (the indexes
    stay aligned): that read reports the binding unavailable, naming the model; the next
    read syncs again and embeds each item once."""
    ctx = _context(tmp_path, hybrid)
    hash_model.failing = "embedding service unreachable"
    package = _read(ctx, "upload")
    coverage = package.source_coverage["mem"]
    assert coverage.outcome is CoverageOutcome.UNAVAILABLE
    (diagnostic,) = package.diagnostics
    assert diagnostic.code == "source_unavailable"
    assert HASH_MODEL in diagnostic.message
    assert "embedding service unreachable" in diagnostic.message
    hash_model.failing = None
    package = _read(ctx, "upload")
    assert _paths(package) == ["notes/upload.md", "notes/uploads.md"]
    assert len([t for t in hash_model.embedded if t != "upload"]) == len(ITEMS)
    ctx.index.close()


def test_the_hybrid_keeps_each_member_in_its_own_folder(
    hybrid: FusedProvider, hash_model: type[HashEmbeddings], tmp_path: Path
) -> None:
    """fts and vectors live side by side in the hybrid's partition; a second context on
    the same state dir embeds nothing again."""
    first = _context(tmp_path, hybrid)
    first.sync_index()
    first.index.close()
    assert len(list(tmp_path.rglob("fts/fts.db"))) == 1
    assert len(list(tmp_path.rglob("vector/vectors.db"))) == 1
    hash_model.reset()
    second = _context(tmp_path, hybrid_provider(LlmVectorProvider(HASH_MODEL)))
    assert _paths(_read(second, HAMLET)) == ["notes/hamlet.md", "notes/soliloquy.md"]
    assert hash_model.embedded == [HAMLET]
    second.index.close()


def test_an_unconfigured_model_fails_the_read_loudly(tmp_path: Path) -> None:
    """With no embedding model configured anywhere, the hybrid cannot open its vector
    member: a configuration error, raised naming how to configure one (not degraded)."""
    ctx = _context(tmp_path, hybrid_provider(LlmVectorProvider()))
    with pytest.raises(EmbeddingModelNotConfiguredError, match=ENV_VAR):
        _read(ctx, "upload")


def test_the_entry_point_registers_vector_and_hybrid(
    hash_model: type[HashEmbeddings], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``taskctx-llm`` registers ``vector`` and ``hybrid`` (fts stays the default lexical
    provider); ``configure_index("hybrid")`` uses the model the environment names."""
    host = PluginHost(allow=["taskctx-fts", "taskctx-llm"], strict=True)
    vector = host.index_provider("vector")
    assert isinstance(vector, LlmVectorProvider)
    hybrid = host.index_provider("hybrid")
    assert isinstance(hybrid, FusedProvider)
    assert hybrid.providers[1] is vector
    default = host.default_lexical_provider()
    assert default is not None
    assert default.name == "fts"
    monkeypatch.setenv(ENV_VAR, HASH_MODEL)
    ctx = _context(tmp_path, "hybrid", host)
    assert _paths(_read(ctx, HAMLET)) == ["notes/hamlet.md", "notes/soliloquy.md"]
    key = PartitionKey(binding_id="x", source_identity="y", provider="vector")
    opened = vector.open_partition(key, None)
    assert opened.model_id == HASH_MODEL
    opened.close()
    ctx.index.close()
