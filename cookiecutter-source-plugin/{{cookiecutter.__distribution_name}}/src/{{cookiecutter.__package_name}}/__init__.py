"""taskctx source plugin {{ cookiecutter.__distribution_name }}.

It registers the source kind ``{{ cookiecutter.__source_kind }}``: see ``source.py``.
"""

from __future__ import annotations

from {{ cookiecutter.__package_name }}.source import (
    {{ cookiecutter.__class_name }},
)

__all__ = ["{{ cookiecutter.__class_name }}"]
