"""The ``postgres`` lexical provider through the kernel: incremental, shared, configured."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from taskctx_postgres.lexical import (
    URL_ENV,
    PostgresIndexError,
    PostgresIndexNotConfiguredError,
    PostgresIndexUnavailableError,
    PostgresLexicalProvider,
)

from taskctx import ContextBudget, PluginHost, TaskContext
from taskctx.protocols import IndexDocument, PartitionKey
from taskctx.testing import MemorySource

pytestmark = pytest.mark.postgres

ITEMS = {
    "notes/upload.md": "The upload times out after 30 s when the index is rebuilt.",
    "notes/retries.md": "Retries of the upload service back off exponentially.",
    "notes/garden.md": "Tomatoes need sun and water.",
    "zh/说明.md": "上传服务在重建索引时会超时。",
}
KEY = PartitionKey(binding_id="b", source_identity="test:shared", provider="postgres")
BUDGET = ContextBudget(max_chars=10_000)


@pytest.fixture
def provider(pg_database: str) -> Iterator[PostgresLexicalProvider]:
    """A provider on a fresh database, its pools closed after the test."""
    made = PostgresLexicalProvider(pg_database)
    yield made
    made.close()


def _context(
    provider: PostgresLexicalProvider, state_dir: Path, source: MemorySource
) -> TaskContext:
    ctx = TaskContext("pg-task", host=PluginHost(allow=["taskctx-fts"]), state_dir=state_dir)
    ctx.configure_index(provider)
    ctx.attach(source, binding_id="mem")
    return ctx


def _doc(doc_id: str, version: str, text: str) -> IndexDocument:
    return IndexDocument(doc_id=doc_id, path=doc_id, text=text, content_version=version)


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_second_sync_of_unchanged_items_applies_nothing(
    provider: PostgresLexicalProvider, tmp_path: Path
) -> None:
    """The first sync adds every item; a second, after a change to one, indexes that one."""
    source = MemorySource(dict(ITEMS), identity="test:items")
    ctx = _context(provider, tmp_path, source)
    first = ctx.sync_index()["mem"]
    assert (first.added, first.updated, first.unchanged) == (len(ITEMS), 0, 0)
    assert ctx.sync_index()["mem"].mode == "warm"
    source.put("notes/garden.md", "Now the garden notes mention the upload too.")
    third = ctx.sync_index()["mem"]
    assert (third.added, third.updated, third.unchanged) == (0, 1, len(ITEMS) - 1)
    ctx.index.close()


def test_another_state_dir_reuses_the_partition(
    provider: PostgresLexicalProvider, pg_database: str, tmp_path: Path
) -> None:
    """A second TaskContext (another state dir, another provider object: another machine)
    over the same source indexes nothing again and finds what the first indexed."""
    source = MemorySource(dict(ITEMS), identity="test:items")
    first = _context(provider, tmp_path / "machine-a", source)
    assert first.sync_index()["mem"].added == len(ITEMS)
    state = first.partition_state(first.bindings["mem"])
    generation = state.partition.generation()  # type: ignore[attr-defined]
    other = PostgresLexicalProvider(pg_database)
    try:
        second = _context(other, tmp_path / "machine-b", source)
        report = second.sync_index()["mem"]
        assert (report.added, report.updated, report.removed) == (0, 0, 0)
        assert report.unchanged == len(ITEMS)
        assert state.partition.generation() == generation  # type: ignore[attr-defined]
        package = second.reader(consumer="agent", budget=BUDGET).read("上传超时")
        assert [block.ref.path for block in package.blocks] == ["zh/说明.md"]
        second.index.close()
    finally:
        other.close()
    first.index.close()


def test_a_context_rediffs_what_another_applied(
    provider: PostgresLexicalProvider, pg_database: str, tmp_path: Path
) -> None:
    """Machine B changes the shared partition; machine A's next read re-diffs (generation
    moved) and delivers its own source's items, none lost."""
    items_a = {f"doc{n}.txt": f"shared topic number {n}" for n in range(5)}
    items_b = {k: v for k, v in items_a.items() if k != "doc0.txt"}
    items_b["doc9.txt"] = "shared topic number 9"
    other = PostgresLexicalProvider(pg_database)
    try:
        a = _context(provider, tmp_path / "a", MemorySource(items_a, identity="mem:shared"))
        b = _context(other, tmp_path / "b", MemorySource(items_b, identity="mem:shared"))
        assert len(a.reader(consumer="x", budget=BUDGET).read("shared topic").blocks) == 5
        assert len(b.reader(consumer="x", budget=BUDGET).read("shared topic").blocks) == 5
        again = a.reader(consumer="x", budget=BUDGET).read("shared topic")
        assert sorted(block.ref.path for block in again.blocks) == sorted(items_a)
        assert again.source_coverage["mem"].considered == 5
        a.index.close()
        b.index.close()
    finally:
        other.close()


