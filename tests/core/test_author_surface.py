"""The plugin author surface: typed hookspecs, everything a plugin needs exported from
``taskctx``, and production examples that import nothing else (issue 15)."""

from __future__ import annotations

import ast
import collections.abc
import importlib
import inspect
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import pytest

import taskctx
from taskctx import builtins, hookspecs, protocols
from taskctx.clisources import CliSource, CliValue
from taskctx.errors import NotFoundError, SourceUnavailableError, UnsupportedScopeError
from taskctx.model import ContextRef, Problem, Representation, SourceDescriptor
from taskctx.policy import ConfigurableSource
from taskctx.protocols import (
    ContextSource,
    FileIOHandler,
    IndexProvider,
    ParsedDocument,
    RequestFilter,
    ScopedRead,
    Selector,
    SourceFactory,
)
from tests.core.test_docs import code_blocks

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

HOOKSPECS = sorted(
    name
    for name, value in vars(hookspecs).items()
    if callable(value) and hasattr(value, f"{hookspecs.PROJECT_NAME}_spec")
)

REGISTERS = {
    "register_source_kinds": (str, SourceFactory),
    "register_scoped_readers": (ScopedRead,),
    "register_file_io_handlers": (FileIOHandler,),
    "register_index_providers": (IndexProvider,),
    "register_selectors": (Selector,),
    "register_commands": (click.Command,),
    "register_cli_sources": (CliSource,),
    "register_request_filters": (RequestFilter,),
}
"""What each hook's ``register`` takes."""


def register_hint(function: Callable[..., Any]) -> Any:
    """The resolved annotation of ``function``'s ``register`` parameter."""
    hints = typing.get_type_hints(function, {**vars(hookspecs), "click": click})
    return hints["register"]


def test_every_hookspec_is_listed() -> None:
    """The table of what ``register`` takes covers exactly the hookspecs."""
    assert sorted(REGISTERS) == HOOKSPECS


@pytest.mark.parametrize("name", HOOKSPECS)
def test_hookspec_register_is_typed_with_the_protocol(name: str) -> None:
    """Each hookspec types ``register`` as ``Callable[[<protocol>...], None]``, no ``Any``."""
    hint = register_hint(getattr(hookspecs, name))
    assert typing.get_origin(hint) is collections.abc.Callable, hint
    arguments, result = typing.get_args(hint)
    assert tuple(arguments) == REGISTERS[name]
    assert result is None
    assert Any not in arguments


def test_source_factory_is_a_callable_returning_a_context_source() -> None:
    """``SourceFactory`` is ``Callable[..., ContextSource]``, exported from ``taskctx``."""
    assert typing.get_origin(SourceFactory) is collections.abc.Callable
    assert typing.get_args(SourceFactory) == (Ellipsis, ContextSource)
    assert taskctx.SourceFactory is SourceFactory
    assert "SourceFactory" in protocols.__all__


@pytest.mark.parametrize("name", HOOKSPECS)
def test_hookspec_docstring_says_when_called_and_what_it_returns(name: str) -> None:
    """Each hookspec's docstring documents ``register``, when it is called and its return."""
    doc = inspect.getdoc(getattr(hookspecs, name)) or ""
    assert ":param register:" in doc
    assert "Called once, while the plugin loads" in doc
    assert "Returns nothing" in doc


AUTHOR_SURFACE: dict[str, object] = {
    "ContextSource": ContextSource,
    "ScopedRead": ScopedRead,
    "FileIOHandler": FileIOHandler,
    "IndexProvider": IndexProvider,
    "Selector": Selector,
    "SourceFactory": SourceFactory,
    "ParsedDocument": ParsedDocument,
    "NotFoundError": NotFoundError,
    "SourceUnavailableError": SourceUnavailableError,
    "UnsupportedScopeError": UnsupportedScopeError,
    "ContextRef": ContextRef,
    "SourceDescriptor": SourceDescriptor,
    "Problem": Problem,
    "Representation": Representation,
    "ConfigurableSource": ConfigurableSource,
    "CliSource": CliSource,
    "CliValue": CliValue,
}
"""Names a plugin author needs, and the kernel object each must be."""


@pytest.mark.parametrize("name", sorted(AUTHOR_SURFACE))
def test_author_surface_comes_from_taskctx_itself(name: str) -> None:
    """What a plugin author needs is exported by ``taskctx`` (in ``__all__``), the same
    object the kernel module defines."""
    assert name in taskctx.__all__
    assert getattr(taskctx, name) is AUTHOR_SURFACE[name]


