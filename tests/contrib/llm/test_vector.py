"""The ``vector`` provider: what it embeds (and never embeds again), how it ranks, where it
keeps its vectors, which model it uses and how it fails."""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import llm
import pytest
from taskctx_llm.embedding import (
    ENV_VAR,
    EmbeddingFailedError,
    EmbeddingModelNotConfiguredError,
    UnknownEmbeddingModelError,
)
from taskctx_llm.vector import DEFAULT_MIN_SIMILARITY, LlmVectorProvider
from taskctx_llm.vector_partition import LlmVectorPartition
from taskctx_llm.vector_store import DB_NAME, DimensionMismatchError

from taskctx import ContextBudget, PluginHost, TaskContext
from taskctx.codes import CoverageReason
from taskctx.errors import TaskCtxError
from taskctx.model import CoverageOutcome, Enumeration
from taskctx.protocols import IndexDocument, PartitionKey
from taskctx.testing import MemorySource

from .hash_embeddings import HASH_MODEL, SMALL_MODEL, HashEmbeddings, collisions, tokens

ROOT = Path(__file__).resolve().parents[3]
KEY = PartitionKey(binding_id="b", source_identity="test:vector", provider="vector")
TEXTS = {
    "a": "upload timeout upload",
    "b": "upload proxy",
    "c": "proxy closes idle connections",
    "d": "tomatoes basil sunny corner",
    "e": "upload proxy",  # the same text as b
}
ITEMS = {
    "notes/upload.md": "The nightly upload times out after thirty seconds.",
    "notes/proxy.md": "The proxy closes idle connections during an upload.",
    "notes/garden.md": "Tomatoes and basil grow in the sunny corner.",
    "notes/retry.md": "Retries back off exponentially.",
}


def doc(doc_id: str, version: str = "1", text: str | None = None) -> IndexDocument:
    """A document of TEXTS (or with ``text``), titled ``note`` (a word no query has): its
    embedded text is ``note`` and its text, so documents of the same text share a vector."""
    body = TEXTS[doc_id] if text is None else text
    return IndexDocument(
        doc_id=doc_id, path=doc_id, title="note", text=body, content_version=version
    )


def ids(partition: LlmVectorPartition, query: str, doc_ids: list[str] | None = None) -> list[str]:
    """The doc ids a search returns, in order."""
    return [hit.doc_id for hit in partition.search(query, doc_ids, None).hits]


@pytest.fixture
def provider(hash_model: type[HashEmbeddings]) -> LlmVectorProvider:
    """A vector provider on the hash model."""
    return LlmVectorProvider(HASH_MODEL)


@pytest.fixture
def partition(provider: LlmVectorProvider, tmp_path: Path) -> Iterator[LlmVectorPartition]:
    """A partition on disk holding TEXTS."""
    opened = provider.open_partition(KEY, tmp_path)
    opened.apply([doc(d) for d in TEXTS], [])
    yield opened
    opened.close()


def test_the_test_vocabularies_hash_without_collisions() -> None:
    """No two words of the corpora share a bucket, so "no shared word" means cosine 0."""
    from taskctx.testing._index_contract import _CORPUS

    contract = [f"{doc_id} {title} {text}" for doc_id, (title, text) in _CORPUS.items()]
    words = [*TEXTS.values(), *ITEMS, *ITEMS.values(), *contract, "note zebra crossing station"]
    assert collisions(words) == {}
    assert tokens("Retry_upload.md") == ["retry", "upload", "md"]


def test_constructing_the_provider_loads_nothing() -> None:
    """``LlmVectorProvider()`` (what the entry point registers) looks nothing up; its
    version says no model is configured."""
    provider = LlmVectorProvider()
    assert (provider.name, provider.kind, provider.needs_text) == ("vector", "vector", True)
    assert provider.version.endswith("/model-unconfigured")


# -- embedding once -------------------------------------------------------------------------


def _context(state_dir: Path, source: MemorySource, provider: LlmVectorProvider) -> TaskContext:
    ctx = TaskContext("vector-task", host=PluginHost(allow=[]), state_dir=state_dir)
    ctx.configure_index(provider)
    ctx.attach(source, binding_id="mem")
    return ctx


