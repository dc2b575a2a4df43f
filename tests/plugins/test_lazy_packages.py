"""Loading a plugin stays cheap: its package imports names on first use, not at load."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

LAZY = {
    "taskctx_memory": ("taskctx_records", "taskctx_workspace"),
    "taskctx_skills": ("skills_ref", "strictyaml"),
}


@pytest.mark.parametrize(("package", "heavy"), sorted(LAZY.items()))
def test_loading_the_plugin_imports_no_heavy_module(package: str, heavy: tuple[str, ...]) -> None:
    """Importing the entry point's module (what plugin loading does) leaves them unloaded."""
    probe = (
        f"import sys, {package}.plugin\n"
        f"print(sorted(m for m in {list(heavy)!r} if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("package", sorted(LAZY))
def test_every_exported_name_resolves(package: str) -> None:
    """Each name in ``__all__`` imports from its module; an unknown one is AttributeError."""
    module = importlib.import_module(package)
    for name in module.__all__:
        assert getattr(module, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        module.nope  # noqa: B018
