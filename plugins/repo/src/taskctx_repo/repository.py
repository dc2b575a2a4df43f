"""``PinnedRepository``: a git repository pinned at one commit, authorised paths only.

Everything is read from the commit's tree through one long-lived
``git cat-file --batch``; the working tree, the index and later commits never leak in.
A remote repository is cloned (bare) into a cache only after
``RunConfiguration.authorize_url`` approved its URL and every redirect; the URLs
contacted are kept, so a later configuration can be checked against them
(:meth:`PinnedRepository.authorize`). ``file:`` URLs name local paths.
"""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit
from urllib.request import url2pathname

from taskctx.errors import NotFoundError, PolicyError
from taskctx.policy import RunConfiguration
from taskctx.statefiles import folder_state_dir
from taskctx_repo.errors import GitError
from taskctx_repo.facts import FACTS_VERSION, FactCache
from taskctx_repo.git import CatFile, TreeEntry, ls_tree, run_git
from taskctx_repo.globs import PathRules
from taskctx_repo.remote import fetch_remote, is_remote

if TYPE_CHECKING:
    from taskctx.plugins import PluginHost
    from taskctx_repo.source import RepoSource

__all__ = ["PinnedRepository", "default_cache_root"]


def default_cache_root() -> Path:
    """Where remote clones go by default: ``~/.cache/taskctx/repos``."""
    return Path.home() / ".cache" / "taskctx" / "repos"


def _git_dir_of(path: Path) -> Path:
    """The git dir of the repository whose top level (or git dir) is ``path`` itself.

    Discovery may not climb above ``path``: a plain folder inside a checkout is not a
    repository of its own, and pinning the enclosing one would widen what is read.
    """
    ceiling = {"GIT_CEILING_DIRECTORIES": str(path.parent)}
    try:
        raw = run_git(None, ["-C", str(path), "rev-parse", "--absolute-git-dir"], env=ceiling)
    except GitError as exc:
        raise NotFoundError(f"{path} is not a git repository: {exc}") from None
    git_dir = Path(raw.decode().strip())
    if git_dir != path and git_dir.parent != path:
        raise NotFoundError(f"{path} is inside the repository at {git_dir}, not one itself")
    return git_dir


def _local_path(location: str) -> Path | None:
    """The local path ``location`` names, or None for an http(s) URL.

    A ``file:`` URL names a path on this machine (``file:///srv/r.git``, or with the
    host ``localhost``); one naming another host, and URLs of other schemes (ssh, git),
    are refused: the only network transport is http(s), through ``authorize_url``.
    """
    if is_remote(location):
        return None
    parts = urlsplit(location)
    if "://" not in location:
        return Path(location)
    if parts.scheme.lower() != "file":
        raise PolicyError(
            f"{location!r}: pinned repositories are fetched over http or https only, "
            f"not {parts.scheme!r}"
        )
    if parts.netloc.lower() not in ("", "localhost") or parts.query or parts.fragment:
        raise PolicyError(
            f"{location!r}: a file: URL must name a local path (file:///path), "
            "not a host, query or fragment"
        )
    return Path(url2pathname(parts.path))


