"""LlmVectorProvider keeps the kernel's IndexProvider contract (with the hash model)."""

from __future__ import annotations

import pytest
from taskctx_llm.vector import LlmVectorProvider

from taskctx.protocols import IndexProvider
from taskctx.testing import IndexProviderContract

from .hash_embeddings import HASH_MODEL, HashEmbeddings


class TestLlmVectorContract(IndexProviderContract):
    """The conformance kit of taskctx.testing, run on the vector provider."""

    covers = "vector"

    @pytest.fixture
    def provider(self, hash_model: type[HashEmbeddings]) -> IndexProvider:
        """The provider under test, on the deterministic hash model."""
        return LlmVectorProvider(HASH_MODEL)
