"""Scoped reads of session memory come from the pinned version, in both modes.

The provider mode serves no history: a note changed between enumeration and readback
fails a line-scope read closed. The store mode serves pinned revisions: the same change
still delivers the pinned note's lines.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from taskctx_memory import ProviderMemorySource, TaskStateBinding, WorkingState
from taskctx_records import RecordStore

from taskctx import ContextBudget, ContextReadIntent, ContextRef, PluginHost, TaskContext
from taskctx.errors import StaleReaderError
from taskctx.protocols import ContextSource
from tests.core.sources import CueAfterEnumeration
from tests.plugins.memory.test_provider import DictProvider

PLAN = "first step\nsecond step\nthird step\n"
CHANGED = "changed first\nchanged second\n"
REF = ContextRef(binding="memory", path="session/s1/notes/plan", scope="lines:2-2")
INTENT = ContextReadIntent(query="", explicit_refs=(REF,), optional_selection="none")


def read_after_change(source: ContextSource, state: WorkingState, tmp_path: Path) -> list[str]:
    """Block contents of a line-scope read whose note is rewritten after enumeration."""
    wrapped = CueAfterEnumeration(source, lambda: state.note_write("plan", CHANGED))
    ctx = TaskContext("pinning", host=PluginHost(allow=[]), state_dir=tmp_path / "ctx")
    ctx.attach(wrapped, binding_id="memory")
    package = ctx.reader("c", budget=ContextBudget(max_chars=5000)).read(INTENT)
    return [b.content for b in package.blocks]


def test_provider_mode_line_scope_after_a_change_fails_closed(tmp_path: Path) -> None:
    """A provider-mode note changed after enumeration fails the scoped read (it was
    delivered as the new note's line under the old snapshot)."""
    provider = DictProvider()
    state = WorkingState(binding=TaskStateBinding(provider), session_id="s1")
    state.note_write("plan", PLAN)
    source = ProviderMemorySource(TaskStateBinding(provider), "s1")
    with pytest.raises(StaleReaderError, match="plan"):
        read_after_change(source, state, tmp_path)


def test_store_mode_line_scope_after_a_change_reads_the_pinned_note(tmp_path: Path) -> None:
    """A store-mode note changed after enumeration still reads as the pinned version."""
    with RecordStore(tmp_path / "state") as store:
        state = WorkingState(store, "s1")
        state.note_write("plan", PLAN)
        assert read_after_change(state.source(), state, tmp_path) == ["second step\n"]
