"""Every shipped module keeps to about 500 lines and every function to about 60 (issue 15).

"How to judge it": a module past the bound holds more than one owner's code, a function
past it more than one step. The tests list each offender with its line count.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 60


def shipped_modules() -> list[Path]:
    """The Python modules the distributions ship: the kernel's, every plugin's and contrib's."""
    found = [
        *(ROOT / "core" / "src").rglob("*.py"),
        *(ROOT / "plugins").glob("*/src/**/*.py"),
        *(ROOT / "contrib").glob("*/src/**/*.py"),
    ]
    return sorted(found)


def _name(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def module_lines(path: Path) -> int:
    """Lines of a module, as ``wc -l`` counts them."""
    return path.read_text(encoding="utf-8").count("\n")


def long_functions(path: Path, limit: int) -> list[tuple[str, int]]:
    """``(name, lines)`` of every function or method in ``path`` longer than ``limit``
    (decorators excluded; a nested function counts for itself and inside its parent)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            assert node.end_lineno is not None
            lines = node.end_lineno - node.lineno + 1
            if lines > limit:
                found.append((node.name, lines))
    return found


def test_the_measure_sees_the_shipped_tree() -> None:
    """The walk finds the kernel and every first-party plugin, so a pass means something."""
    names = {_name(path) for path in shipped_modules()}
    assert "core/src/taskctx/context.py" in names
    for plugin in ("workspace", "records", "skills", "memory", "repo", "documents", "fts"):
        assert any(name.startswith(f"plugins/{plugin}/src/") for name in names), plugin


def test_the_measure_counts_functions_and_methods(tmp_path: Path) -> None:
    """A long function, a long method and a long nested function are all reported."""
    body = "".join(f"    x{i} = {i}\n" for i in range(60))
    source = (
        f"def long():\n{body}\n"
        f"class C:\n    def method(self):\n{body.replace('    ', '        ')}\n"
        f"async def short():\n    pass\n"
    )
    path = tmp_path / "sample.py"
    path.write_text(source, encoding="utf-8")
    assert long_functions(path, MAX_FUNCTION_LINES) == [("long", 61), ("method", 61)]
    assert long_functions(path, 61) == []
    assert module_lines(path) == source.count("\n")


def test_every_module_keeps_to_500_lines() -> None:
    """No shipped module (kernel or plugin) is longer than 500 lines."""
    offenders = [
        f"{_name(path)}: {lines} lines"
        for path in shipped_modules()
        if (lines := module_lines(path)) > MAX_MODULE_LINES
    ]
    assert offenders == [], f"modules over {MAX_MODULE_LINES} lines:\n" + "\n".join(offenders)


def test_every_function_keeps_to_60_lines() -> None:
    """No shipped function or method is longer than 60 lines."""
    offenders = [
        f"{_name(path)}:{name}: {lines} lines"
        for path in shipped_modules()
        for name, lines in long_functions(path, MAX_FUNCTION_LINES)
    ]
    assert offenders == [], f"functions over {MAX_FUNCTION_LINES} lines:\n" + "\n".join(offenders)
