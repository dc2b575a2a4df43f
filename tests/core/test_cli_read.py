"""`taskctx read`: direct entries, source kinds by name, JSON output, clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from taskctx.cli import main
from taskctx.model import ContextPackage


def test_read_direct_entries_renders_aliases() -> None:
    """Direct entries are read and rendered with aliases and coverage."""
    result = CliRunner().invoke(
        main,
        [
            "read",
            "--put-required",
            "instruction=Be brief.",
            "--put",
            "information=fact",
            "--query",
            "fact",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "[[ref:ref_1]]" in result.output
    assert "Be brief." in result.output
    assert '<coverage binding="_direct" status="complete"' in result.output


def test_read_json_is_a_valid_package(tmp_path: Path) -> None:
    """--json prints a package that validates as ContextPackage."""
    note = tmp_path / "note.md"
    note.write_text("# Note\n\nremember the timeout\n")
    result = CliRunner().invoke(main, ["read", "--put-file", f"information={note}", "--json"])
    assert result.exit_code == 0, result.output
    package = ContextPackage.model_validate_json(result.output)
    assert package.blocks[0].content.startswith("# Note")


@pytest.mark.usefixtures("with_memory_kind")
def test_read_source_by_kind_name_and_all_pages() -> None:
    """--source KIND:k=v attaches a source by kind; --all-pages follows the cursor and,
    with --json, prints one JSON array of the pages."""
    args = [
        "read",
        "--source",
        "memory:a.txt=alpha,b.txt=beta,c.txt=gamma",
        "--max-blocks",
        "1",
        "--all-pages",
        "--json",
    ]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    pages = json.loads(result.output)
    assert [p["blocks"][0]["content"] for p in pages] == ["alpha", "beta", "gamma"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["read", "--source", "nope"], "nope"),
        (["read", "--put", "novalue"], "ROLE=VALUE"),
        (["read", "--put-required", "i=" + "x" * 50, "--max-chars", "10"], "--max-chars 10"),
        (["read", "--ref", "not-a-ref"], "not a canonical context ref"),
    ],
)
def test_read_errors_are_clear(args: list[str], message: str) -> None:
    """Bad input exits non-zero with a message naming what was wrong, no traceback."""
    result = CliRunner().invoke(main, args)
    assert result.exit_code != 0
    assert message in result.output
    assert "Traceback" not in result.output


def test_read_folder_without_workspace_plugin_names_the_distribution(tmp_path: Path) -> None:
    """A folder needs taskctx-workspace; the error says so."""
    result = CliRunner().invoke(main, ["read", str(tmp_path)], env={"TASKCTX_LOAD_PLUGINS": ""})
    assert result.exit_code != 0
    assert "task_workspace" in result.output
    assert "taskctx-workspace" in result.output


def test_a_missing_workspace_root_is_an_error_and_is_not_made(tmp_path: Path) -> None:
    """--source task_workspace:root=TYPO fails like a plain path does, naming the folder,
    and makes nothing; host.source does the same for read_only, and read_write makes it."""
    from taskctx_workspace import WorkspaceNotFoundError

    from taskctx import PluginHost

    typo = tmp_path / "TYPO"
    for args in (["read", "--source", f"task_workspace:root={typo}"], ["read", str(typo)]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code != 0, result.output
        assert str(typo) in result.output
        assert "Traceback" not in result.output
        assert not typo.exists()
    host = PluginHost(allow=["taskctx-workspace"])
    with pytest.raises(WorkspaceNotFoundError, match="TYPO"):
        host.source("task_workspace", root=str(typo))
    assert not typo.exists()
    host.source("task_workspace", root=str(typo), mode="read_write")
    assert typo.is_dir()
    host.source("task_workspace", root=str(tmp_path / "made"), create=True)
    assert (tmp_path / "made").is_dir()


@pytest.mark.usefixtures("with_memory_kind")
def test_read_provider_picks_the_index_provider() -> None:
    """--provider NAME ranks with that provider (structural: not ranked, and coverage says
    why); an unknown name is an error naming it."""
    source = "memory:a.txt=the garden,b.txt=the upload times out"
    args = ["read", "--source", source, "--query", "upload", "--json"]
    result = CliRunner().invoke(main, [*args, "--provider", "structural"])
    assert result.exit_code == 0, result.output
    package = ContextPackage.model_validate_json(result.output)
    (coverage,) = package.source_coverage.values()
    assert "no_lexical_provider" in [str(reason) for reason in coverage.reasons]
    unknown = CliRunner().invoke(main, [*args, "--provider", "no-such-provider"])
    assert unknown.exit_code != 0
    assert "no-such-provider" in unknown.output
    assert "Traceback" not in unknown.output
