"""The cookiecutter template renders a source plugin whose own tests pass once installed."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from cookiecutter.exceptions import FailedHookException  # type: ignore[import-untyped]
from cookiecutter.main import cookiecutter  # type: ignore[import-untyped]

from taskctx.testing import SourceContract
from tests.core.test_author_surface import surface_problems
from tests.core.test_docs import code_blocks, sections

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "cookiecutter-source-plugin"

GENERATED_FILES = [
    ".github/workflows/ci.yml",
    ".gitignore",
    "LICENSE",
    "README.md",
    "pyproject.toml",
    "src/taskctx_json_folder/__init__.py",
    "src/taskctx_json_folder/plugin.py",
    "src/taskctx_json_folder/py.typed",
    "src/taskctx_json_folder/source.py",
    "tests/test_source.py",
]

Render = Callable[..., Path]


@pytest.fixture
def render(tmp_path: Path) -> Render:
    """Render the template without prompts into ``tmp_path/out``; returns the project dir."""
    config = tmp_path / "cookiecutter.yaml"
    config.write_text(
        f"cookiecutters_dir: {tmp_path / 'cookiecutters'}\nreplay_dir: {tmp_path / 'replay'}\n",
        encoding="utf-8",
    )

    def _render(**context: str) -> Path:
        project = cookiecutter(
            str(TEMPLATE),
            no_input=True,
            extra_context=context,
            output_dir=str(tmp_path / "out"),
            config_file=str(config),
        )
        return Path(project)

    return _render


def files_of(project: Path) -> list[str]:
    """Every file under ``project``, as sorted POSIX paths relative to it."""
    return sorted(p.relative_to(project).as_posix() for p in project.rglob("*") if p.is_file())


def test_template_generates_exactly_these_files(render: Render) -> None:
    """The default answers give taskctx-json-folder with exactly the listed files."""
    project = render(plugin_name="json folder")
    assert project.name == "taskctx-json-folder"
    assert files_of(project) == GENERATED_FILES


def test_names_are_derived_from_the_plugin_name(render: Render) -> None:
    """Spaces and underscores give a hyphenated distribution and an underscored package."""
    description = 'Pages of the team wiki, "quoted" & <escaped> \\ too'
    project = render(
        plugin_name="Team_wiki pages", description=description, author="Ada L.", author_email=""
    )
    assert project.name == "taskctx-team-wiki-pages"
    package = project / "src" / "taskctx_team_wiki_pages"
    assert sorted(p.name for p in package.iterdir()) == [
        "__init__.py",
        "plugin.py",
        "py.typed",
        "source.py",
    ]
    pyproject = (project / "pyproject.toml").read_text(encoding="utf-8")
    assert 'name = "taskctx-team-wiki-pages"' in pyproject
    entry_point = 'team-wiki-pages = "taskctx_team_wiki_pages.plugin"'
    assert f"\n[project.entry-points.taskctx]\n{entry_point}\n" in pyproject
    if sys.version_info >= (3, 11):
        import tomllib

        metadata = tomllib.loads(pyproject)["project"]
        assert metadata["name"] == "taskctx-team-wiki-pages"
        assert metadata["description"] == description  # quoted safely for TOML
        assert metadata["authors"] == [{"name": "Ada L."}]  # no email given: none written
        assert metadata["entry-points"] == {
            "taskctx": {"team-wiki-pages": "taskctx_team_wiki_pages.plugin"}
        }
    source = (package / "source.py").read_text(encoding="utf-8")
    assert 'kind = "team_wiki_pages"' in source
    assert "class TeamWikiPagesSource:" in source
    tests = (project / "tests" / "test_source.py").read_text(encoding="utf-8")
    assert 'DISTRIBUTION = "taskctx-team-wiki-pages"' in tests
    assert "class TestTeamWikiPagesContract(SourceContract):" in tests
    ci = (project / ".github" / "workflows" / "ci.yml").read_text(encoding="utf-8")
    assert "${{ matrix.python-version }}" in ci  # copied, not rendered by Jinja
    leftovers = [
        path for path in files_of(project) if "{{" in (project / path).read_text(encoding="utf-8")
    ]
    assert leftovers == [".github/workflows/ci.yml"]


def test_generated_package_imports_only_the_taskctx_surface(render: Render) -> None:
    """The generated plugin's package imports from ``taskctx`` itself only (no kernel
    submodule, nothing from ``taskctx.testing``); its tests may use the kits."""
    project = render(plugin_name="json folder")
    problems = {
        path.name: surface_problems(path.read_text(encoding="utf-8"), frozenset())
        for path in sorted((project / "src").rglob("*.py"))
    }
    assert len(problems) == 3
    assert all(not found for found in problems.values()), problems


def _toml_of_section(page: Path, heading: str) -> str:
    """The one ``toml`` block of the ``##`` section ``heading`` of ``page``."""
    body = sections(page.read_text(encoding="utf-8"))[heading]
    (block,) = [b.source for b in code_blocks(body) if b.info == "toml"]
    return block