def test_unchanged_items_are_never_embedded_again(
    provider: LlmVectorProvider, hash_model: type[HashEmbeddings], tmp_path: Path
) -> None:
    """Across syncs and a second TaskContext on the same state dir, only a changed item is
    embedded again (one text), and the model sees nothing for the others."""
    source = MemorySource(dict(ITEMS), identity="test:vector-items")
    first = _context(tmp_path, source, provider)
    assert first.sync_index()["mem"].added == len(ITEMS)
    assert len(hash_model.embedded) == len(ITEMS)
    first.sync_index()
    assert len(hash_model.embedded) == len(ITEMS)
    first.index.close()
    second = _context(tmp_path, source, LlmVectorProvider(HASH_MODEL))
    report = second.sync_index()["mem"]
    assert (report.added, report.updated, report.unchanged) == (0, 0, len(ITEMS))
    assert len(hash_model.embedded) == len(ITEMS)
    source.put("notes/garden.md", "Now the garden notes mention the upload too.")
    assert second.sync_index()["mem"].updated == 1
    assert hash_model.embedded[len(ITEMS) :] == [
        "garden.md\nNow the garden notes mention the upload too."
    ]
    second.index.close()


def test_a_new_content_version_of_the_same_text_reuses_the_vector(
    partition: LlmVectorPartition, hash_model: type[HashEmbeddings]
) -> None:
    """An upsert whose embedded text is stored already (same document, new version; or
    another document with the same text) costs no embedding call."""
    assert len(hash_model.embedded) == 4  # b and e share a text: embedded once
    assert partition.stats()["reused_vectors"] == 1
    hash_model.reset()
    partition.apply([doc("a", "2"), doc("f", "1", TEXTS["c"])], [])
    assert hash_model.calls == 0
    assert dict(partition.indexed_versions())["a"] == "2"
    assert partition.stats()["reused_vectors"] == 3
    partition.apply([doc("a", "3", "a brand new text")], [])
    assert hash_model.embedded == ["note\na brand new text"]


# -- ranking --------------------------------------------------------------------------------


def test_considered_is_the_exact_matching_set(partition: LlmVectorPartition) -> None:
    """``considered`` counts every document sharing a direction with the query, the hits
    are exactly those documents (all of them without a limit), best first."""
    result = partition.search("upload", None, None)
    assert result.considered == 3
    assert [h.doc_id for h in result.hits] == ["a", "b", "e"]
    limited = partition.search("upload", None, 1)
    assert (limited.considered, [h.doc_id for h in limited.hits]) == (3, ["a"])
    assert partition.search("zebra", None, None).considered == 0


def test_scores_are_cosine_similarities(partition: LlmVectorPartition) -> None:
    """A score is the cosine of the query's and the document's token counts."""
    # "note\nupload proxy" counts note, upload, proxy once; the query "upload proxy" shares two
    hit = {h.doc_id: h.score for h in partition.search("upload proxy", None, None).hits}
    assert hit["b"] == pytest.approx(2 / math.sqrt(2 * 3), rel=1e-6)
    # "note\nupload timeout upload": note once, upload twice, timeout once
    assert hit["a"] == pytest.approx(2 / math.sqrt(2 * 6), rel=1e-6)
    assert hit["c"] == pytest.approx(1 / math.sqrt(2 * 5), rel=1e-6)


def test_equal_scores_are_ordered_by_doc_id(partition: LlmVectorPartition) -> None:
    """Documents with the same vector tie, and ties are ordered by doc id."""
    partition.apply([doc("a0", text="upload proxy")], [])  # b's and e's text
    hits = partition.search("proxy", None, None).hits
    assert [h.doc_id for h in hits] == ["a0", "b", "e", "c"]
    assert hits[0].score == hits[1].score == hits[2].score > hits[3].score


def test_restriction_to_doc_ids(partition: LlmVectorPartition) -> None:
    """A restricted search ranks and counts only the allowed documents."""
    result = partition.search("upload proxy", ["c", "e", "d", "missing"], None)
    assert [h.doc_id for h in result.hits] == ["e", "c"]
    assert result.considered == 2
    assert partition.search("upload", [], None).hits == ()


def test_min_similarity_cuts_the_matching_set(
    hash_model: type[HashEmbeddings], tmp_path: Path
) -> None:
    """A provider's ``min_similarity`` keeps documents at least that similar only, and
    ``considered`` counts those."""
    assert DEFAULT_MIN_SIMILARITY > 0
    strict = LlmVectorProvider(HASH_MODEL, min_similarity=0.5).open_partition(KEY, tmp_path)
    strict.apply([doc(d) for d in TEXTS], [])
    result = strict.search("upload proxy", None, None)
    assert [h.doc_id for h in result.hits] == ["b", "e", "a"]  # 0.816, 0.816, 0.577
    assert result.considered == 3
    assert all(h.score >= 0.5 for h in result.hits)
    strict.close()
    with pytest.raises(ValueError, match="min_similarity"):
        LlmVectorProvider(HASH_MODEL, min_similarity=2.0)


