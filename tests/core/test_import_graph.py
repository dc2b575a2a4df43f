"""The kernel's import graph has no cycle, and no lazy import exists to hide one (issue 15)."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "core" / "src" / "taskctx"

Edge = tuple[str, str]

CYCLE_BREAKING_LAZY_IMPORTS: dict[Edge, str] = {}
"""Function-level imports that would close a cycle at module level, each with the reason
it is kept. Every other lazy import of a taskctx module could move to the top. Empty since
ContextPackage.render() imports the view at module level: render needs only the codes, the
markup and media at run time, and names the package models for type checking only."""


def module_name(path: Path) -> str:
    """``taskctx.x.y`` of a file under the package (``taskctx.x`` for ``x/__init__.py``)."""
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imported_modules(node: ast.Import | ast.ImportFrom, module: str) -> set[str]:
    """The taskctx modules ``node`` (in ``module``) imports: ``from taskctx import x``
    names the submodule ``taskctx.x`` when there is one, else the package."""
    if isinstance(node, ast.Import):
        return {a.name for a in node.names if a.name in MODULES}
    base = node.module or ""
    if node.level:
        package = module if MODULES[module].name == "__init__.py" else module.rsplit(".", 1)[0]
        parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
        base = ".".join([*parts, *([node.module] if node.module else [])])
    found = set()
    for alias in node.names:
        sub = f"{base}.{alias.name}"
        found.add(sub if sub in MODULES else base)
    return {name for name in found if name in MODULES and name != module}


def _imports(statements: Iterable[ast.stmt], module: str, top: bool) -> Iterator[tuple[str, bool]]:
    """``(imported module, at module level)`` for the imports in ``statements``; imports
    under ``if TYPE_CHECKING:`` are skipped (they never run)."""
    for statement in statements:
        if isinstance(statement, ast.If) and _is_type_checking(statement.test):
            yield from _imports(statement.orelse, module, top)
        elif isinstance(statement, ast.Import | ast.ImportFrom):
            yield from ((name, top) for name in imported_modules(statement, module))
        elif isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
            yield from _imports(statement.body, module, False)
        elif isinstance(statement, ast.ClassDef):
            yield from _imports(statement.body, module, top)
        else:
            for field in ("body", "orelse", "finalbody", "handlers"):
                inner = getattr(statement, field, [])
                for child in inner:
                    body = child.body if isinstance(child, ast.ExceptHandler) else [child]
                    yield from _imports(body, module, top)


def import_graph() -> tuple[dict[str, set[str]], set[Edge]]:
    """The module-level import graph of the kernel and its function-level (lazy) edges."""
    graph: dict[str, set[str]] = {name: set() for name in MODULES}
    lazy: set[Edge] = set()
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for target, top in _imports(tree.body, name, True):
            if top:
                graph[name].add(target)
            else:
                lazy.add((name, target))
    return graph, lazy


def cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while (member := stack.pop()) != node:
                component.append(member)
            if component:
                found.append(sorted([node, *component]))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def closes_a_cycle(graph: Mapping[str, set[str]], edge: Edge) -> bool:
    """Whether ``edge`` (a lazy import) would close a cycle at module level."""
    with_edge = {name: set(targets) for name, targets in graph.items()}
    with_edge[edge[0]].add(edge[1])
    return any(edge[0] in component for component in cycles(with_edge))


def test_the_graph_sees_the_kernel() -> None:
    """The parser finds the kernel's modules and their module-level imports."""
    graph, lazy = import_graph()
    assert {"taskctx", "taskctx.model", "taskctx.reader", "taskctx.testing"} <= set(graph)
    assert "taskctx.hookspecs" in graph["taskctx.plugins"]  # from taskctx import hookspecs
    assert "taskctx.errors" in graph["taskctx.model"]
    assert "taskctx.render" in graph["taskctx.model"]  # the quickstart's package.render()
    assert ("taskctx.cli", "taskctx.context") in lazy  # the CLI builds a context on demand


def test_module_level_imports_have_no_cycle() -> None:
    """Importing any kernel module never re-enters a module that is still importing."""
    graph, _ = import_graph()
    assert cycles(graph) == []


def test_no_lazy_import_hides_a_cycle_unless_listed() -> None:
    """A function-level import that would close a cycle at module level is listed, with
    its reason, in CYCLE_BREAKING_LAZY_IMPORTS; the list holds nothing else."""
    graph, lazy = import_graph()
    breaking = {edge for edge in lazy if closes_a_cycle(graph, edge)}
    assert breaking == set(CYCLE_BREAKING_LAZY_IMPORTS), (
        f"unlisted: {sorted(breaking - set(CYCLE_BREAKING_LAZY_IMPORTS))}, "
        f"listed but no longer needed: {sorted(set(CYCLE_BREAKING_LAZY_IMPORTS) - breaking)}"
    )


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
        ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"d"}}, [["a", "b", "c"]]),
        ({"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c"}}, [["a", "b"], ["c", "d"]]),
    ],
)
def test_cycles_finds_every_cycle(graph: dict[str, set[str]], expected: list[list[str]]) -> None:
    """The cycle finder reports each cycle of two or more modules, and none in a DAG."""
    assert cycles(graph) == expected


def test_imports_under_type_checking_and_in_functions_are_told_apart() -> None:
    """``if TYPE_CHECKING:`` imports are ignored; imports in functions are lazy edges."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "from taskctx.errors import TaskCtxError\n"
        "if TYPE_CHECKING:\n    from taskctx.context import TaskContext\n"
        "try:\n    from taskctx import media\nexcept ImportError:\n    pass\n"
        "def f():\n    from taskctx.render import render_package\n"
    )
    found = set(_imports(ast.parse(source).body, "taskctx.model", True))
    assert found == {
        ("taskctx.errors", True),
        ("taskctx.media", True),
        ("taskctx.render", False),
    }
