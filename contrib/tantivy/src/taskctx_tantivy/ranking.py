"""Queries built from tokens, and the top hits with ties broken by doc id.

A query is never parsed: tantivy's query parser reads ``title:``, quotes, ``AND``,
``*`` as syntax, and turns a CJK run into a phrase query of its tokens (which a
bigram-indexed field never matches). The user's text goes through the fts tokenizer
instead, and each distinct token becomes a term query, joined by SHOULD: BM25 summed
over the query's terms. A restriction to ``doc_ids`` is a MUST clause of a term-set
query scored 0, so it filters without changing any score.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import tantivy

__all__ = ["Ranked", "build_query", "top"]

Ranked = list[tuple[float, str]]
"""(score, doc_id), best first, equal scores by ascending doc id."""


def build_query(
    schema: tantivy.Schema, tokens: Sequence[str], doc_ids: Sequence[str] | None
) -> tantivy.Query:
    """SHOULD over each distinct token; within ``doc_ids`` when given."""
    should = tantivy.Occur.Should
    term_query = tantivy.Query.term_query
    query = tantivy.Query.boolean_query(
        [
            (should, term_query(schema, "text", t, index_option="freq"))
            for t in dict.fromkeys(tokens)
        ]
    )
    if doc_ids is None:
        return query
    allowed = tantivy.Query.term_set_query(schema, "doc_id", list(doc_ids))
    return tantivy.Query.boolean_query(
        [
            (tantivy.Occur.Must, query),
            (tantivy.Occur.Must, tantivy.Query.const_score_query(allowed, 0.0)),
        ]
    )


def top(
    searcher: tantivy.Searcher,
    query: tantivy.Query,
    limit: int | None,
    ids_of: Callable[[list[tantivy.DocAddress]], list[str]],
) -> tuple[Ranked, int]:
    """The best ``limit`` hits (every hit for None) and how many documents match.

    tantivy orders equal scores by its own document addresses, which change with merges.
    One hit beyond the limit shows whether a tie crosses the cut; if it does, the hits
    tied there are fetched whole (searching again with a doubled limit while the last
    one fetched still ties) and ordered by doc id, so a result never depends on segment
    layout."""
    # limit + 1 is also never 0, which tantivy panics on
    fetch = max(1, searcher.num_docs) if limit is None else limit + 1
    while True:
        result = searcher.search(query, fetch, count=True)
        hits = result.hits
        count = int(result.count)  # type: ignore[attr-defined]  # the stub omits it
        if limit is None or limit == 0 or len(hits) < fetch or len(hits) <= limit:
            break
        if hits[-1][0] != hits[limit - 1][0]:
            break
        fetch *= 2
    if limit == 0:
        return [], count
    if limit is not None and len(hits) > limit:
        cut = hits[limit - 1][0]
        hits = [hit for hit in hits if hit[0] >= cut]
    ids = ids_of([address for _, address in hits])
    ranked = sorted(zip([score for score, _ in hits], ids, strict=True), key=_order)
    return (ranked if limit is None else ranked[:limit]), count


def _order(hit: tuple[float, str]) -> tuple[float, str]:
    return (-hit[0], hit[1])
