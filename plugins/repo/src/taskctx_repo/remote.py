"""Fetching a remote repository only through authorised URLs.

Before git opens any connection, ``RunConfiguration.authorize_url`` approves the URL;
the smart-HTTP discovery request is then made here, hop by hop, so every redirect is
authorised too (git itself is told never to follow one). The final URL is what git
clones from. A denied host fails with PolicyError before any traffic. Only clone and
fetch may use a transport, and only http(s) (``GIT_ALLOW_PROTOCOL``); with
``http.followRedirects=false`` git follows neither a redirect nor a dumb server's
``http-alternates`` (git treats those as redirects).
"""

from __future__ import annotations

import hashlib
import re
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple
from urllib.parse import urljoin, urlsplit

from taskctx.errors import PolicyError
from taskctx_repo.errors import GitError
from taskctx_repo.git import run_git

if TYPE_CHECKING:
    from taskctx.policy import RunConfiguration

__all__ = [
    "MAX_REDIRECTS",
    "RemoteClone",
    "fetch_remote",
    "follow_redirects",
    "is_remote",
    "resolve_redirects",
]

MAX_REDIRECTS = 5
_DISCOVERY = "info/refs?service=git-upload-pack"
_FULL_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def is_remote(location: str) -> bool:
    """Whether ``location`` is an http(s) URL (anything else is a local path)."""
    return urlsplit(location).scheme.lower() in ("http", "https")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None  # surface 3xx to the caller, which authorises the hop itself


class RemoteClone(NamedTuple):
    """A cached bare clone and every repository URL contacted to make or update it."""

    git_dir: Path
    urls: tuple[str, ...]
    """The URL asked for, then each redirect target in order; git fetched from the last."""


def follow_redirects(
    url: str, configuration: RunConfiguration, timeout: float = 30
) -> tuple[str, ...]:
    """``url`` and each repository URL it redirected to, every one authorised first."""
    configuration.authorize_url(url)
    opener = urllib.request.build_opener(_NoRedirect)
    current = url.rstrip("/")
    chain = [current]
    for _ in range(MAX_REDIRECTS + 1):
        probe = f"{current}/{_DISCOVERY}"
        try:
            with opener.open(probe, timeout=timeout) as response:
                response.read(1)
                return tuple(chain)
        except urllib.error.HTTPError as exc:
            location = (
                exc.headers.get("Location") if exc.code in (301, 302, 303, 307, 308) else None
            )
            if location is None:
                if exc.code in (301, 302, 303, 307, 308):
                    raise GitError(f"{probe} redirected without a Location") from None
                return tuple(chain)  # a dumb server or a 404 here: let git report it
            target = urljoin(probe, location)
            configuration.authorize_url(target)
            current = target.split("/info/refs", 1)[0].rstrip("/")
            chain.append(current)
        except urllib.error.URLError as exc:
            raise GitError(f"cannot reach {url}: {exc.reason}") from None
    raise PolicyError(f"{url} redirected more than {MAX_REDIRECTS} times")


def resolve_redirects(url: str, configuration: RunConfiguration, timeout: float = 30) -> str:
    """The repository URL after following (and authorising) every redirect hop."""
    return follow_redirects(url, configuration, timeout)[-1]


def fetch_remote(
    url: str, commit: str, cache_root: Path, configuration: RunConfiguration
) -> RemoteClone:
    """A bare clone of ``url`` under ``cache_root`` holding ``commit``, and the URLs used."""
    chain = follow_redirects(url, configuration)
    final = chain[-1]
    name = hashlib.sha256(url.encode()).hexdigest()[:16]
    git_dir = cache_root / name
    if not (git_dir / "HEAD").exists():
        cache_root.mkdir(parents=True, exist_ok=True)
        partial = cache_root / f".{name}.partial"
        if partial.exists():
            import shutil

            shutil.rmtree(partial)
        run_git(
            None, ["clone", "--bare", "--quiet", "--no-tags", final, str(partial)], network=True
        )
        partial.rename(git_dir)
    if _FULL_ID.fullmatch(commit):
        try:
            run_git(git_dir, ["cat-file", "-e", f"{commit}^{{commit}}"])
            return RemoteClone(git_dir, chain)  # an object id names one commit forever
        except GitError:
            pass
    # a branch, tag or HEAD moves: ask the remote what it names now
    refs = "+refs/heads/*:refs/heads/*"
    run_git(git_dir, ["fetch", "--quiet", "--prune", "--tags", final, refs], network=True)
    if _FULL_ID.fullmatch(commit):
        try:
            run_git(git_dir, ["cat-file", "-e", f"{commit}^{{commit}}"])
        except GitError:  # not on a branch: ask for the object itself
            run_git(git_dir, ["fetch", "--quiet", final, commit], network=True)
    return RemoteClone(git_dir, chain)
