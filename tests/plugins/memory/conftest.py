"""Fixtures of the working-state tests: a real record store in a temporary folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from taskctx_memory import WorkingState
from taskctx_records import RecordStore


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """The root folder of the record store."""
    return tmp_path / "state"


@pytest.fixture
def store(root: Path) -> Iterator[RecordStore]:
    """A fresh record store under ``root``."""
    with RecordStore(root) as store:
        yield store


@pytest.fixture
def state(store: RecordStore) -> WorkingState:
    """The embedded working state of session ``s1``."""
    return WorkingState(store, "s1")
