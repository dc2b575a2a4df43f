"""TantivyProvider keeps the kernel's IndexProvider contract."""

from __future__ import annotations

import pytest
from taskctx_tantivy import TantivyProvider

from taskctx.protocols import IndexProvider
from taskctx.testing import IndexProviderContract


class TestTantivyProviderContract(IndexProviderContract):
    """The conformance kit of taskctx.testing, run on the tantivy provider."""

    covers = "tantivy"

    @pytest.fixture
    def provider(self) -> IndexProvider:
        """The provider under test."""
        return TantivyProvider()
