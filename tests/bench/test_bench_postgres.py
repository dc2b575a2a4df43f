"""The PostgreSQL bench runs both backends side by side in quick mode."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.postgres import BACKENDS, QUICK
from bench.registry import by_name
from tests.bench.helpers import quick_result

pytestmark = pytest.mark.postgres


def test_quick_run_measures_both_backends_and_their_ratios(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every step is measured on SQLite and PostgreSQL, with a ratio per step, checks that
    hold and no databases left behind."""
    import psycopg

    monkeypatch.setenv("TASKCTX_PG_DSN", pg_dsn)
    assert "postgres" in by_name()
    result = quick_result("postgres", tmp_path)
    assert set(result["backends"]) == set(BACKENDS)
    for backend in BACKENDS:
        measured = result["backends"][backend]
        assert measured["writes"]["put"]["records"] == QUICK.puts
        assert measured["writes"]["put_many"]["rps"] > 0
        assert [s["records"] for s in measured["source"]] == list(QUICK.source_sizes)
        assert all(s["provider"] == "fts" for s in measured["source"])
    assert all(result["checks"].values()), result["checks"]
    assert all(ratio > 0 for ratio in result["ratios_postgres_over_sqlite"].values())
    assert result["process_peak_rss_bytes"] > 0
    with psycopg.connect(pg_dsn) as conn:
        left = conn.execute(
            "SELECT count(*) FROM pg_database WHERE datname LIKE 'taskctx_bench_%'"
        ).fetchone()
    assert left == (0,)
