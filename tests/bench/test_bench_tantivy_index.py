"""The tantivy index bench runs fts, tantivy and raw tantivy side by side in quick mode."""

from __future__ import annotations

from pathlib import Path

from bench.registry import by_name
from bench.tantivy_index import PROVIDERS, QUICK
from tests.bench.helpers import assert_providers_measured, quick_result


def test_quick_run_measures_both_providers_and_raw_tantivy(tmp_path: Path) -> None:
    """Both providers are measured on the synthetic corpus, the checks hold, raw tantivy
    ranks the same index to the same quality, and no verdict is given in quick mode."""
    assert "tantivy_index" in by_name()
    result = quick_result("tantivy_index", tmp_path)
    assert_providers_measured(result, PROVIDERS, QUICK.synthetic_docs, QUICK.updates)
    for name in PROVIDERS:
        assert result["providers"][name]["stats"]["bytes_on_disk"] > 0
    beside = result["beside_raw"]
    assert beside["raw"]["qps"] > 0
    assert beside["provider"]["qps"] > 0
    assert abs(beside["raw_ndcg_at_10"] - result["providers"]["tantivy"]["ndcg_at_10"]) < 0.02
