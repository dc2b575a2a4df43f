"""LlamaIndex for taskctx: a retriever over a task context and a reader of its items.

:class:`TaskContextRetriever` answers each query with a fresh read of the task context
(the kernel decides what is delivered) as ``NodeWithScore`` objects; with
``include_coverage`` a closing node tells the model what was covered and left out.
:class:`TaskContextReader` loads each item of a binding as a ``Document``. Metadata is
the kernel's :func:`taskctx.flatview.block_metadata`.
"""

from __future__ import annotations

from taskctx_llamaindex.nodes import (
    COVERAGE_KIND,
    EMBED_METADATA_KEYS,
    LLM_METADATA_KEYS,
    block_document,
    block_node,
    coverage_node,
)
from taskctx_llamaindex.reader import TaskContextReader, UndeliveredItemError
from taskctx_llamaindex.retriever import TaskContextRetriever

__all__ = [
    "COVERAGE_KIND",
    "EMBED_METADATA_KEYS",
    "LLM_METADATA_KEYS",
    "TaskContextReader",
    "TaskContextRetriever",
    "UndeliveredItemError",
    "block_document",
    "block_node",
    "coverage_node",
]
