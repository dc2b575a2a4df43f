"""The record store under test on each backend: a folder (SQLite) and a PostgreSQL database.

A test that asks for ``store_root`` runs once per backend; one marked ``sqlite_only``
(it inspects the SQLite file, its schema or its query plans) runs on SQLite alone.
"""

from __future__ import annotations

from pathlib import Path

import pytest

BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize ``store_root`` over the backends (SQLite alone under ``sqlite_only``)."""
    if "store_root" in metafunc.fixturenames:
        only_sqlite = metafunc.definition.get_closest_marker("sqlite_only") is not None
        metafunc.parametrize("store_root", ["sqlite"] if only_sqlite else BACKENDS, indirect=True)


@pytest.fixture
def store_root(request: pytest.FixtureRequest, tmp_path: Path) -> Path | str:
    """What ``RecordStore(root)`` opens: a fresh folder, or a fresh database's URL."""
    if request.param == "sqlite":
        return tmp_path / "state"
    url: str = request.getfixturevalue("pg_database")
    return url
