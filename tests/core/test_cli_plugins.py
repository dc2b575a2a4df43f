"""``taskctx plugins``, ``--version`` and ``--help`` through click's CliRunner."""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import json
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from taskctx.cli import main
from taskctx.plugins import ALLOW_ENV, BLOCK_ENV
from tests.core.sites import SOURCE_PLUGIN

HAS_BUILTINS = importlib.util.find_spec("taskctx.builtins") is not None

GOOD_PLUGIN = SOURCE_PLUGIN.format(kind="cli_demo", extra="")

Install = Callable[[str, str, str, str], None]


@pytest.fixture
def install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Install]:
    """Install throwaway distributions ``(dist, version, module, source)`` on sys.path."""
    monkeypatch.delenv(ALLOW_ENV, raising=False)
    monkeypatch.delenv(BLOCK_ENV, raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    modules: list[str] = []

    def add(dist: str, version: str, module: str, source: str) -> None:
        info = tmp_path / f"{dist.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
        (info / "entry_points.txt").write_text(f"[taskctx]\n{module} = {module}\n")
        (tmp_path / f"{module}.py").write_text(textwrap.dedent(source))
        modules.append(module)
        importlib.invalidate_caches()

    yield add
    for module in modules:
        sys.modules.pop(module, None)
    importlib.invalidate_caches()


def run(*args: str, allow: str | None = None) -> Result:
    """Invoke ``taskctx`` with TASKCTX_LOAD_PLUGINS set to ``allow`` (unset if None)."""
    return CliRunner().invoke(main, list(args), env={ALLOW_ENV: allow}, catch_exceptions=False)


def records(result: Result) -> list[dict[str, Any]]:
    """The JSON array printed on stdout."""
    data = json.loads(result.stdout)
    assert isinstance(data, list)
    return data


def test_plugins_json_lists_installed_distribution(install: Install) -> None:
    """``plugins --json`` lists a loaded throwaway distribution with its registrations."""
    install("tcx-cli-demo", "3.1", "tcx_cli_demo_mod", GOOD_PLUGIN)
    result = run("plugins", "--json", allow="tcx-cli-demo")
    assert result.exit_code == 0, result.output
    [rec] = [r for r in records(result) if r["name"] == "tcx-cli-demo"]
    assert rec["version"] == "3.1"
    assert rec["status"] == "loaded"
    assert rec["hooks"] == ["register_source_kinds"]
    assert rec["registered"] == {"source_kinds": ["cli_demo"]}
    assert rec["builtin"] is False


def test_plugins_text_groups_by_distribution(install: Install) -> None:
    """The text listing shows distribution, version, entry point, hooks and registrations."""
    install("tcx-cli-demo", "3.1", "tcx_cli_demo_mod", GOOD_PLUGIN)
    result = run("plugins", allow="tcx-cli-demo")
    assert result.exit_code == 0, result.output
    assert "tcx-cli-demo 3.1" in result.stdout
    assert "tcx_cli_demo_mod = tcx_cli_demo_mod: loaded" in result.stdout
    assert "hooks: register_source_kinds" in result.stdout
    assert "source_kinds: cli_demo" in result.stdout


def test_all_shows_builtins_and_not_allowed(install: Install) -> None:
    """Built-ins and disallowed plugins are listed only with ``--all``."""
    install("tcx-cli-demo", "3.1", "tcx_cli_demo_mod", GOOD_PLUGIN)
    plain = records(run("plugins", "--json", allow=""))
    every = records(run("plugins", "--all", "--json", allow=""))
    assert all(not r["builtin"] for r in plain)
    assert "tcx-cli-demo" not in {r["name"] for r in plain}
    [demo] = [r for r in every if r["name"] == "tcx-cli-demo"]
    assert demo["status"] == "not_allowed"
    assert "tcx_cli_demo_mod" not in sys.modules
    builtins = [r["name"] for r in every if r["builtin"]]
    assert builtins == (["taskctx"] if HAS_BUILTINS else [])
    text = run("plugins", "--all", allow="").stdout
    assert "tcx_cli_demo_mod = tcx_cli_demo_mod: not_allowed" in text
    if HAS_BUILTINS:
        assert "(built-in)" in text


def test_failed_plugin_is_shown_with_error_without_all(install: Install) -> None:
    """A plugin failing at import appears with its error in text and JSON, plus a warning."""
    install("tcx-cli-broken", "0.9", "tcx_cli_broken_mod", "raise ImportError('no numpy')\n")
    install("tcx-cli-demo", "3.1", "tcx_cli_demo_mod", GOOD_PLUGIN)
    allow = "tcx-cli-broken,tcx-cli-demo"
    result = run("plugins", "--json", allow=allow)
    assert result.exit_code == 0, result.output
    by_name = {r["name"]: r for r in records(result)}
    assert by_name["tcx-cli-broken"]["status"] == "failed"
    assert "ImportError: no numpy" in by_name["tcx-cli-broken"]["error"]
    assert by_name["tcx-cli-demo"]["status"] == "loaded"
    assert "warning: taskctx plugin 'tcx-cli-broken' 0.9 failed" in result.stderr
    text = run("plugins", allow=allow).stdout
    assert "tcx-cli-broken 0.9" in text
    assert "failed" in text
    assert "error: import failed: ImportError: no numpy" in text


def test_no_plugins_message() -> None:
    """With nothing to show, ``plugins`` says so instead of printing nothing."""
    result = run("plugins", allow="")
    assert result.exit_code == 0
    assert "No plugins installed." in result.stdout


@pytest.mark.parametrize("command", [[], ["plugins"]])
def test_every_command_has_help(command: list[str]) -> None:
    """``--help`` works on the group and each command and describes it."""
    result = run(*command, "--help")
    assert result.exit_code == 0
    assert "Usage:" in result.stdout
    assert ("List installed plugins" if command else "deliver task context") in result.stdout


def test_version_option() -> None:
    """``--version`` prints the installed taskctx version."""
    result = run("--version")
    assert result.exit_code == 0
    assert result.stdout.strip() == f"taskctx, version {importlib.metadata.version('taskctx')}"


def test_python_dash_m_runs_the_cli() -> None:
    """``python -m taskctx`` is the same command."""
    done = subprocess.run(
        [sys.executable, "-m", "taskctx", "--version"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.startswith("taskctx, version ")
