"""Follow-up from the command line: a printed package's aliases, cursor and next page;
one JSON value for all pages; sources as JSON; binding names that say which folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from taskctx.cli import main
from taskctx.statefiles import folder_state_dir

ENV = {"TASKCTX_LOAD_PLUGINS": "taskctx-workspace,taskctx-fts"}


def invoke(*args: str) -> Result:
    """``taskctx ARGS`` in process, stderr apart."""
    return CliRunner().invoke(main, list(args), env=ENV)


def _first_page(notes: Path, tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    result = invoke("read", str(notes), "-q", "paragraph", "--max-chars", "700", "--json")
    assert result.exit_code == 0, result.output
    saved = tmp_path / "page1.json"
    saved.write_text(result.output, encoding="utf-8")
    return saved, json.loads(result.output)


def test_next_reads_the_page_after_a_printed_package(notes: Path, tmp_path: Path) -> None:
    """--package FILE --next goes on: the same snapshot, no block of page 1 again, and an
    alias of page 1 names the same ref on page 2."""
    saved, first = _first_page(notes, tmp_path)
    assert first["has_more"]
    result = invoke(
        "read", str(notes), "--package", str(saved), "--next", "--max-chars", "700", "--json"
    )
    assert result.exit_code == 0, result.output
    second = json.loads(result.output)
    assert second["page"] == first["page"] + 1
    assert second["snapshot"] == first["snapshot"]
    seen = {json.dumps(b["ref"], sort_keys=True) for b in first["blocks"]}
    assert not {json.dumps(b["ref"], sort_keys=True) for b in second["blocks"]} & seen
    for alias in set(first["aliases"]) & set(second["aliases"]):
        assert first["aliases"][alias] == second["aliases"][alias]
    by_cursor = invoke(
        "read", str(notes), "--cursor", first["cursor"], "--max-chars", "700", "--json"
    )
    assert json.loads(by_cursor.output)["blocks"][0]["ref"] == second["blocks"][0]["ref"]


def test_more_says_which_command_reads_the_next_page(notes: Path) -> None:
    """The printed <more> names --cursor and the cursor itself."""
    result = invoke("read", str(notes), "-q", "paragraph", "--max-chars", "700")
    (more,) = [line for line in result.output.splitlines() if line.startswith("<more>")]
    assert "--cursor " in more
    assert more.rstrip("</more>").split("--cursor ")[1].split()[0]


def test_aliases_of_a_package_work_in_ref(notes: Path, tmp_path: Path) -> None:
    """--ref ref_N (or [[ref:ref_N]]) with --package delivers the ref that alias names."""
    saved, first = _first_page(notes, tmp_path)
    alias = first["blocks"][0]["alias"]
    for spelled in (alias, f"[[ref:{alias}]]"):
        result = invoke("read", str(notes), "--package", str(saved), "--ref", spelled, "--json")
        assert result.exit_code == 0, result.output
        block = json.loads(result.output)["blocks"][0]  # explicit refs come first
        assert block["ref"] == first["blocks"][0]["ref"]
        assert block["alias"] == alias


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--ref", "ref_1"], "'ref_1' is an alias: give --package FILE.json"),
        (["--next"], "--next needs --package FILE.json"),
        (["--cursor", "abc", "-q", "x"], "a cursor goes on with the query it was made for"),
    ],
)
def test_follow_up_mistakes_say_what_to_do(notes: Path, extra: list[str], message: str) -> None:
    """An alias without its package, --next without a package, a cursor with a query."""
    result = invoke("read", str(notes), *extra)
    assert result.exit_code == 2
    assert message in result.stderr


def test_an_alias_the_package_does_not_show_and_a_last_page(notes: Path, tmp_path: Path) -> None:
    """ref_99 is not in the package; --next after the last page says there is none."""
    saved, _ = _first_page(notes, tmp_path)
    unknown = invoke("read", str(notes), "--package", str(saved), "--ref", "ref_99")
    assert unknown.exit_code == 2
    assert "'ref_99' is not an alias the package" in unknown.stderr
    whole = invoke("read", str(notes), "-q", "paragraph", "--json")
    last = tmp_path / "last.json"
    last.write_text(whole.output, encoding="utf-8")
    done = invoke("read", str(notes), "--package", str(last), "--next")
    assert done.exit_code == 2
    assert "has no next page" in done.stderr
    broken = tmp_path / "broken.json"
    broken.write_text('{"not": "a package"}', encoding="utf-8")
    bad = invoke("read", str(notes), "--package", str(broken), "--ref", "ref_1")
    assert bad.exit_code == 2
    assert "is not a package printed by taskctx read --json" in bad.stderr


def test_json_with_all_pages_is_one_json_array(notes: Path) -> None:
    """Every page, in order, in one parseable value."""
    result = invoke(
        "read", str(notes), "-q", "paragraph", "--max-chars", "700", "--all-pages", "--json"
    )
    pages = json.loads(result.output)
    assert isinstance(pages, list)
    assert len(pages) > 1
    assert [p["page"] for p in pages] == list(range(1, len(pages) + 1))
    assert not pages[-1]["has_more"]


def test_nothing_to_read_says_so() -> None:
    """No PATH, source, entry or ref: a usage error naming what to give."""
    result = invoke("read", "-q", "anything")
    assert result.exit_code == 2
    assert "nothing to read" in result.stderr


def test_a_source_given_as_json_carries_structured_options(notes: Path) -> None:
    """KIND:{...} passes JSON values (a number, the binding id) to the factory; bad JSON
    names the problem."""
    spec = json.dumps({"root": str(notes), "chunk_chars": 900, "id": "mine"})
    result = invoke("read", "--source", f"task_workspace:{spec}", "-q", "paragraph", "--json")
    assert result.exit_code == 0, result.output
    package = json.loads(result.output)
    assert list(package["source_coverage"]) == ["mine"]
    for bad, message in (("{not json", "not valid JSON"), ('{"root": 1', "not valid JSON")):
        failed = invoke("read", "--source", f"task_workspace:{bad}")
        assert failed.exit_code == 2
        assert message in failed.stderr


def test_several_folders_are_named_by_folder_and_index_serves_read(tmp_path: Path) -> None:
    """Two PATHs bind files-<folder name>; taskctx index builds the partition a later
    taskctx read of the same folder uses (one index folder, not two)."""
    first, second = tmp_path / "docs", tmp_path / "src"
    for folder in (first, second):
        folder.mkdir()
        (folder / "a.md").write_text(f"# {folder.name}\n\nupload notes\n")
    both = invoke("read", str(first), str(second), "-q", "upload", "--json")
    assert sorted(json.loads(both.output)["source_coverage"]) == ["files-docs", "files-src"]
    lone = tmp_path / "lone"
    lone.mkdir()
    (lone / "a.md").write_text("upload")
    assert invoke("index", str(lone)).exit_code == 0
    assert invoke("read", str(lone), "-q", "upload").exit_code == 0
    assert len(list((folder_state_dir(lone).path / "index").iterdir())) == 1
