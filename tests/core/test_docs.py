"""The docs stay true: hooks documented exactly, code blocks run, links resolve, CLI has help."""

from __future__ import annotations

import asyncio
import inspect
import re
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from taskctx import ContextRef, PluginHost, hookspecs
from taskctx.cli import main
from taskctx.errors import NotFoundError
from taskctx.testing import FileIOHandlerContract, IndexProviderContract, SourceContract

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
HOOKS_MD = DOCS / "hooks.md"
DOC_FILES = [*sorted(DOCS.glob("*.md")), README]

_FENCE = re.compile(r"^(?P<fence>```+|~~~+)(?P<info>.*)$")
_HEADING = re.compile(r"^(?P<level>#{1,6})\s+(?P<text>.+?)\s*$")
_CALL = re.compile(r"`?(?P<name>[A-Za-z_]\w*)\((?P<params>[^)]*)\)`?")
_ANCHOR = re.compile(r'<a id="(?P<id>[^"]+)"></a>')
_LINK = re.compile(r"\[[^\]]*\]\((?P<target>[^)\s]+)\)")


def hookspec_functions() -> dict[str, Callable[..., Any]]:
    """Every hookspec in ``taskctx.hookspecs``, by name."""
    marker = f"{hookspecs.PROJECT_NAME}_spec"
    return {
        name: value
        for name, value in vars(hookspecs).items()
        if callable(value) and hasattr(value, marker)
    }


def signature_of(function: Callable[..., Any]) -> str:
    """``name(param: annotation, ...)``: the heading a hook's section must contain, each
    parameter with its annotation exactly as the hookspec writes it."""
    params = ", ".join(
        f"{name}: {parameter.annotation}" if parameter.annotation is not parameter.empty else name
        for name, parameter in inspect.signature(function).parameters.items()
    )
    return f"{function.__name__}({params})"


def _heading_lines(text: str) -> Iterator[tuple[int, int, str]]:
    """``(line index, level, heading text)`` of every Markdown heading outside fences."""
    fence: str | None = None
    for number, line in enumerate(text.splitlines()):
        opening = _FENCE.match(line)
        if opening is not None:
            marker = opening["fence"]
            if fence is None:
                fence = marker
            elif line.strip() == fence:
                fence = None
            continue
        match = None if fence is not None else _HEADING.match(line)
        if match is not None:
            yield number, len(match["level"]), match["text"]


def headings(text: str) -> list[str]:
    """The Markdown headings of ``text`` outside code fences."""
    return [heading for _, _, heading in _heading_lines(text)]


def sections(text: str, level: int = 2) -> dict[str, str]:
    """Heading -> body (up to the next heading of ``level`` or higher) for each heading of
    ``level``."""
    lines = text.splitlines(keepends=True)
    found = [(n, lv, h) for n, lv, h in _heading_lines(text) if lv <= level]
    bodies: dict[str, str] = {}
    for index, (number, heading_level, heading) in enumerate(found):
        if heading_level != level:
            continue
        end = found[index + 1][0] if index + 1 < len(found) else len(lines)
        bodies[heading] = "".join(lines[number + 1 : end])
    return bodies


class CodeBlock:
    """One fenced code block: its info string, first code line number and source."""

    def __init__(self, info: str, line: int, source: str) -> None:
        self.info = info
        self.line = line
        self.source = source

    @property
    def runs(self) -> bool:
        """Whether the docs test executes this block (``python``, not ``python skip``)."""
        return self.info.split() == ["python"]


def code_blocks(text: str) -> Iterator[CodeBlock]:
    """Every fenced block of ``text`` in order, with the line its code starts on."""
    lines = text.splitlines(keepends=True)
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index].rstrip("\n"))
        if opening is None:
            index += 1
            continue
        fence, start = opening["fence"], index + 1
        end = start
        while end < len(lines) and lines[end].rstrip("\n").strip() != fence:
            end += 1
        yield CodeBlock(opening["info"].strip(), start + 1, "".join(lines[start:end]))
        index = end + 1


