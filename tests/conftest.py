"""Fixtures shared by every test: an isolated state directory and cursor key."""

from __future__ import annotations

from pathlib import Path

import pytest

# PostgreSQL fixtures for every test that asks for them (re-exported for pytest)
from tests.pgfixtures import pg_cluster, pg_database, pg_dsn, pg_private_cluster

__all__ = ["pg_cluster", "pg_database", "pg_dsn", "pg_private_cluster"]


@pytest.fixture(autouse=True)
def _isolated_state(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Every test gets its own TASKCTX_STATE_DIR and no inherited plugin filters."""
    state = tmp_path_factory.mktemp("taskctx-state")
    monkeypatch.setenv("TASKCTX_STATE_DIR", str(state))
    monkeypatch.delenv("TASKCTX_CURSOR_KEY", raising=False)
    monkeypatch.delenv("TASKCTX_LOAD_PLUGINS", raising=False)
    monkeypatch.delenv("TASKCTX_BLOCK_PLUGINS", raising=False)
    return state