def test_docs_packaging_example_agrees_with_the_template(render: Render) -> None:
    """docs/writing-plugins.md packages ``json folder`` with the distribution name and the
    entry point (``json-folder``, the normalised distribution name without its prefix)
    the template generates for it."""
    pyproject = (render(plugin_name="json folder") / "pyproject.toml").read_text(encoding="utf-8")
    documented = _toml_of_section(
        ROOT / "docs" / "writing-plugins.md", "Packaging: the entry point"
    )
    entry_point = 'json-folder = "taskctx_json_folder.plugin"'
    assert f"\n[project.entry-points.taskctx]\n{entry_point}\n" in pyproject
    assert f"[project.entry-points.taskctx]\n{entry_point}\n" in documented
    assert 'name = "taskctx-json-folder"' in pyproject
    assert 'name = "taskctx-json-folder"' in documented


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("", "it is empty"),
        ("1password", "must start with a letter"),
        ("-json", "must start with a letter"),
        ("json folder!", "only letters, digits, spaces"),
        ("json.folder", "only letters, digits, spaces"),
        ("jsön", "only letters, digits, spaces"),
        ("json_", "must end with a letter or a digit"),
        ("json  folder", "one space"),
        ("taskctx json", "leave out the 'taskctx' prefix"),
        ("a" * 41, "keep it to 40"),
    ],
)
def test_bad_names_are_refused(
    render: Render, tmp_path: Path, capfd: pytest.CaptureFixture[str], name: str, why: str
) -> None:
    """The pre-generation hook refuses a bad name with a clear message and writes nothing."""
    with pytest.raises(FailedHookException):
        render(plugin_name=name)
    err = capfd.readouterr().err
    assert "invalid plugin_name" in err
    assert why in err
    assert not any((tmp_path / "out").iterdir())


def _copy_core(target: Path) -> Path:
    """A copy of ``core/`` without build output, so building it leaves the repo untouched."""
    ignore = shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__")
    return Path(shutil.copytree(ROOT / "core", target, ignore=ignore))


def _ci_step(project: Path, name: str) -> str:
    """The shell script of the generated CI workflow's step ``name``."""
    lines = (project / ".github" / "workflows" / "ci.yml").read_text(encoding="utf-8").splitlines()
    start = lines.index(f"      - name: {name}") + 1
    run = lines[start].strip()
    if run != "run: |":
        return run.removeprefix("run: ")
    body = []
    for line in lines[start + 1 :]:
        if not line.startswith(" " * 10):
            break
        body.append(line[10:])
    return "\n".join(body)


def test_generated_ci_says_where_taskctx_must_come_from(render: Render, tmp_path: Path) -> None:
    """Without TASKCTX_SOURCE the CI's install step fails, saying what to set."""
    project = render(plugin_name="json folder")
    env = {key: value for key, value in os.environ.items() if key != "TASKCTX_SOURCE"}
    result = subprocess.run(
        ["bash", "-ec", _ci_step(project, "Install taskctx")],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    assert "TASKCTX_SOURCE is not set" in result.stdout


def _run(command: list[str], cwd: Path, env: dict[str, str], timeout: float) -> str:
    """Run ``command``; fail the test with its output if it fails."""
    result = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"{' '.join(command)} exited {result.returncode}:\n{output}"
    return output


@pytest.mark.slow
def test_generated_project_passes_its_tests_in_a_fresh_venv(render: Render, tmp_path: Path) -> None:
    """In a new venv with core and the generated plugin installed, its own tests pass."""
    venv = tmp_path / "venv"
    made = subprocess.run(
        [sys.executable, "-m", "venv", str(venv)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if made.returncode != 0:
        pytest.skip(f"python -m venv is unavailable here: {made.stderr.strip()[-300:]}")
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")

    project = render(plugin_name="json folder")
    env = {key: value for key, value in os.environ.items() if not key.startswith("TASKCTX_")}
    for key in ("PYTHONPATH", "PYTHONHOME", "PYTEST_ADDOPTS", "VIRTUAL_ENV"):
        env.pop(key, None)
    env["TASKCTX_STATE_DIR"] = str(tmp_path / "state")

    core = _copy_core(tmp_path / "core")
    # the generated CI's own steps: taskctx from TASKCTX_SOURCE (a path here), then ".[test]"
    env["PATH"] = f"{python.parent}{os.pathsep}{env.get('PATH', '')}"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    for step in ("Install taskctx", "Install"):
        script = _ci_step(project, step)
        _run(["bash", "-ec", script], project, {**env, "TASKCTX_SOURCE": str(core)}, timeout=300)

    output = _run([str(python), "-m", "pytest", "-p", "no:cacheprovider"], project, env, 180)
    summary = output.strip().splitlines()[-1]
    passed = re.search(r"(\d+) passed", summary)
    assert passed is not None, output
    contract_rules = [name for name in dir(SourceContract) if name.startswith("test_")]
    assert int(passed.group(1)) >= len(contract_rules) + 5, output
    assert not re.search(r"\d+ (failed|error)", summary), output
