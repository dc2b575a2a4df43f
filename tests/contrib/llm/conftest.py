"""Fixtures of the llm tests: llm's user dir in a temporary folder, the hash model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from llm.plugins import pm
from taskctx_llm.embedding import ENV_VAR

from .hash_embeddings import HashEmbeddings, HashEmbeddingsPlugin


@pytest.fixture(autouse=True)
def llm_user_path(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """llm reads and writes its configuration in a temporary folder, never the real one,
    and no embedding model is configured through the environment."""
    folder = tmp_path_factory.mktemp("llm-user")
    monkeypatch.setenv("LLM_USER_PATH", str(folder))
    monkeypatch.delenv(ENV_VAR, raising=False)
    return folder


@pytest.fixture
def hash_model() -> Iterator[type[HashEmbeddings]]:
    """The hash embedding models registered on llm's plugin manager (unregistered after);
    the class, with its counters reset."""
    plugin = HashEmbeddingsPlugin()
    pm.register(plugin, name="taskctx-test-hash-embeddings")
    HashEmbeddings.reset()
    try:
        yield HashEmbeddings
    finally:
        pm.unregister(plugin)
        HashEmbeddings.reset()
