"""The hookimpl module: registers the source kind through ``register_source_kinds``.

``pyproject.toml`` names this module under the entry-point group ``taskctx``, so an
installed {{ cookiecutter.__distribution_name }} is found by every ``PluginHost``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from taskctx import SourceFactory, hookimpl

from {{ cookiecutter.__package_name }}.source import (
    {{ cookiecutter.__class_name }},
)

__all__ = ["make_source", "register_source_kinds"]


def make_source(root: str | Path) -> {{ cookiecutter.__class_name }}:
    """The factory behind ``host.source(kind, root=...)``.

    Options arrive as keywords; from the CLI (``--source KIND:root=DIR``) as strings.
    """
    return {{ cookiecutter.__class_name }}(root)


@hookimpl
def register_source_kinds(register: Callable[[str, SourceFactory], None]) -> None:
    """Register this plugin's source kind with its factory."""
    register({{ cookiecutter.__class_name }}.kind, make_source)
