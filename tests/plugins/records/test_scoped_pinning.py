"""A record's scoped read comes from the pinned revision, even after the record changed."""

from __future__ import annotations

from pathlib import Path

from taskctx_records import RecordStore

from taskctx import ContextBudget, ContextReadIntent, ContextRef, PluginHost, TaskContext
from tests.core.sources import CueAfterEnumeration


def test_line_scope_after_an_update_reads_the_pinned_revision(
    tmp_path: Path, store_root: Path | str
) -> None:
    """A record rewritten after enumeration still reads, by line scope and whole, as the
    version the snapshot pinned: the store serves history, so nothing is mixed."""
    with RecordStore(store_root) as store:
        ref = store.put("one\ntwo\nthree\n", collection="notes")
        source = CueAfterEnumeration(
            store.source(),
            lambda: store.put("uno\ndos\n", collection="notes", record_id=ref.id),
        )
        ctx = TaskContext("pinning", host=PluginHost(allow=[]), state_dir=tmp_path / "ctx")
        ctx.attach(source, binding_id="records")
        refs = (
            ContextRef(binding="records", path=ref.id, scope="lines:2-3"),
            ContextRef(binding="records", path=ref.id),
        )
        intent = ContextReadIntent(query="", explicit_refs=refs, optional_selection="none")
        package = ctx.reader("c", budget=ContextBudget(max_chars=5000)).read(intent)
        assert [b.content for b in package.blocks] == ["two\nthree\n", "one\ntwo\nthree\n"]
