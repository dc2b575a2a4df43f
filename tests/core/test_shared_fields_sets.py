"""Frozen models that share one set of the fields they were given behave as before."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path
from typing import Any

from taskctx import PluginHost, TaskContext
from taskctx.frozen import share_fields_sets
from taskctx.model import ContextRef, SourceDescriptor
from taskctx.testing import MemorySource
from tests.core.sources import numbered


def _descriptor(number: int, **extra: Any) -> SourceDescriptor:
    return SourceDescriptor(
        path=f"item-{number}.txt",
        title=f"item {number}",
        size=10,
        content_version=f"v{number}",
        metadata={"n": number},
        **extra,
    )


def test_models_given_the_same_fields_share_one_set_and_compare_as_before() -> None:
    """Equal sets become one object; each model still says exactly which fields were set,
    equals a model never shared, and dumps the same."""
    first, second, other = _descriptor(1), _descriptor(2), _descriptor(3, role="guide")
    fresh = _descriptor(1)
    share_fields_sets([first, second, other])
    assert first.model_fields_set is second.model_fields_set
    assert other.model_fields_set is not first.model_fields_set
    assert other.model_fields_set == {*fresh.model_fields_set, "role"}
    assert first == fresh
    assert first.model_dump(exclude_unset=True) == fresh.model_dump(exclude_unset=True)
    assert first.model_dump_json() == fresh.model_dump_json()


def test_a_copy_with_updates_leaves_the_shared_set_alone() -> None:
    """model_copy(update=...) adds to its own copy of the set, never to the shared one."""
    first, second = _descriptor(1), _descriptor(2)
    share_fields_sets([first, second])
    before = set(first.model_fields_set)
    changed = first.model_copy(update={"role": "guide", "scope": "lines:1-2"})
    assert {"role", "scope"} <= changed.model_fields_set
    assert second.model_fields_set == before
    assert first.model_fields_set == before
    assert pickle.loads(pickle.dumps(first)) == first


def test_sharing_frees_the_per_model_sets() -> None:
    """A shared model holds no set of its own (the memory the index keeps per descriptor)."""
    models = [_descriptor(n) for n in range(50)]
    distinct_before = {id(m.model_fields_set) for m in models}
    share_fields_sets(models)
    assert len(distinct_before) == 50
    assert len({id(m.model_fields_set) for m in models}) == 1
    assert sys.getsizeof(models[0].model_fields_set) > 0
    refs = [ContextRef(binding="b", path=f"p{n}") for n in range(3)]
    share_fields_sets(refs)  # any frozen model, not only descriptors
    assert refs[0].model_fields_set is refs[2].model_fields_set


def test_an_index_keeps_its_descriptors_with_shared_sets(tmp_path: Path) -> None:
    """After a sync the descriptors the partition keeps share their fields sets."""
    ctx = TaskContext("shared", host=PluginHost(allow=[]), state_dir=tmp_path)
    ctx.attach(MemorySource(numbered(20)), binding_id="mem")
    ctx.sync_index()
    (state,) = ctx.index.states.values()
    kept = state.ordered
    assert len(kept) == 20
    assert len({id(d.model_fields_set) for d in kept}) == 1


def test_a_record_store_partition_keeps_one_metadata_dict_per_kind(tmp_path: Path) -> None:
    """Records of one collection, kind, scope and meta share one metadata dict in the
    partition; a record with other meta has its own."""
    from taskctx_records import RecordStore

    store = RecordStore(tmp_path / "store")
    scope = {"task": "t"}
    store.put_many(
        [{"content": {"n": n}, "collection": "obs", "kind": "k", "scope": scope} for n in range(30)]
    )
    store.put({"n": 99}, collection="obs", kind="k", scope=scope, meta={"by": "ann"})
    host = PluginHost(allow=["taskctx-records"])
    ctx = TaskContext("shared", host=host, state_dir=tmp_path / "s")
    ctx.attach(store.source(scope=scope), binding_id="records")
    ctx.sync_index()
    (state,) = ctx.index.states.values()
    metadata = [descriptor.metadata for descriptor in state.ordered]
    assert len(metadata) == 31
    assert len({id(m) for m in metadata}) == 2
    assert [m["meta"] for m in metadata if m["meta"]] == [{"by": "ann"}]
