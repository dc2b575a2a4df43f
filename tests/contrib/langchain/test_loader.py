"""TaskContextSourceLoader: one Document per item of one binding, exact, lazily."""

from __future__ import annotations

import pytest
from taskctx_langchain import TaskContextSourceLoader

from taskctx import TaskContext, UnknownBindingError, sha256_digest
from taskctx.flatview import METADATA_FIELDS
from tests.contrib.langchain.conftest import FILES


def test_loads_every_item_exactly(ctx: TaskContext) -> None:
    """Every file of the binding, its exact content, digest and ref in flatview metadata."""
    ctx.put(role="instruction", content="Do not modify files.", required=True)
    documents = TaskContextSourceLoader(ctx, "files").load()
    by_ref = {d.metadata["ref"]: d for d in documents}
    assert sorted(by_ref) == sorted(f"ctx://files/{path}" for path in FILES)
    for path, text in FILES.items():
        document = by_ref[f"ctx://files/{path}"]
        assert set(document.metadata) == set(METADATA_FIELDS)
        assert document.page_content == text
        assert document.metadata["binding_id"] == "files"
        assert document.metadata["digest"] == sha256_digest(text)
        assert document.metadata["completeness"] == "complete"


def test_an_item_over_the_budget_is_delivered_whole(ctx: TaskContext) -> None:
    """max_chars below an item's size still yields its whole original (never cut)."""
    documents = TaskContextSourceLoader(ctx, "files", max_chars=10, page_size=2).load()
    assert sorted(d.page_content for d in documents) == sorted(FILES.values())


def test_lazy_load_is_lazy(ctx: TaskContext) -> None:
    """lazy_load yields the first item before reading the rest."""
    iterator = TaskContextSourceLoader(ctx, "files", page_size=1).lazy_load()
    first = next(iterator)
    assert first.page_content in FILES.values()
    assert len(ctx.readers()) == 1
    assert len(list(iterator)) == len(FILES) - 1


async def test_async_load_matches_sync(ctx: TaskContext) -> None:
    """alazy_load yields the same items through async_read."""
    loader = TaskContextSourceLoader(ctx, "files", page_size=2)
    documents = [d async for d in loader.alazy_load()]
    assert sorted(d.page_content for d in documents) == sorted(FILES.values())


def test_unknown_binding_fails_at_construction(ctx: TaskContext) -> None:
    """A binding the context does not have raises before anything is read."""
    with pytest.raises(UnknownBindingError, match="nope"):
        TaskContextSourceLoader(ctx, "nope")
