"""Registers the ``pinned_repository`` source kind through the ordinary hook."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from taskctx import SourceFactory
from taskctx.errors import PolicyError
from taskctx.hookspecs import hookimpl
from taskctx.policy import RunConfiguration
from taskctx_repo.source import RepoSource

if TYPE_CHECKING:
    from taskctx.plugins import PluginHost

__all__ = ["make_source", "register_source_kinds"]


def make_source(
    location: str | Path,
    commit: str = "HEAD",
    paths: Sequence[str] | str = ("**",),
    cache_dir: str | Path | None = None,
    state_dir: str | Path | None = None,
    allowed_hosts: Sequence[str] | str | None = None,
    configuration: RunConfiguration | None = None,
    host: PluginHost | None = None,
) -> RepoSource:
    """The factory behind ``host.source("pinned_repository", location=..., commit=...)``.

    Remote URLs are authorised by ``configuration`` (``ctx.source`` and
    ``host.source(..., configuration=...)`` pass the run's), narrowed to
    ``allowed_hosts`` when given; both restricting hosts is refused (PolicyError), as
    one would silently override the other. From the CLI, lists arrive ``+``-separated.
    """
    from taskctx_repo.repository import PinnedRepository

    globs = [g for g in paths.split("+") if g] if isinstance(paths, str) else list(paths)
    if allowed_hosts is not None:
        hosts = allowed_hosts.split("+") if isinstance(allowed_hosts, str) else allowed_hosts
        base = configuration or RunConfiguration()
        if not base.host_policy.unrestricted:
            raise PolicyError(
                f"pinned_repository got allowed_hosts={allowed_hosts!r} and a configuration "
                f"allowing only {list(base.allowed_hosts or ())}; give the hosts once"
            )
        configuration = RunConfiguration(
            allowed_hosts=[h for h in hosts if h], extensions=base.extensions
        )
    repository = PinnedRepository(
        location,
        commit,
        globs,
        configuration=configuration,
        cache_dir=cache_dir,
        state_dir=state_dir,
        host=host,
    )
    return repository.source()


@hookimpl
def register_source_kinds(register: Callable[[str, SourceFactory], None]) -> None:
    """Source kind ``pinned_repository``."""
    register("pinned_repository", make_source)