def run_blocks(path: Path) -> dict[str, Any]:
    """Execute the ``python`` blocks of ``path`` in order in one namespace and return it."""
    namespace: dict[str, Any] = {"__name__": "__main__"}
    for block in code_blocks(path.read_text(encoding="utf-8")):
        if not block.runs:
            continue
        # pad so tracebacks show the line numbers of the Markdown file
        code = compile("\n" * (block.line - 1) + block.source, str(path), "exec")
        failure: str | None = None
        try:
            exec(code, namespace)
        except Exception as exc:
            tb = exc.__traceback__
            frames = traceback.extract_tb(tb)
            where = [f for f in frames if f.filename == str(path)]
            line = where[-1].lineno if where else block.line
            failure = (
                f"{path.relative_to(ROOT)}: the python block at line {block.line} raised at "
                f"line {line}:\n"
                + "".join(traceback.format_exception(type(exc), exc, tb.tb_next if tb else None))
            )
        if failure is not None:
            pytest.fail(failure, pytrace=False)
    return namespace


NEEDS_POSTGRES = {"postgres.md"}
"""Pages whose examples run against a PostgreSQL database (``TASKCTX_PG_URL``, and
``TASKCTX_PG_INDEX_URL`` for the index provider: the same fresh database)."""


@pytest.fixture
def docs_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Path:
    """A temporary working directory and a host environment with only built-ins (and for
    a page in NEEDS_POSTGRES, a fresh database in ``TASKCTX_PG_URL``)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TASKCTX_LOAD_PLUGINS", "")
    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path / "llm-user"))  # never the real one
    for name in ("TASKCTX_EMBEDDING_MODEL", "TASKCTX_SELECTOR_MODEL", "TASKCTX_SELECTOR_AUDIT"):
        monkeypatch.delenv(name, raising=False)
    page = getattr(request.node, "callspec", None)
    path = page.params.get("path") if page is not None else None
    if isinstance(path, Path) and path.name in NEEDS_POSTGRES:
        database = request.getfixturevalue("pg_database")
        monkeypatch.setenv("TASKCTX_PG_URL", database)
        monkeypatch.setenv("TASKCTX_PG_INDEX_URL", database)
    return tmp_path


# -- the hook reference -----------------------------------------------------------------


def test_there_are_hookspecs_to_document() -> None:
    """The hookspec discovery finds the eight register_* hooks."""
    assert sorted(hookspec_functions()) == [
        "register_cli_sources",
        "register_commands",
        "register_file_io_handlers",
        "register_index_providers",
        "register_request_filters",
        "register_scoped_readers",
        "register_selectors",
        "register_source_kinds",
    ]


@pytest.mark.parametrize("name", sorted(hookspec_functions()))
def test_every_hookspec_is_documented_with_its_signature(name: str) -> None:
    """docs/hooks.md has an anchor and a ``##`` heading that is the hook's exact signature."""
    text = HOOKS_MD.read_text(encoding="utf-8")
    signature = signature_of(hookspec_functions()[name])
    assert signature in sections(text), f"docs/hooks.md has no `## {signature}` heading"
    assert name in {m["id"] for m in _ANCHOR.finditer(text)}, f'no <a id="{name}"></a>'


HOOK_SECTION_PARTS = ("**Parameters.**", "**When it is called.**", "**Returns.**", "**Example.**")


@pytest.mark.parametrize("name", sorted(hookspec_functions()))
def test_every_hook_section_has_the_required_parts(name: str) -> None:
    """Each hook's section names its parameters, says when it is called and what it
    returns or registers, and has a runnable ``@hookimpl`` example of that hook."""
    function = hookspec_functions()[name]
    body = sections(HOOKS_MD.read_text(encoding="utf-8"))[signature_of(function)]
    missing = [part for part in HOOK_SECTION_PARTS if part not in body]
    assert not missing, f"the section of {name} lacks {missing}"
    for parameter in inspect.signature(function).parameters:
        assert f"`{parameter}`" in body, f"the section of {name} does not name `{parameter}`"
    examples = [b.source for b in code_blocks(body) if b.runs]
    assert any("@hookimpl" in e and f"def {name}(" in e for e in examples), (
        f"the section of {name} has no runnable @hookimpl example implementing it"
    )


def test_hooks_md_documents_no_hook_that_does_not_exist() -> None:
    """Every signature-shaped heading in docs/hooks.md is a real hookspec, spelled exactly."""
    specs = {name: signature_of(fn) for name, fn in hookspec_functions().items()}
    documented = []
    for heading in headings(HOOKS_MD.read_text(encoding="utf-8")):
        match = _CALL.search(heading)
        if match is None:
            continue
        documented.append(match["name"])
        assert match["name"] in specs, f"docs/hooks.md documents unknown hook {heading!r}"
        assert specs[match["name"]] in heading, f"{heading!r} is not {specs[match['name']]!r}"
    assert sorted(documented) == sorted(specs), "each hook has exactly one section"