def test_every_protocols_name_is_exported() -> None:
    """Every public name of ``taskctx.protocols`` is exported from ``taskctx`` too."""
    missing = [n for n in protocols.__all__ if n not in taskctx.__all__]
    assert not missing, f"taskctx does not export {missing}"


def test_importing_taskctx_does_not_import_pytest() -> None:
    """``taskctx`` (the author surface) never pulls in ``taskctx.testing`` or pytest."""
    import subprocess
    import sys

    code = "import sys, taskctx; print('pytest' in sys.modules, 'taskctx.testing' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.split() == ["False", "False"]


# -- first-party hookimpls are typed as the hookspecs are ----------------------------------

FIRST_PARTY = sorted(
    p.name for p in (ROOT / "plugins").iterdir() if (p / "pyproject.toml").exists()
)


def hookimpl_modules() -> list[str]:
    """The kernel's built-in plugin and every first-party plugin module."""
    return ["taskctx.builtins", *(f"taskctx_{name}.plugin" for name in FIRST_PARTY)]


@pytest.mark.parametrize("module_name", hookimpl_modules())
def test_first_party_hookimpls_annotate_register_like_the_hookspec(module_name: str) -> None:
    """A shipped hookimpl's ``register`` annotation is the hookspec's, character for
    character, so mypy checks what it registers against the protocol."""
    module = importlib.import_module(module_name)
    found = 0
    for name in HOOKSPECS:
        impl = getattr(module, name, None)
        if impl is None:
            continue
        found += 1
        spec = inspect.signature(getattr(hookspecs, name)).parameters["register"].annotation
        mine = inspect.signature(impl).parameters["register"].annotation
        assert mine == spec, f"{module_name}.{name}: register is {mine!r}, the hookspec {spec!r}"
    assert found, f"{module_name} implements no hook"
    assert module is not builtins or found == 2


# -- production examples import only from taskctx ------------------------------------------

TEST_DOUBLES: dict[str, frozenset[str]] = {
    # hooks.md demonstrates each hook against the in-memory stand-in source
    "hooks.md": frozenset({"MemorySource"}),
    # writing-plugins.md's testing section subclasses the conformance kit
    "writing-plugins.md": frozenset({"SourceContract"}),
}
"""What each author page may import from ``taskctx.testing``: test doubles and kits
only, never a helper for production code."""


def taskctx_imports(source: str) -> list[tuple[str, tuple[str, ...]]]:
    """``(module, names)`` of every ``from taskctx... import`` / ``import taskctx...``."""
    found: list[tuple[str, tuple[str, ...]]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "taskctx":
            found.append((node.module or "", tuple(a.name for a in node.names)))
        elif isinstance(node, ast.Import):
            found.extend((a.name, ()) for a in node.names if a.name.split(".")[0] == "taskctx")
    return found


def python_blocks(page: Path) -> list[str]:
    """The runnable and skipped ``python`` blocks of ``page``."""
    text = page.read_text(encoding="utf-8")
    return [b.source for b in code_blocks(text) if b.info.split()[:1] == ["python"]]


def surface_problems(source: str, allowed_testing: frozenset[str]) -> list[str]:
    """Why the imports of ``source`` leave the ``taskctx`` surface (empty if they do not)."""
    problems = []
    for module, names in taskctx_imports(source):
        if module == "taskctx":
            problems += [f"taskctx has no public {n}" for n in names if n not in taskctx.__all__]
        elif module == "taskctx.testing":
            problems += [f"taskctx.testing.{n}" for n in names if n not in allowed_testing]
        else:
            problems.append(f"{module} (import it from taskctx)")
    return problems


@pytest.mark.parametrize("page", sorted(TEST_DOUBLES))
def test_author_pages_import_only_the_taskctx_surface(page: str) -> None:
    """hooks.md and writing-plugins.md import from ``taskctx`` itself, and from
    ``taskctx.testing`` only its test doubles and kits (never ``sha256_of``)."""
    problems = [
        problem
        for block in python_blocks(DOCS / page)
        for problem in surface_problems(block, TEST_DOUBLES[page])
    ]
    assert not problems, f"docs/{page} imports {problems}"


def test_surface_problems_names_each_kind_of_bad_import() -> None:
    """The checker refuses a submodule import, a testing helper and an unknown name."""
    bad = (
        "from taskctx.errors import NotFoundError\n"
        "from taskctx.testing import sha256_of, MemorySource\n"
        "from taskctx import ExactRead, NoSuchThing\n"
        "import taskctx.model\n"
    )
    assert surface_problems(bad, frozenset({"MemorySource"})) == [
        "taskctx.errors (import it from taskctx)",
        "taskctx.testing.sha256_of",
        "taskctx has no public NoSuchThing",
        "taskctx.model (import it from taskctx)",
    ]
