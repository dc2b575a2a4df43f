"""The kernel's own in-memory source keeps the source contract."""

from __future__ import annotations

import pytest

from taskctx.protocols import ContextSource
from taskctx.testing import MemorySource, SourceContract
from tests.core.sources import numbered


class TestMemorySource(SourceContract):
    """MemorySource with many items, paged."""

    covers = "memory"

    @pytest.fixture
    def source(self) -> ContextSource:
        """Twelve items, five per page, plus Markdown and multi-byte text."""
        items: dict[str, str | bytes] = dict(numbered(12))
        items["guide.md"] = "# Title\n\nbody\n"
        items["cjk.txt"] = "汉字テキスト"
        return MemorySource(items, page_size=5)


class TestMemorySourceWithHistory(SourceContract):
    """MemorySource that keeps every revision."""

    covers = "memory"

    @pytest.fixture
    def source(self) -> ContextSource:
        """Items changed a few times before the contract runs."""
        source = MemorySource(numbered(3), keep_history=True)
        source.put("item-00001.txt", "rewritten")
        source.delete("item-00002.txt")
        return source