class PinnedRepository:
    """The tree of ``commit`` in the repository at ``path_or_url``, under path globs.

    ``paths`` are the authorised globs (``**`` by default): only matching files are
    enumerated or read. ``configuration`` authorises remote URLs (default: the
    unrestricted ``RunConfiguration()``); ``cache_dir`` holds remote clones. A local
    path or ``file:`` URL is read in place and contacts no host, whatever the
    configuration allows (git runs with no transport enabled for it).
    """

    def __init__(
        self,
        path_or_url: str | Path,
        commit: str,
        paths: Iterable[str] = ("**",),
        *,
        configuration: RunConfiguration | None = None,
        cache_dir: str | Path | None = None,
        state_dir: str | Path | None = None,
        host: PluginHost | None = None,
    ) -> None:
        self.location = str(path_or_url)
        self.rules = PathRules(paths)
        self.configuration = configuration or RunConfiguration()
        self._host = host
        local = _local_path(self.location)
        self.contacted: tuple[str, ...] = ()
        """The repository URLs requested to clone or fetch it, redirect targets included."""
        if local is None:
            cache = Path(cache_dir) if cache_dir else default_cache_root()
            remote = fetch_remote(self.location, commit, cache, self.configuration)
            self.git_dir, self.contacted = remote.git_dir, remote.urls
        else:
            self.git_dir = _git_dir_of(local.resolve())
        try:
            raw = run_git(
                self.git_dir, ["rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"]
            )
        except GitError:
            raise NotFoundError(f"{commit!r} names no commit in {self.location}") from None
        self.commit = raw.decode().strip()
        # the facts and the index are derived: outside the repository (its git dir is the
        # user's), in its part of the per-user state folder unless a folder is given
        self.state_dir = (
            Path(state_dir) if state_dir else folder_state_dir(self.git_dir).path / "repo"
        )
        self.cat = CatFile(self.git_dir)
        self.facts = FactCache(self.state_dir / f"facts-v{FACTS_VERSION}.db")
        self._entries: dict[str, TreeEntry] | None = None
        self.unreadable_names = 0
        """Tree entries whose names are not UTF-8: never offered; coverage says
        ``repo:names_not_utf8``."""

    def authorize(self, configuration: RunConfiguration) -> None:
        """None if ``configuration`` allows every URL this repository was fetched from.

        PolicyError names the first refused URL (the one asked for, or a redirect
        target). A local repository contacted none, so every configuration allows it.
        """
        for url in self.contacted:
            try:
                configuration.authorize_url(url)
            except PolicyError as exc:
                via = "" if url == self.contacted[0] else f" (a redirect of {self.location})"
                raise PolicyError(
                    f"pinned repository {self.location} was fetched from {url}{via}, "
                    f"which this configuration refuses: {exc}"
                ) from None

    @property
    def host(self) -> PluginHost:
        """The plugin host whose FileIOHandlers parse documents (default: from the environment)."""
        if self._host is None:
            from taskctx.plugins import PluginHost

            self._host = PluginHost.from_environment()
        return self._host

    @property
    def revision(self) -> str:
        """The commit id plus a digest of the authorised path set."""
        return f"{self.commit}:{self.rules.digest}"

    @property
    def identity(self) -> str:
        """Stable across commits, so the index reuses work for blobs two commits share."""
        where = hashlib.sha256(str(self.git_dir).encode()).hexdigest()[:12]
        return f"pinned_repository:{where}:{self.rules.digest}"

    def entries(self) -> dict[str, TreeEntry]:
        """Authorised tree entries by path (listed once; a commit never changes)."""
        if self._entries is None:
            entries: dict[str, TreeEntry] = {}
            self.unreadable_names = 0
            for entry in ls_tree(self.git_dir, self.commit):
                if not entry.valid_name:
                    self.unreadable_names += 1
                elif self.rules.allows(entry.path):
                    entries[entry.path] = entry
            self._entries = entries
        return self._entries

    def entry(self, path: str) -> TreeEntry:
        """The entry at ``path``: PolicyError outside the globs, NotFoundError if absent."""
        clean = posixpath.normpath(path) if path else path
        if not path or clean != path or path.startswith(("/", "../")) or path == "..":
            raise PolicyError(f"{path!r} is not a normalised path inside the repository")
        if not self.rules.allows(path):
            raise PolicyError(
                f"{path!r} is outside the authorised paths {list(self.rules.globs)} of "
                f"{self.location}@{self.commit[:12]}"
            )
        found = self.entries().get(path)
        if found is None:
            raise NotFoundError(f"{path!r} is not in {self.location} at commit {self.commit[:12]}")
        return found

    def read_bytes(self, path: str) -> bytes:
        """The bytes of the blob at ``path`` in the pinned commit (authorised paths only)."""
        entry = self.entry(path)
        if entry.is_submodule:
            raise NotFoundError(f"{path!r} is a submodule (commit {entry.oid}), not followed")
        return self.cat.read(entry.oid)[1]

    def read_text(self, path: str) -> str:
        """The UTF-8 text of the blob at ``path``."""
        return self.read_bytes(path).decode("utf-8")

    def list_files(self) -> list[str]:
        """Authorised paths, sorted."""
        return sorted(self.entries())

    def source(self) -> RepoSource:
        """The ``pinned_repository`` ContextSource of this pinned tree."""
        from taskctx_repo.source import RepoSource

        return RepoSource(self)

    def close(self) -> None:
        """End the cat-file process and close the fact cache."""
        self.cat.close()
        self.facts.close()

    def __enter__(self) -> PinnedRepository:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
