"""``hybrid``: a lexical provider and a vector provider fused by reciprocal rank fusion.

The kernel's :class:`taskctx.fusion.FusedProvider` does the work: each member ranks the
query in its own partition (``<directory>/<member name>/``) and the rankings are summed as
``1 / (60 + rank)``, so a document found by either member is ranked, and one found by both
ranks higher.

The vector member is optional (``degrade=True``): when its search fails (the embedding
model raised), the hybrid ranks with the lexical member alone and the package carries an
``index_degraded`` diagnostic naming the error. An ``apply`` goes to both members and fails
when either fails, so the indexes never disagree about what they hold: a sync whose
embedding model fails leaves the binding ``unavailable`` for that read (a
``source_unavailable`` diagnostic naming the model), and the next read syncs again.
"""

from __future__ import annotations

from taskctx.fusion import FusedProvider
from taskctx.protocols import IndexProvider

__all__ = ["hybrid_provider"]


def hybrid_provider(
    vector: IndexProvider, lexical: IndexProvider | None = None, *, name: str = "hybrid"
) -> FusedProvider:
    """``lexical`` (default: ``taskctx_fts.FtsProvider()``) and ``vector`` fused by RRF,
    the vector member optional: its search failures degrade to lexical with a warning."""
    if lexical is None:
        from taskctx_fts import FtsProvider

        lexical = FtsProvider()
    return FusedProvider(
        name=name,
        providers=(lexical, vector),
        optional=frozenset({vector.name}),
        degrade=True,
    )