@pytest.mark.parametrize("query", ["", "   ", "!!!", "--- ...", "\x00", "…?"])
def test_a_query_without_words_is_not_searchable(
    partition: LlmVectorPartition, hash_model: type[HashEmbeddings], query: str
) -> None:
    """No word character: not searchable, said so, and the model is not called."""
    hash_model.reset()
    result = partition.search(query, None, None)
    assert (result.hits, result.considered, result.searchable) == ((), None, False)
    assert result.reasons == (CoverageReason.QUERY_NOT_SEARCHABLE,)
    assert hash_model.calls == 0


def test_query_embeddings_are_cached(
    partition: LlmVectorPartition, hash_model: type[HashEmbeddings]
) -> None:
    """A repeated query is embedded once per partition; another query is embedded."""
    hash_model.reset()
    first = partition.search("upload proxy", None, None)
    assert partition.search("upload proxy", None, 2).hits == first.hits[:2]
    assert hash_model.embedded == ["upload proxy"]
    partition.search("idle proxy", None, None)
    assert hash_model.embedded == ["upload proxy", "idle proxy"]
    stats = partition.stats()
    assert (stats["embedded_queries"], stats["query_cache_hits"]) == (2, 1)


def test_stats(partition: LlmVectorPartition, tmp_path: Path) -> None:
    """Stats give the size, the model, the file and what was embedded or reused."""
    partition.search("upload", None, None)
    stats = partition.stats()
    assert stats["documents"] == len(TEXTS)
    assert stats["dimensions"] == 4096
    assert stats["model_id"] == HASH_MODEL
    assert stats["bytes_on_disk"] > 4 * 4096 * 4  # four distinct vectors
    assert (stats["embedded_documents"], stats["embedded_queries"]) == (4, 1)
    assert stats["embedded_texts"] == 5
    assert stats["reused_vectors"] == 1
    assert stats["last_apply_seconds"] >= 0
    assert stats["path"] == str(tmp_path / DB_NAME)
    assert stats["recovered"] is None


# -- persistence ----------------------------------------------------------------------------


def test_reopen_keeps_vectors_and_ranks_without_embedding_documents(
    partition: LlmVectorPartition, hash_model: type[HashEmbeddings], tmp_path: Path
) -> None:
    """A new provider on the same directory holds the same documents, ranks them the same
    and embeds only the query."""
    before = partition.search("upload proxy", None, None)
    partition.close()
    hash_model.reset()
    again = LlmVectorProvider(HASH_MODEL).open_partition(KEY, tmp_path)
    assert dict(again.indexed_versions()) == dict.fromkeys(TEXTS, "1")
    assert again.search("upload proxy", None, None) == before
    assert hash_model.embedded == ["upload proxy"]
    again.close()


_CHILD = """
import sys
from pathlib import Path
import llm
from tests.contrib.llm.hash_embeddings import HASH_MODEL, HashEmbeddingsPlugin
from taskctx.protocols import IndexDocument, PartitionKey
from taskctx_llm.vector import LlmVectorProvider
llm.pm.register(HashEmbeddingsPlugin())
key = PartitionKey(binding_id="b", source_identity="test:vector", provider="vector")
part = LlmVectorProvider(HASH_MODEL).open_partition(key, Path(sys.argv[1]))
part.apply([IndexDocument(doc_id="far", path="far", text="basil from another process",
                          content_version="9")], ["d"])
part.close()
"""


def test_another_process_applying_moves_the_generation(
    partition: LlmVectorPartition, tmp_path: Path
) -> None:
    """An apply by another process moves ``generation()`` here, and searches see it."""
    seen = partition.generation()
    assert ids(partition, "basil") == ["d"]
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_CHILD), str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert partition.generation() != seen
    assert dict(partition.indexed_versions())["far"] == "9"
    assert ids(partition, "basil") == ["far"]


def test_a_file_of_another_model_is_rebuilt_not_mixed(
    partition: LlmVectorPartition, tmp_path: Path
) -> None:
    """Opening a directory whose vectors came from another model starts it empty and says
    why; vectors of two models never meet in one search."""
    partition.close()
    other = LlmVectorProvider(SMALL_MODEL).open_partition(KEY, tmp_path)
    assert dict(other.indexed_versions()) == {}
    assert HASH_MODEL in str(other.stats()["recovered"])
    other.apply([doc("a")], [])
    assert other.stats()["dimensions"] == 64
    other.close()


def test_a_model_changing_its_dimensions_is_refused(
    partition: LlmVectorPartition, hash_model: type[HashEmbeddings]
) -> None:
    """Vectors of another length than the partition holds fail the apply (and a query of
    another length fails the search) naming the model; nothing is written."""
    model = llm.get_embedding_model(HASH_MODEL)  # type: ignore[no-untyped-call]
    assert isinstance(model, HashEmbeddings)
    model.dimensions = 32
    with pytest.raises(DimensionMismatchError, match=HASH_MODEL):
        partition.apply([doc("z", text="zebra")], [])
    assert "z" not in partition.indexed_versions()
    with pytest.raises(DimensionMismatchError, match="32 dimensions"):
        partition.search("zebra", None, None)


