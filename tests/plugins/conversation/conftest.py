"""Fixtures of the conversation tests: a real working state on a real record store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from taskctx_memory import WorkingState
from taskctx_records import RecordStore


@pytest.fixture
def state(tmp_path: Path) -> Iterator[WorkingState]:
    """A real working state (session ``s1``) on a real record store, with a note and a task."""
    with RecordStore(tmp_path / "state") as store:
        working = WorkingState(store, "s1")
        working.note_write("cause", "uploads over 30 s fail")
        working.task_add("raise the timeout")
        yield working
