"""The record store bounds JSON nesting at every entry point, with nothing half-written.

Record content, scope and meta, put_many, checkpoint state, event payloads, link meta,
query scope and filters, a source's scope, the ``record_store`` factory's JSON scope
and the CLI's JSON options refuse values nested past ``MAX_JSON_DEPTH`` (100) levels
with TypeError (ValueError for JSON text) naming the limit, never a RecursionError;
50 levels round-trip.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from taskctx_records import RecordStore

from taskctx import PluginHost
from taskctx.cli import main
from taskctx.jsonsafe import MAX_JSON_DEPTH
from tests.core.test_json_depth import DEEP_CASES, nested, nested_text

TOO_DEEP = [MAX_JSON_DEPTH + 1, 995, 100_000]
KINDS = ["list", "dict", "mixed"]
MESSAGE = f"more than {MAX_JSON_DEPTH} levels deep"

Writer = Callable[[RecordStore, Any], object]


def writers() -> dict[str, Writer]:
    """Every record-store call that stores a JSON value; ``value`` is the whole value."""

    def link(store: RecordStore, value: Any) -> object:
        first, second = store.query(collection="c").records[:2]
        return store.link(first.id, second.id, "relates", meta=value)

    return {
        "put content": lambda s, v: s.put(v, collection="c"),
        "put scope": lambda s, v: s.put("x", collection="c", scope=v),
        "put meta": lambda s, v: s.put("x", collection="c", meta=v),
        "put_many": lambda s, v: s.put_many(
            [{"content": "ok", "collection": "c"}, {"content": v, "collection": "c"}]
        ),
        "checkpoint state": lambda s, v: s.checkpoint("run-1", v),
        "event payload": lambda s, v: s.append_event("stream", "happened", v),
        "link meta": link,
    }


def two_records(root: Path) -> RecordStore:
    """A store holding the text records "a" and "b" in collection "c"."""
    store = RecordStore(root)
    store.put("a", collection="c")
    store.put("b", collection="c")
    return store


@pytest.fixture(scope="module")
def refusing_store(tmp_path_factory: pytest.TempPathFactory) -> RecordStore:
    """One store for every refusal test: a refused write leaves it as it was."""
    return two_records(tmp_path_factory.mktemp("refusing") / "state")


@pytest.fixture(scope="module")
def accepting_store(tmp_path_factory: pytest.TempPathFactory) -> RecordStore:
    """One store for the writes that are within the limit."""
    return two_records(tmp_path_factory.mktemp("accepting") / "state")


def as_object(depth: int, kind: str) -> dict[str, Any]:
    """A JSON object ``depth`` levels deep in all (scope and meta must be objects)."""
    return {"k": nested(depth - 1, kind)}


@pytest.mark.parametrize("name", sorted(writers()))
@pytest.mark.parametrize(("depth", "kind"), DEEP_CASES)
def test_writes_refuse_deep_json_and_write_nothing(
    refusing_store: RecordStore, name: str, kind: str, depth: int
) -> None:
    """Each write refuses a value past the limit with TypeError; the revision is unchanged."""
    store = refusing_store
    revision = store.revision
    with pytest.raises(TypeError, match=MESSAGE):
        writers()[name](store, as_object(depth, kind))
    assert store.revision == revision
    assert [r.content for r in store.query(collection="c").records] == ["a", "b"]
    assert store.links(store.query(collection="c").records[0].id) == []


@pytest.mark.parametrize("name", sorted(writers()))
@pytest.mark.parametrize("kind", KINDS)
def test_writes_take_json_within_the_limit(
    accepting_store: RecordStore, name: str, kind: str
) -> None:
    """The same writes store a value 50 levels deep (and the limit itself)."""
    store = accepting_store
    revision = store.revision
    writers()[name](store, as_object(50, kind))
    writers()[name](store, as_object(MAX_JSON_DEPTH, kind))
    assert store.revision > revision


def test_deep_json_within_the_limit_reads_back_equal(store_root: Path | str) -> None:
    """Content, state and payload 100 levels deep come back as they were put."""
    store = RecordStore(store_root)
    value = nested(MAX_JSON_DEPTH, "mixed")
    ref = store.put(value, collection="c")
    assert store.get(ref.id).content == value
    store.checkpoint("run-1", value)
    latest = store.latest_checkpoint("run-1")
    assert latest is not None
    assert latest.state == value
    store.append_event("s", "t", as_object(MAX_JSON_DEPTH, "dict"))
    assert store.events("s").events[0].payload == as_object(MAX_JSON_DEPTH, "dict")


@pytest.mark.parametrize(("depth", "kind"), DEEP_CASES)
def test_queries_and_sources_refuse_deep_json(
    refusing_store: RecordStore, kind: str, depth: int
) -> None:
    """query(scope=...), query(filters=...) and source(scope=...) refuse deep values."""
    store = refusing_store
    with pytest.raises(TypeError, match=f"scope nests .*{MESSAGE}"):
        store.query(scope=as_object(depth, kind))
    with pytest.raises(TypeError, match=f"filter 'content.k' nests .*{MESSAGE}"):
        store.query(filters={"content.k": nested(depth, kind)})
    with pytest.raises(TypeError, match=MESSAGE):
        store.source(scope=as_object(depth, kind))


@pytest.mark.parametrize("depth", TOO_DEEP)
def test_record_store_factory_refuses_deep_scope_text(
    tmp_path: Path, store_root: Path | str, depth: int
) -> None:
    """host.source("record_store", scope=<JSON text>) refuses text nested too deep."""
    RecordStore(store_root)
    host = PluginHost(allow=["taskctx-records"])
    scope = '{"k": ' + nested_text(depth - 1, "list") + "}"
    with pytest.raises(ValueError, match=f"record_store scope nests .*{MESSAGE}"):
        host.source("record_store", root=str(tmp_path / "state"), scope=scope)


@pytest.mark.parametrize("depth", TOO_DEEP)
@pytest.mark.parametrize("option", ["CONTENT", "--scope", "--meta", "--filter"])
def test_cli_refuses_deep_json_options(tmp_path: Path, depth: int, option: str) -> None:
    """taskctx records put/query exit non-zero naming the option and the limit."""
    root = str(tmp_path / "state")
    deep = '{"k": ' + nested_text(depth - 1, "dict") + "}"
    put = ["records", "put", "--root", root, "--collection", "c"]
    args = {
        "CONTENT": [*put, "--json", deep],
        "--scope": [*put, "--scope", deep, "x"],
        "--meta": [*put, "--meta", deep, "x"],
        "--filter": ["records", "query", "--root", root, "--filter", f"content.k={deep}"],
    }[option]
    result = CliRunner().invoke(main, args, env={"TASKCTX_LOAD_PLUGINS": "taskctx-records"})
    assert result.exit_code != 0
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert MESSAGE in result.output
    assert option.split()[0] in result.output
