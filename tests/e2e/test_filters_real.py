"""The issue's structural filter on real sources: a folder and a SQLite record store
(issue 14 §1)."""

from __future__ import annotations

from pathlib import Path

import pytest
from taskctx_records import RecordStore
from taskctx_workspace import TaskWorkspace

from taskctx import ContextReadIntent, PluginHost, TaskContext, UnknownSourceKindError
from taskctx.model import CoverageOutcome, CoverageReason


def test_source_kinds_record_store_on_a_workspace_and_a_record_store(tmp_path: Path) -> None:
    """filters={"source_kinds": ["record_store"]} reads the records, reports the workspace
    not_searched, and a misspelt kind raises naming both attached kinds."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.md").write_text("the upload times out\n", encoding="utf-8")
    with RecordStore(tmp_path / "state") as store:
        store.put({"status": "failed"}, collection="observations", scope={"task_id": "t"})
        host = PluginHost(allow=["taskctx-workspace", "taskctx-records"])
        ctx = TaskContext("t", host=host)
        ctx.attach(TaskWorkspace(project, mode="read_only").source(), binding_id="files")
        ctx.attach(store.source(scope={"task_id": "t"}), binding_id="records")
        intent = ContextReadIntent(filters={"source_kinds": ["record_store"]})
        package = ctx.reader(consumer="model").read(intent)
        assert [b.binding_id for b in package.blocks] == ["records"]
        files = package.source_coverage["files"]
        assert files.outcome is CoverageOutcome.NOT_SEARCHED
        assert files.reasons == (CoverageReason.SOURCE_KIND_EXCLUDED.value,)
        with pytest.raises(UnknownSourceKindError, match="'record_store', 'task_workspace'"):
            ctx.reader(consumer="model").read(
                ContextReadIntent(filters={"source_kinds": ["records"]})
            )
