"""A partition keeps its descriptors packed and hands out descriptors equal to those the
source gave: every field, the fields set, dumps, copies, pickling and order."""

from __future__ import annotations

import asyncio
import pickle
import sys
from pathlib import Path

import pytest

from taskctx import PluginHost, TaskContext
from taskctx.codes import ProblemCode
from taskctx.frozen import Builder, Packer
from taskctx.model import (
    ContextRef,
    EnumerationRequest,
    Problem,
    SectionInfo,
    SourceDescriptor,
)
from taskctx.testing import MemorySource
from tests.core.sources import numbered

PACKER = Packer(SourceDescriptor)


def _rich() -> SourceDescriptor:
    return SourceDescriptor(
        path="docs/guide.md",
        title="Guide",
        media_type="text/markdown",
        size=120,
        chars=118,
        content_version="sha256:" + "a" * 64,
        sections=(SectionInfo(title="Intro", scope="section:intro", level=1, chars=40),),
        scope="section:intro",
        parent_scope=None,
        role="guide",
        metadata={"owner": {"team": "core"}, "tags": ["a", 1, None]},
        problem=Problem(code=ProblemCode.PARSE_FAILED, message="bad xref"),
        position=3,
        required=True,
        summary="how to start",
    )


@pytest.mark.parametrize(
    "descriptor",
    [_rich(), SourceDescriptor(path="a.txt", content_version="v1")],
    ids=["every-field", "defaults"],
)
def test_an_unpacked_descriptor_is_the_one_packed(descriptor: SourceDescriptor) -> None:
    """Equal, the same fields set, the same dumps; copies, hashing-free use and pickling
    behave as for the model itself."""
    row = PACKER.pack(descriptor)
    again = PACKER.unpack(row)
    assert again == descriptor
    assert again is not descriptor
    assert type(again) is SourceDescriptor
    assert again.model_fields_set == descriptor.model_fields_set
    assert again.model_dump(exclude_unset=True) == descriptor.model_dump(exclude_unset=True)
    assert again.model_dump_json() == descriptor.model_dump_json()
    assert again.key == descriptor.key
    assert again.model_copy(update={"role": "x"}).role == "x"
    assert pickle.loads(pickle.dumps(again)) == descriptor
    assert SourceDescriptor.model_validate(again.model_dump()) == descriptor
    with pytest.raises(ValueError, match="frozen"):
        again.path = "other"  # type: ignore[misc]
    assert sys.getsizeof(row) < sys.getsizeof(descriptor.__dict__)


def test_a_packer_refuses_another_model() -> None:
    """A row is only ever made from the packer's own class."""
    with pytest.raises(TypeError, match="packs SourceDescriptor, not ContextRef"):
        PACKER.pack(ContextRef(binding="b", path="p"))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "descriptor",
    [_rich(), SourceDescriptor(path="a.txt", content_version="v1")],
    ids=["every-field", "defaults"],
)
def test_a_built_descriptor_is_the_validated_one(descriptor: SourceDescriptor) -> None:
    """A Builder given the fields a descriptor was made with makes an equal descriptor with
    the same fields set and dumps; defaults from a factory are fresh per model."""
    given = tuple(
        name for name in SourceDescriptor.model_fields if name in descriptor.model_fields_set
    )
    builder = Builder(SourceDescriptor, given)
    built = builder.build(**{name: getattr(descriptor, name) for name in given})
    assert built == descriptor
    assert type(built) is SourceDescriptor
    assert built.model_fields_set == descriptor.model_fields_set
    assert built.model_dump_json() == descriptor.model_dump_json()
    assert pickle.loads(pickle.dumps(built)) == descriptor
    with pytest.raises(ValueError, match="frozen"):
        built.path = "other"  # type: ignore[misc]
    bare = Builder(SourceDescriptor, ("path", "content_version"))
    one, two = (bare.build(path="p", content_version="v") for _ in range(2))
    assert one.metadata == {}
    assert one.metadata is not two.metadata


def test_a_builder_refuses_unknown_repeated_or_missing_fields() -> None:
    """A Builder is made of the model's own fields, each once, the required ones among them."""
    with pytest.raises(ValueError, match="builds from its own fields once each"):
        Builder(SourceDescriptor, ("path", "content_version", "nope"))
    with pytest.raises(ValueError, match="builds from its own fields once each"):
        Builder(SourceDescriptor, ("path", "path", "content_version"))
    with pytest.raises(ValueError, match=r"needs \['content_version'\] given"):
        Builder(SourceDescriptor, ("path",))


def _enumerated(source: MemorySource) -> list[SourceDescriptor]:
    page = asyncio.run(source.async_enumerate_descriptors(EnumerationRequest(page_size=100)))
    return list(page.descriptors)


def test_a_partition_keeps_rows_and_hands_out_equal_descriptors(tmp_path: Path) -> None:
    """After a sync the partition holds tuples, not models; its views give back the
    source's descriptors in structural order, by key and by document id."""
    source = MemorySource(numbered(30))
    ctx = TaskContext("packed", host=PluginHost(allow=[]), state_dir=tmp_path)
    ctx.attach(source, binding_id="mem")
    ctx.sync_index()
    (state,) = ctx.index.states.values()
    assert all(type(row) is tuple for row in state.rows.values())
    expected = sorted(_enumerated(source), key=lambda d: d.path)
    assert len(expected) == 30
    assert list(state.ordered) == expected
    assert state.ordered[3:5] == expected[3:5]
    assert state.ordered[-1] == expected[-1]
    assert state.descriptors[expected[7].key] == expected[7]
    assert state.descriptors.get(("missing", None)) is None
    assert state.by_doc_id(expected[2].path) == expected[2]
    assert state.by_doc_id("missing") is None
