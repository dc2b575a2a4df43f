"""taskctx-llm: a vector index provider on any llm embedding model, a hybrid of it with a
lexical provider, and a selector on any llm chat model.

Modules: ``embedding`` (which model, the llm calls, the query cache), ``vector_store``
(the SQLite file of a partition), ``vector`` (the ``vector`` provider), ``hybrid`` (the
``hybrid`` fusion), ``selector`` and ``selector_prompt`` (the ``llm`` selector),
``plugin`` (the hooks).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from taskctx_llm.embedding import (
        EmbeddingFailedError,
        EmbeddingModelError,
        EmbeddingModelNotConfiguredError,
        UnknownEmbeddingModelError,
    )
    from taskctx_llm.hybrid import hybrid_provider
    from taskctx_llm.selector import AuditLog, LlmSelector, SelectionAudit, UnknownChatModelError
    from taskctx_llm.vector import LlmVectorProvider
    from taskctx_llm.vector_partition import LlmVectorPartition

_HOMES = {
    "AuditLog": "selector",
    "EmbeddingFailedError": "embedding",
    "EmbeddingModelError": "embedding",
    "EmbeddingModelNotConfiguredError": "embedding",
    "LlmSelector": "selector",
    "LlmVectorPartition": "vector_partition",
    "LlmVectorProvider": "vector",
    "SelectionAudit": "selector",
    "UnknownChatModelError": "selector",
    "UnknownEmbeddingModelError": "embedding",
    "hybrid_provider": "hybrid",
}
__all__ = [
    "AuditLog",
    "EmbeddingFailedError",
    "EmbeddingModelError",
    "EmbeddingModelNotConfiguredError",
    "LlmSelector",
    "LlmVectorPartition",
    "LlmVectorProvider",
    "SelectionAudit",
    "UnknownChatModelError",
    "UnknownEmbeddingModelError",
    "hybrid_provider",
]


def __getattr__(name: str) -> Any:
    """The public names, imported on first use: importing the package (as the plugin
    loader does) must not load llm and numpy, which take 0.4 s."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'taskctx_llm' has no attribute {name!r}")
    return getattr(importlib.import_module(f"taskctx_llm.{home}"), name)
