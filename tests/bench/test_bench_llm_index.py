"""The llm index bench measures fts, tantivy, vector and the hybrids in quick mode."""

from __future__ import annotations

from pathlib import Path

from bench.llm_index import PROVIDERS, QUICK
from bench.registry import by_name
from tests.bench.helpers import quick_result


def test_quick_run_measures_every_provider_and_knn(tmp_path: Path) -> None:
    """With the hash model in process (no torch, no network) every provider is measured
    on the synthetic corpus, numpy k-NN runs, the checks hold and no verdict is given."""
    benchmark = by_name()["llm_index"]
    assert benchmark.in_default_run is False
    result = quick_result("llm_index", tmp_path)
    assert result["corpus"]["documents"] == QUICK.synthetic_docs
    assert set(result["providers"]) == set(PROVIDERS)
    for name in PROVIDERS:
        measured = result["providers"][name]
        assert 0.0 <= measured["ndcg_at_10"] <= 1.0
        assert measured["warm_qps"] > 0
        assert measured["cold_qps"] > 0
        assert measured["build_s"] > 0
        assert measured["stats"]["bytes_on_disk"] > 0
    assert result["providers"]["vector"]["model"]["texts"] >= QUICK.synthetic_docs
    assert result["providers"]["hybrid-tantivy"]["model"]["reused"] >= QUICK.synthetic_docs
    assert result["embedding"]["documents"]["texts_per_s"] > 0
    assert result["knn"]["numpy"]["warm_qps"] > 0
    assert result["vector_same_top_k_as_numpy"] > 0.9
    assert all(result["checks"].values()), result["checks"]
    assert result["targets"]["applies"] is False
    assert result["targets"]["met"] is None
    assert result["venv"] is None
