"""What a lexical search decides before it reads any index: the query's tokens, or the
answer that needs no index (not searchable, or an empty restriction).

Shared by every provider that tokenizes as fts does (``fts``, and the ``postgres`` and
``tantivy`` contrib providers), so they answer such queries alike.
"""

from __future__ import annotations

from collections.abc import Sequence

from taskctx.protocols import SearchResult
from taskctx_fts.tokenize import searchable, tokenize

__all__ = ["query_tokens"]


def query_tokens(query: str, doc_ids: Sequence[str] | None) -> list[str] | SearchResult:
    """The tokens of ``query``; or ``SearchResult.not_searchable()`` when none is worth
    searching, or ``SearchResult.no_matches()`` when ``doc_ids`` restricts to nothing."""
    tokens = tokenize(query)
    if not searchable(tokens):
        return SearchResult.not_searchable()
    if doc_ids is not None and not doc_ids:
        return SearchResult.no_matches()
    return tokens
