"""The postgres index bench runs fts and postgres side by side in quick mode."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.postgres_index import PROVIDERS, QUICK
from bench.registry import by_name
from tests.bench.helpers import assert_providers_measured, quick_result

pytestmark = pytest.mark.postgres


def test_quick_run_measures_both_providers_and_leaves_no_database(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both providers are measured on the synthetic corpus, the checks hold, the second
    opener holds every document, and the bench's database is dropped."""
    import psycopg

    monkeypatch.setenv("TASKCTX_PG_DSN", pg_dsn)
    assert "postgres_index" in by_name()
    result = quick_result("postgres_index", tmp_path)
    assert_providers_measured(result, PROVIDERS, QUICK.synthetic_docs, QUICK.updates)
    assert result["providers"]["postgres"]["second_opener"]["documents_held"] == (
        QUICK.synthetic_docs
    )
    with psycopg.connect(pg_dsn) as conn:
        left = conn.execute(
            "SELECT count(*) FROM pg_database WHERE datname LIKE 'taskctx_bench_%'"
        ).fetchone()
    assert left == (0,)
