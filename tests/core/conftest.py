"""Fixtures of the kernel tests: throwaway sites of entry-point plugins on sys.path."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from taskctx import hookimpl
from taskctx.plugins import ALLOW_ENV, BLOCK_ENV, CHOOSE_ENV, PluginHost
from taskctx.testing import MemorySource
from tests.core.sites import Site


@pytest.fixture
def site_factory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Site]]:
    """Make sites on sys.path (first made is searched last); undo imports afterwards."""
    for variable in (ALLOW_ENV, BLOCK_ENV, CHOOSE_ENV):
        monkeypatch.delenv(variable, raising=False)
    modules: list[str] = []

    def make(name: str = "site") -> Site:
        root = tmp_path / name
        root.mkdir()
        monkeypatch.syspath_prepend(str(root))
        return Site(root, modules)

    yield make
    for module in modules:
        sys.modules.pop(module, None)
    importlib.invalidate_caches()


@pytest.fixture
def site(site_factory: Callable[..., Site]) -> Site:
    """One throwaway site on sys.path."""
    return site_factory()


class MemoryKind:
    """Registers a `memory` source kind whose options name the items."""

    @hookimpl
    def register_source_kinds(self, register: Callable[[str, Callable[..., Any]], None]) -> None:
        register("memory", lambda **items: MemorySource(dict(items)))


@pytest.fixture
def with_memory_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the CLI's host know the `memory` kind."""
    original = PluginHost.from_environment.__func__  # type: ignore[attr-defined]

    def patched(cls: type[PluginHost], *args: Any, **kwargs: Any) -> PluginHost:
        host: PluginHost = original(cls, *args, **kwargs)
        host.register(MemoryKind(), name="memory-kind")
        return host

    monkeypatch.setattr(PluginHost, "from_environment", classmethod(patched))