# -- runnable code blocks ---------------------------------------------------------------


@pytest.mark.parametrize("path", DOC_FILES, ids=[p.name for p in DOC_FILES])
def test_python_blocks_run(path: Path, docs_env: Path) -> None:
    """Every ```python block of a page runs, in order, in one namespace."""
    run_blocks(path)


RUNNABLE_FILES = [
    p for p in DOC_FILES if any(b.runs for b in code_blocks(p.read_text(encoding="utf-8")))
]


@pytest.mark.parametrize("path", RUNNABLE_FILES, ids=[p.name for p in RUNNABLE_FILES])
def test_shown_output_is_printed(
    path: Path, docs_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every line of a ```text block on a runnable page is printed by its python blocks."""
    run_blocks(path)
    printed = capsys.readouterr().out
    for block in code_blocks(path.read_text(encoding="utf-8")):
        if block.info != "text":
            continue
        for offset, line in enumerate(block.source.splitlines()):
            pattern = ".*".join(re.escape(part) for part in line.split("..."))
            assert re.search(pattern, printed), (
                f"{path.name} line {block.line + offset}: {line!r} is not what the code prints"
            )


def test_quickstart_has_the_contract_program() -> None:
    """The DESIGN contract program is on the quickstart page, fenced as runnable."""
    blocks = list(code_blocks((DOCS / "quickstart.md").read_text(encoding="utf-8")))
    contract = [b for b in blocks if "from taskctx_workspace import TaskWorkspace" in b.source]
    assert len(contract) == 1
    assert contract[0].info.split() == ["python"]
    assert "while package.has_more:" in contract[0].source
    runnable = "".join(b.source for b in blocks if b.runs)
    for call in ("reader.read_next(package.cursor)", "resolve_alias", "export_state()"):
        assert call in runnable
    assert "restore_reader(" in runnable


def test_writing_plugins_example_source_passes_the_contract(docs_env: Path) -> None:
    """The example source of writing-plugins.md keeps every SourceContract rule and its root."""
    namespace = run_blocks(DOCS / "writing-plugins.md")
    folder = docs_env / "contract"
    folder.mkdir()
    (folder / "a.json").write_text('{"id": "a", "text": "alpha"}', encoding="utf-8")
    (folder / "nested").mkdir()
    (folder / "nested" / "b.json").write_text('{"id": "b"}', encoding="utf-8")
    source = namespace["JsonFolderSource"](folder)
    contract = namespace["TestJsonFolderSource"]()
    assert isinstance(contract, SourceContract)
    rules = [name for name in dir(SourceContract) if name.startswith("test_")]
    assert rules
    for rule in rules:
        try:
            getattr(contract, rule)(source)
        except pytest.skip.Exception:  # a rule that does not apply (no `covers` declared)
            continue
    (docs_env / "outside.json").write_text('{"secret": true}', encoding="utf-8")
    with pytest.raises(NotFoundError):
        asyncio.run(source.async_read_exact(ContextRef(binding="b", path="../outside.json")))


@pytest.mark.parametrize("kit", [SourceContract, FileIOHandlerContract, IndexProviderContract])
def test_testing_plugins_lists_every_kit_rule(kit: type) -> None:
    """docs/testing-plugins.md names every rule of every conformance kit, in its table."""
    text = (DOCS / "testing-plugins.md").read_text(encoding="utf-8")
    rules = [name for name in vars(kit) if name.startswith("test_")]
    assert rules
    missing = [rule for rule in rules if f"| `{rule}` |" not in text]
    assert not missing, f"docs/testing-plugins.md does not list {kit.__name__} rules {missing}"


# -- links ------------------------------------------------------------------------------


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to '-'."""
    text = re.sub(r"[`*_]|<[^>]+>", "", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every anchor a link may target in ``path``: explicit ids and heading slugs."""
    text = path.read_text(encoding="utf-8")
    return {m["id"] for m in _ANCHOR.finditer(text)} | {slug(h) for h in headings(text)}


