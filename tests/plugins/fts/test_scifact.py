"""Quality on BEIR SciFact (``beir/scifact`` of the eval data, :mod:`bench.evaldata`;
skipped when absent)."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest
from taskctx_fts import FtsProvider

from bench.evaldata import eval_root, missing_reason
from tests.plugins.fts.conftest import KEY

SCIFACT = eval_root() / "beir" / "scifact"


@pytest.mark.skipif(not (SCIFACT / "corpus.jsonl").is_file(), reason=missing_reason(SCIFACT))
def test_scifact_ndcg_at_10(tmp_path: Path) -> None:
    """nDCG@10 over the 300 test queries is at least 0.68, with exact matching counts."""
    from bench.fts import load_scifact, ndcg_at

    corpus = load_scifact(SCIFACT)
    assert len(corpus.documents) == 5183
    assert len(corpus.queries) == 300
    partition = FtsProvider().open_partition(KEY, tmp_path)
    try:
        partition.apply(corpus.documents, [])
        scores = []
        for query_id, text in corpus.queries.items():
            result = partition.search(text, None, 10)
            assert result.searchable
            assert result.considered is not None
            assert result.considered >= len(result.hits)
            scores.append(ndcg_at([hit.doc_id for hit in result.hits], corpus.qrels[query_id]))
        assert statistics.fmean(scores) >= 0.68
    finally:
        partition.close()
