"""Fixtures of the kernel tests: throwaway sites of entry-point plugins on sys.path."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from taskctx.plugins import ALLOW_ENV, BLOCK_ENV, CHOOSE_ENV
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