def test_generation_moves_when_another_opener_applies(
    provider: PostgresLexicalProvider, pg_database: str, tmp_path: Path
) -> None:
    """Two openers of one key share it: one applies, the other's generation moves and it
    sees the documents."""
    other = PostgresLexicalProvider(pg_database)
    try:
        mine = provider.open_partition(KEY, tmp_path / "a")
        theirs = other.open_partition(KEY, tmp_path / "b")
        before = mine.generation()
        theirs.apply([_doc("a.md", "1", "alpha beta")], [])
        assert mine.generation() != before
        assert dict(mine.indexed_versions()) == {"a.md": "1"}
        assert [h.doc_id for h in mine.search("alpha", None, 5).hits] == ["a.md"]
        mine.close()
        theirs.close()
    finally:
        other.close()


def test_concurrent_appliers_keep_the_totals(
    provider: PostgresLexicalProvider, pg_database: str, tmp_path: Path
) -> None:
    """Appliers on two "machines" writing overlapping documents at once: every apply is
    whole, and the stored totals equal what the tables hold."""
    other = PostgresLexicalProvider(pg_database)
    partitions = [p.open_partition(KEY, tmp_path) for p in (provider, other)]
    errors: list[BaseException] = []

    def write(number: int) -> None:
        try:
            for round_ in range(15):
                docs = [_doc(f"d{i}", f"{number}-{round_}", f"word{i} w{number} " * (i + 1))
                        for i in range(round_ % 5, round_ % 5 + 6)]  # fmt: skip
                partitions[number % 2].apply(docs, [f"d{(round_ + number) % 10}"])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    stats = dict(partitions[0].stats())
    versions = partitions[1].indexed_versions()
    assert stats["documents"] == len(versions)
    considered = partitions[0].search("w0 w1 w2 w3", None, None).considered
    assert considered == len(versions)  # every held document holds one writer's word
    for partition in partitions:
        partition.close()
    other.close()


def test_no_url_names_the_variable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The plugin loads without a URL; choosing the provider then fails naming the variable."""
    monkeypatch.delenv(URL_ENV, raising=False)
    host = PluginHost(allow=["taskctx-fts", "taskctx-postgres"], strict=True)
    provider = host.index_provider("postgres")
    assert isinstance(provider, PostgresLexicalProvider)
    ctx = TaskContext("t", host=host, state_dir=tmp_path)
    ctx.configure_index("postgres")
    ctx.attach(MemorySource(dict(ITEMS), identity="test:items"), binding_id="mem")
    with pytest.raises(PostgresIndexNotConfiguredError, match=URL_ENV):
        ctx.sync_index()


def test_the_url_comes_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, pg_database: str, tmp_path: Path
) -> None:
    """The registered provider reads TASKCTX_PG_INDEX_URL when it first opens a partition."""
    monkeypatch.setenv(URL_ENV, pg_database)
    host = PluginHost(allow=["taskctx-fts", "taskctx-postgres"], strict=True)
    provider = host.index_provider("postgres")
    assert isinstance(provider, PostgresLexicalProvider)
    try:
        ctx = TaskContext("t", host=host, state_dir=tmp_path)
        ctx.configure_index("postgres")
        ctx.attach(MemorySource(dict(ITEMS), identity="test:items"), binding_id="mem")
        package = ctx.reader(consumer="agent", budget=BUDGET).read("upload times out")
        assert package.blocks[0].ref.path == "notes/upload.md"
        ctx.index.close()
    finally:
        provider.close()


def test_fts_stays_the_default_lexical_provider() -> None:
    """Installing taskctx-postgres does not take the default from fts (first-party wins)."""
    host = PluginHost(allow=["taskctx-fts", "taskctx-postgres"], strict=True)
    default = host.default_lexical_provider()
    assert default is not None
    assert default.name == "fts"
    assert "postgres" in host.index_providers()


def test_unreachable_server_names_host_and_port_not_the_password() -> None:
    """A closed port: PostgresIndexUnavailableError with host:port, without the password."""
    port = _closed_port()
    provider = PostgresLexicalProvider(f"postgresql://bob:s3cr3t-pw@127.0.0.1:{port}/idx")
    with pytest.raises(PostgresIndexUnavailableError) as caught:
        provider.open_partition(KEY, None)
    message = str(caught.value)
    assert f"127.0.0.1:{port}" in message
    assert "'idx'" in message
    assert "s3cr3t-pw" not in message
    assert "s3cr3t-pw" not in repr(caught.value.__cause__)


def test_a_malformed_url_is_a_clear_error() -> None:
    """A URL libpq cannot parse: PostgresIndexError naming the variable, not the password."""
    provider = PostgresLexicalProvider("postgresql://bob:s3cr3t-pw@host/db?connect_timeout=soon")
    with pytest.raises(PostgresIndexError, match=URL_ENV) as caught:
        provider.open_partition(KEY, None)
    assert "s3cr3t-pw" not in str(caught.value)
