"""`taskctx index PATH...`: builds the index of folders and reports what it did."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from taskctx.cli import main
from taskctx.statefiles import folder_state_dir


def test_index_reports_counts_as_json(tmp_path: Path) -> None:
    """The JSON report names the folder, the provider and the counts."""
    (tmp_path / "a.txt").write_text("alpha")
    (tmp_path / "b.md").write_text("# B\n\nbeta\n")
    result = CliRunner().invoke(
        main, ["index", str(tmp_path), "--json"], env={"TASKCTX_LOAD_PLUGINS": "taskctx-workspace"}
    )
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.output)
    assert row["path"] == str(tmp_path)
    assert (row["added"], row["removed"]) == (2, 0)
    assert row["mode"] == "diff"


def test_index_text_report_and_missing_plugin(tmp_path: Path) -> None:
    """The text report is one line per folder; without the workspace plugin, a clear error."""
    (tmp_path / "a.txt").write_text("alpha")
    ok = CliRunner().invoke(
        main, ["index", str(tmp_path)], env={"TASKCTX_LOAD_PLUGINS": "taskctx-workspace"}
    )
    assert ok.exit_code == 0, ok.output
    assert "added 1, updated 0, removed 0, unchanged 0" in ok.output
    missing = CliRunner().invoke(main, ["index", str(tmp_path)], env={"TASKCTX_LOAD_PLUGINS": ""})
    assert missing.exit_code != 0
    assert "taskctx-workspace" in missing.output


def test_second_index_run_reindexes_only_changes(tmp_path: Path) -> None:
    """With the persistent fts provider a second run indexes nothing, a third only a change."""
    folder = tmp_path / "project"
    folder.mkdir()
    for n in range(5):
        (folder / f"f{n}.txt").write_text(f"file number {n}")
    env = {"TASKCTX_LOAD_PLUGINS": "taskctx-workspace,taskctx-fts"}

    def run() -> dict[str, object]:
        result = CliRunner().invoke(main, ["index", str(folder), "--json"], env=env)
        assert result.exit_code == 0, result.output
        (row,) = json.loads(result.output)
        assert row["provider"] == "fts"
        return dict(row)

    first = run()
    assert (first["added"], first["updated"], first["unchanged"]) == (5, 0, 0)
    second = run()
    assert (second["added"], second["updated"], second["unchanged"]) == (0, 0, 5)
    (folder / "f1.txt").write_text("file number one, rewritten")
    (folder / "f4.txt").unlink()
    third = run()
    assert (third["added"], third["updated"], third["removed"], third["unchanged"]) == (0, 1, 1, 3)
    assert not (folder / ".taskctx").exists()  # the index lives in the state folder
    assert (folder_state_dir(folder).path / "index").is_dir()
