"""Registers the ``skill_library`` source kind through the ordinary hook."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from taskctx import SourceFactory
from taskctx.hookspecs import hookimpl

if TYPE_CHECKING:
    from taskctx_skills.source import SkillSource

__all__ = ["make_source", "register_source_kinds"]


def _names(value: Sequence[str] | str | None) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):  # from the CLI: "a+b"
        return [name for name in value.split("+") if name]
    return list(value)


def make_source(
    root: str | Path,
    trusted: Sequence[str] | str = (),
    required: Sequence[str] | str = (),
    optional: Sequence[str] | str | None = None,
    revision: str | None = None,
    state_dir: str | Path | None = None,
) -> SkillSource:
    """The factory behind ``host.source("skill_library", root=..., trusted=..., required=...)``.

    ``revision`` restores a stored binding (a reader snapshot's revision) instead of
    pinning the skills now; ``state_dir`` is where the store lives (``SkillLibrary``).
    From the CLI, lists arrive ``+``-separated.
    """
    from taskctx_skills.library import SkillLibrary

    library = SkillLibrary(root, trusted=_names(trusted) or (), state_dir=state_dir)
    if revision is not None:
        return library.restore_source(revision)
    return library.source(required=_names(required) or (), optional=_names(optional))


@hookimpl
def register_source_kinds(register: Callable[[str, SourceFactory], None]) -> None:
    """Source kind ``skill_library``."""
    register("skill_library", make_source)