@pytest.mark.parametrize("path", DOC_FILES, ids=[p.name for p in DOC_FILES])
def test_relative_links_resolve(path: Path) -> None:
    """Every relative link of a page names an existing file and, if given, its anchor."""
    text = path.read_text(encoding="utf-8")
    prose = "".join(b.source for b in code_blocks(text))
    for match in _LINK.finditer(text):
        target = match["target"]
        if target.startswith(("http://", "https://", "mailto:")) or match[0] in prose:
            continue
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        assert linked.exists(), f"{path.name}: link to missing {target!r}"
        if anchor and linked.suffix == ".md":
            assert anchor in anchors(linked), f"{path.name}: no anchor {target!r}"


def linked_pages(path: Path) -> set[Path]:
    """The local files ``path`` links to (anchors dropped), resolved."""
    text = path.read_text(encoding="utf-8")
    targets = {m["target"].partition("#")[0] for m in _LINK.finditer(text)}
    return {(path.parent / t).resolve() for t in targets if t and "://" not in t}


def test_index_lists_every_page() -> None:
    """docs/index.md links every other page in docs/."""
    pages = {p.resolve() for p in DOCS.glob("*.md")} - {(DOCS / "index.md").resolve()}
    missing = sorted(p.name for p in pages - linked_pages(DOCS / "index.md"))
    assert not missing, f"not in docs/index.md: {missing}"


def test_readme_links_every_page() -> None:
    """README.md links every page in docs/, the index included."""
    pages = {p.resolve() for p in DOCS.glob("*.md")}
    missing = sorted(p.name for p in pages - linked_pages(README))
    assert not missing, f"not linked from README.md: {missing}"


# -- the CLI ----------------------------------------------------------------------------


def walk_commands(
    command: click.Command, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    """Every command under ``command`` (itself included) with its argv path."""
    yield path, command
    if isinstance(command, click.Group):
        for name, sub in sorted(command.commands.items()):
            yield from walk_commands(sub, (*path, name))


def cli_commands() -> list[tuple[tuple[str, ...], click.Command]]:
    """The kernel's commands and those every installed plugin registers (``taskctx
    records ...``), as ``taskctx`` shows them with no plugin filter set."""
    found = list(walk_commands(main))
    plugin_commands = PluginHost().commands()
    for name in sorted(set(plugin_commands) - set(main.commands)):
        found.extend(walk_commands(plugin_commands[name], (name,)))
    return found


CLI_COMMANDS = cli_commands()


def test_cli_walk_finds_the_commands() -> None:
    """The walk sees the group, its documented commands and plugin-registered commands."""
    paths = [path for path, _ in CLI_COMMANDS]
    assert {(), ("plugins",), ("read",), ("index",)} <= set(paths)
    assert {("records",), ("records", "put"), ("records", "query")} <= set(paths)


@pytest.fixture
def cli_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary working directory; every installed plugin loads (no filter is set)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize(
    ("path", "command"), CLI_COMMANDS, ids=[" ".join(p) or "taskctx" for p, _ in CLI_COMMANDS]
)
def test_cli_command_has_help(path: tuple[str, ...], command: click.Command, cli_env: Path) -> None:
    """Every command, plugin commands included, has help text, and ``--help`` prints it
    and exits 0."""
    assert (command.help or "").strip(), f"taskctx {' '.join(path)} has no help text"
    result = CliRunner().invoke(main, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output
    first_line = (command.help or "").strip().splitlines()[0]
    assert first_line.split()[0] in result.output


@pytest.mark.parametrize("path", [p for p, _ in CLI_COMMANDS if p], ids=" ".join)
def test_cli_commands_are_documented(path: tuple[str, ...]) -> None:
    """docs/cli.md has a section for every command."""
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    assert f"taskctx {' '.join(path)}" in headings(text)


# -- the README -------------------------------------------------------------------------


def test_readme_has_a_ten_line_example() -> None:
    """The README's one runnable example is at most ten lines (test_python_blocks_run runs
    it)."""
    blocks = [b for b in code_blocks(README.read_text(encoding="utf-8")) if b.runs]
    assert len(blocks) == 1
    lines = [line for line in blocks[0].source.splitlines() if line.strip()]
    assert len(lines) <= 10, f"the README example has {len(lines)} lines"


def test_readme_shows_make_demo_and_make_test() -> None:
    """The README shows the two bootstrap commands in a code block."""
    blocks = "".join(b.source for b in code_blocks(README.read_text(encoding="utf-8")))
    assert re.search(r"^make demo\b", blocks, flags=re.M)
    assert re.search(r"^make test\b", blocks, flags=re.M)
