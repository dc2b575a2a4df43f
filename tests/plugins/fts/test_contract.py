"""FtsProvider keeps the kernel's IndexProvider contract."""

from __future__ import annotations

import pytest
from taskctx_fts import FtsProvider

from taskctx.protocols import IndexProvider
from taskctx.testing import IndexProviderContract


class TestFtsProviderContract(IndexProviderContract):
    """The conformance kit of taskctx.testing, run on the fts provider."""

    covers = "fts"

    @pytest.fixture
    def provider(self) -> IndexProvider:
        """The provider under test."""
        return FtsProvider()
