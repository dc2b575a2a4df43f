"""RecordStore.get_many and the record source's batched read: one query per batch."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from taskctx_records import RecordStore

from taskctx import NotFoundError, PolicyError
from taskctx.model import ContextRef, ExactRead
from tests.plugins.records.tracing import trace_statements


@pytest.fixture
def store(store_root: Path | str) -> RecordStore:
    """A store with a record in two versions, a deleted one and one of another scope."""
    store = RecordStore(store_root)
    store.put("first", collection="obs", scope={"task": "t"}, record_id="r1")  # revision 1
    store.put({"v": 2}, collection="obs", scope={"task": "t"}, record_id="r1")  # revision 2
    store.put("gone", collection="obs", scope={"task": "t"}, record_id="r2")  # revision 3
    store.delete("r2")  # revision 4
    store.put("theirs", collection="obs", scope={"task": "u"}, record_id="r3")  # revision 5
    return store


def test_get_many_answers_as_get_does(store: RecordStore) -> None:
    """Every (id, revision) gets what ``get`` returns or the error it raises, in order:
    versions as of a revision, deleted, absent, and revisions out of range."""
    wanted: list[tuple[str, int | None]] = [
        ("r1", None),
        ("r1", 1),
        ("r2", 3),
        ("r2", None),
        ("nope", None),
        ("r1", 0),
        ("r1", 99),
        ("r1", -1),
        ("r3", None),
    ]
    answers = store.get_many(wanted)
    assert len(answers) == len(wanted)
    for (record_id, at), answer in zip(wanted, answers, strict=True):
        if isinstance(answer, Exception):
            with pytest.raises(type(answer)) as raised:
                store.get(record_id, at_revision=at)
            assert str(raised.value) == str(answer)
            continue
        assert answer == store.get(record_id, at_revision=at), (record_id, at)
    assert [type(a).__name__ for a in answers] == [
        "Record",
        "Record",
        "Record",
        "NotFoundError",
        "NotFoundError",
        "NotFoundError",
        "ValueError",
        "ValueError",
        "Record",
    ]
    assert store.get_many([]) == []


def test_get_many_reads_a_batch_in_one_query(
    store: RecordStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Several hundred records come back from one SELECT of the records table per 300."""
    store.put_many(
        [{"content": f"n{n}", "collection": "obs", "record_id": f"m{n:04d}"} for n in range(700)]
    )
    statements = trace_statements(store, monkeypatch)
    answers = store.get_many([(f"m{n:04d}", None) for n in range(700)])
    assert [a.content for a in answers if not isinstance(a, Exception)] == [
        f"n{n}" for n in range(700)
    ]
    selects = [s for s in statements if "FROM wanted" in s]
    assert len(selects) == 3  # 300 + 300 + 100


def test_the_source_batch_answers_each_ref(store: RecordStore) -> None:
    """The scoped source answers a batch with reads, NotFoundError for what is absent or
    deleted and PolicyError for a record outside its scope, never raising for one ref."""
    source = store.source(scope={"task": "t"})
    refs = [
        ContextRef(binding="r", path="r1"),
        ContextRef(binding="r", path="r2"),
        ContextRef(binding="r", path="nope"),
        ContextRef(binding="r", path="r3"),
        ContextRef(binding="r", path="r1", version="r1:" + "0" * 64),
    ]
    answers = asyncio.run(source.async_read_exact_many(refs, 3))
    first, deleted, absent, outside, pinned = answers
    assert isinstance(first, ExactRead)
    assert first.text == "{\n "
    assert isinstance(deleted, NotFoundError)
    assert isinstance(absent, NotFoundError)
    assert isinstance(outside, PolicyError)
    assert isinstance(pinned, ExactRead)
    assert pinned.text == "fir"
