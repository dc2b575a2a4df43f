"""Fixtures of the haystack tests: telemetry off before haystack is imported, no network."""

from __future__ import annotations

import os

os.environ["HAYSTACK_TELEMETRY_ENABLED"] = "False"  # read once, when haystack is imported

from collections.abc import Iterator
from pathlib import Path

import pytest
import pytest_socket
from taskctx_records import RecordStore


@pytest.fixture(autouse=True)
def no_network() -> Iterator[None]:
    """Nothing in these tests opens a network socket (telemetry included)."""
    pytest_socket.disable_socket(allow_unix_socket=True)
    yield
    pytest_socket.enable_socket()


@pytest.fixture
def record_store(tmp_path: Path) -> Iterator[RecordStore]:
    """A real SQLite RecordStore in a temporary folder."""
    store = RecordStore(tmp_path / "records")
    yield store
    store.close()
