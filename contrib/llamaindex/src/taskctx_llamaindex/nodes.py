"""Blocks and coverage of a package as LlamaIndex nodes (translation only).

A block becomes a ``TextNode`` (or a ``Document``) whose text is the delivered content
and whose metadata is :func:`taskctx.flatview.block_metadata`, unchanged. What the model
sees of that metadata is the LlamaIndex way, ``excluded_llm_metadata_keys``: the ref (to
cite it and read it back), title, role, representation, completeness and scope, so a
lossy digest or a part never reads as the whole item; the bookkeeping (digests,
revisions, counts) stays in the metadata only. Embeddings see the title at most. The
coverage node's text is :func:`taskctx.flatview.coverage_statement`, so the coverage
facts reach the model as words whatever metadata it is shown.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from llama_index.core.schema import Document, NodeWithScore, TextNode

from taskctx.flatview import (
    COVERAGE_KIND,
    FlatValue,
    block_metadata,
    coverage_metadata,
    coverage_statement,
)
from taskctx.model import ContextBlock, ContextPackage

__all__ = [
    "COVERAGE_KIND",
    "EMBED_METADATA_KEYS",
    "LLM_METADATA_KEYS",
    "block_document",
    "block_node",
    "coverage_node",
    "node_id",
    "rank_score",
    "scored_nodes",
]


LLM_METADATA_KEYS: tuple[str, ...] = (
    "ref",
    "title",
    "role",
    "representation",
    "completeness",
    "scope",
)
"""The metadata fields the model is shown with a block's text (when they have a value)."""

EMBED_METADATA_KEYS: tuple[str, ...] = ("title",)
"""The metadata fields an embedding of a block's text includes (when they have a value)."""


def node_id(block: ContextBlock) -> str:
    """A stable node id: the block's canonical ref and the digest of its content."""
    return f"{block.ref}@{block.digest}"


def _excluded(metadata: Mapping[str, FlatValue], shown: tuple[str, ...]) -> list[str]:
    return [key for key, value in metadata.items() if key not in shown or value is None]


def _fields(package: ContextPackage, block: ContextBlock, rank: int) -> dict[str, Any]:
    metadata = block_metadata(package, block, rank)
    return {
        "text": block.content,
        "id_": node_id(block),
        "metadata": metadata,
        "excluded_llm_metadata_keys": _excluded(metadata, LLM_METADATA_KEYS),
        "excluded_embed_metadata_keys": _excluded(metadata, EMBED_METADATA_KEYS),
    }


def block_node(package: ContextPackage, block: ContextBlock, rank: int) -> TextNode:
    """``block`` (the ``rank``-th of ``package``) as a ``TextNode``: the content as text,
    the kernel's flat metadata."""
    return TextNode(**_fields(package, block, rank))


def block_document(package: ContextPackage, block: ContextBlock, rank: int) -> Document:
    """``block`` as a ``Document``, with the same text, id and metadata as :func:`block_node`."""
    return Document(**_fields(package, block, rank))


def coverage_node(package: ContextPackage) -> TextNode:
    """The package's coverage statement as a node (metadata ``kind="coverage"``); its
    text carries every fact, so no metadata is added to what the model sees."""
    metadata: dict[str, FlatValue] = coverage_metadata(package)
    return TextNode(
        text=coverage_statement(package),
        id_=f"coverage:{package.package_id}",
        metadata=metadata,
        excluded_llm_metadata_keys=list(metadata),
        excluded_embed_metadata_keys=list(metadata),
    )


def rank_score(block: ContextBlock, rank: int) -> float:
    """``block.score`` when the kernel ranked the block, else ``1 / rank``."""
    return block.score if block.score is not None else 1.0 / rank


def scored_nodes(package: ContextPackage, include_coverage: bool) -> list[NodeWithScore]:
    """Every block of ``package`` in order, then (``include_coverage``) the coverage node
    with score None: it is not ranked."""
    nodes = [
        NodeWithScore(node=block_node(package, block, rank), score=rank_score(block, rank))
        for rank, block in enumerate(package.blocks, start=1)
    ]
    if include_coverage:
        nodes.append(NodeWithScore(node=coverage_node(package), score=None))
    return nodes
