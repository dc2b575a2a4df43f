"""Registers the ``vector`` and ``hybrid`` index providers and the ``llm`` selector.

Nothing is loaded here: the embedding and chat models are looked up in llm when a
partition is first opened or a selection is first made.
"""

from __future__ import annotations

from collections.abc import Callable

from taskctx import IndexProvider
from taskctx.hookspecs import hookimpl
from taskctx.protocols import Selector

__all__ = ["register_index_providers", "register_selectors"]


@hookimpl
def register_index_providers(register: Callable[[IndexProvider], None]) -> None:
    """``vector`` (embeddings through llm) and ``hybrid`` (fts and vector, fused by RRF)."""
    from taskctx_llm.hybrid import hybrid_provider
    from taskctx_llm.vector import LlmVectorProvider

    vector = LlmVectorProvider()
    register(vector)
    register(hybrid_provider(vector))


@hookimpl
def register_selectors(register: Callable[[Selector], None]) -> None:
    """``llm``: a chat model chooses among the previews by their host-issued keys."""
    from taskctx_llm.selector import LlmSelector

    register(LlmSelector())