# -- which model ----------------------------------------------------------------------------


def test_no_model_configured_is_a_clear_error(tmp_path: Path) -> None:
    """Without a model id, the environment variable or llm's default, opening a
    partition fails naming every way to configure one."""
    with pytest.raises(EmbeddingModelNotConfiguredError) as raised:
        LlmVectorProvider().open_partition(KEY, tmp_path)
    assert isinstance(raised.value, TaskCtxError)
    assert ENV_VAR in str(raised.value)
    assert "llm embed-models default" in str(raised.value)


def test_an_unknown_model_is_a_clear_error(hash_model: type[HashEmbeddings]) -> None:
    """An id llm does not know fails naming it and the models llm knows."""
    with pytest.raises(UnknownEmbeddingModelError, match="no-such-model") as raised:
        LlmVectorProvider("no-such-model").open_partition(KEY, None)
    assert isinstance(raised.value.__cause__, llm.UnknownModelError)
    assert HASH_MODEL in str(raised.value)


def test_the_model_comes_from_the_environment_or_llms_default(
    hash_model: type[HashEmbeddings], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a model id: ``$TASKCTX_EMBEDDING_MODEL`` first, then llm's default."""
    provider = LlmVectorProvider()
    # llm's default, written in the test's LLM_USER_PATH
    llm.set_default_embedding_model(SMALL_MODEL)  # type: ignore[no-untyped-call]
    for model_id in (SMALL_MODEL, HASH_MODEL):
        assert provider.version.endswith(f"/model-{model_id}")
        opened = provider.open_partition(KEY, None)
        assert opened.model_id == model_id
        opened.close()
        monkeypatch.setenv(ENV_VAR, HASH_MODEL)


def test_another_model_is_another_partition(
    hash_model: type[HashEmbeddings], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The model id is part of the version, hence of the partition key: a context switched
    to another model indexes into another file and embeds everything with that model."""
    monkeypatch.setenv(ENV_VAR, HASH_MODEL)
    source = MemorySource(dict(ITEMS), identity="test:vector-items")
    ctx = _context(tmp_path, source, LlmVectorProvider())
    ctx.sync_index()
    monkeypatch.setenv(ENV_VAR, SMALL_MODEL)
    hash_model.reset()
    assert ctx.sync_index()["mem"].added == len(ITEMS)
    assert len(hash_model.embedded) == len(ITEMS)
    assert len(list(tmp_path.rglob(DB_NAME))) == 2
    ctx.index.close()


# -- failures and the reader ----------------------------------------------------------------


def test_a_failing_model_raises_an_error_naming_it(
    partition: LlmVectorPartition, hash_model: type[HashEmbeddings]
) -> None:
    """The model raising in apply or search is an EmbeddingFailedError naming the model
    and its error; the failed apply wrote nothing."""
    hash_model.failing = "embedding service unreachable"
    generation = partition.generation()
    with pytest.raises(EmbeddingFailedError, match=HASH_MODEL) as raised:
        partition.apply([doc("z", text="zebra")], ["a"])
    assert "ConnectionError: embedding service unreachable" in str(raised.value)
    assert partition.generation() == generation
    assert set(partition.indexed_versions()) == set(TEXTS)
    with pytest.raises(EmbeddingFailedError, match="embedding service unreachable"):
        partition.search("zebra", None, None)


def test_the_reader_ranks_by_vector(provider: LlmVectorProvider, tmp_path: Path) -> None:
    """Through a TaskContext: coverage is ranked, considered the exact matching set, the
    best match first; a failing model makes the binding unavailable, with a diagnostic."""
    source = MemorySource(dict(ITEMS), identity="test:vector-items")
    ctx = _context(tmp_path, source, provider)
    budget = ContextBudget(max_chars=4000, max_blocks=1)
    package = ctx.reader(consumer="agent", budget=budget).read("upload proxy")
    coverage = package.source_coverage["mem"]
    assert (coverage.enumeration, coverage.outcome) == (Enumeration.RANKED, CoverageOutcome.MATCHED)
    assert coverage.considered == 2
    assert package.blocks[0].ref.path == "notes/proxy.md"
    HashEmbeddings.failing = "embedding service unreachable"
    package = ctx.reader(consumer="agent", budget=budget).read("tomatoes")
    assert package.source_coverage["mem"].outcome is CoverageOutcome.UNAVAILABLE
    assert any(HASH_MODEL in d.message and "unreachable" in d.message for d in package.diagnostics)
    ctx.index.close()
