"""taskctx-repo: a git repository pinned at one commit, authorised paths only."""

from __future__ import annotations

from taskctx_repo.errors import GitError
from taskctx_repo.globs import PathRules
from taskctx_repo.repository import PinnedRepository
from taskctx_repo.source import RepoSource

__all__ = ["GitError", "PathRules", "PinnedRepository", "RepoSource"]
