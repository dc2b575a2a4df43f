"""Fixtures of the pinned repository tests: real git repositories made with git itself."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs
import pytest
from taskctx_repo import PinnedRepository
from taskctx_repo.facts import FACTS_VERSION

from taskctx import PluginHost
from taskctx.testing import make_png

GUIDE = """\
# Guide

How to set the service up.

## Install

Run pip install upload-service.

### Extras

The extras add retries.

## Usage

Call upload() with a file; it times out after 30 s.
"""

FILES: Mapping[str, str | bytes] = {
    "README.md": "# Upload service\n\nMoves files to the archive.\n",
    "docs/guide.md": GUIDE,
    "docs/api/reference.md": "# Reference\n\n## upload(path)\n\nSends one file.\n",
    "src/app.py": "def main() -> None:\n    print('upload started')\n",
    "src/pkg/util.py": "RETRIES = 3\n",
    "src/empty.py": "",
    "notes.txt": "one\ntwo\nthree\nfour\nfive\n",
    "secrets/token.txt": "do not read me\n",
}
"""The first commit of the ``project`` fixture."""


def git_env() -> dict[str, str]:
    """A quiet, config-free environment with a fixed identity and dates."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_AUTHOR_NAME="Test Author",
        GIT_AUTHOR_EMAIL="author@example.org",
        GIT_COMMITTER_NAME="Test Committer",
        GIT_COMMITTER_EMAIL="committer@example.org",
        GIT_AUTHOR_DATE="2024-06-11T12:00:00+00:00",
        GIT_COMMITTER_DATE="2024-06-11T12:00:00+00:00",
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_TERMINAL_PROMPT="0",
        LC_ALL="C",
    )
    return env


def git(cwd: Path, *args: str) -> str:
    """Run ``git args`` in ``cwd``; its stripped stdout (CalledProcessError on failure)."""
    done = subprocess.run(
        ["git", "-c", "init.defaultBranch=main", "-c", "protocol.file.allow=always", *args],
        cwd=cwd,
        env=git_env(),
        capture_output=True,
        check=True,
    )
    return done.stdout.decode("utf-8", "replace").strip()


def write_files(root: Path, files: Mapping[str, str | bytes]) -> None:
    """Write ``files`` (text or bytes) under ``root``, making folders as needed."""
    for rel, content in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")


def init_repo(path: Path, *, bare: bool = False) -> Path:
    """A new, empty repository at ``path``."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", *(["--bare"] if bare else []))
    return path


def commit_all(root: Path, message: str = "change") -> str:
    """Stage everything under ``root``, commit it and return the new commit id."""
    git(root, "add", "-A")
    git(root, "commit", "-q", "--allow-empty", "-m", message)
    return git(root, "rev-parse", "HEAD")


def make_repo(path: Path, files: Mapping[str, str | bytes], message: str = "first") -> str:
    """A repository at ``path`` holding ``files`` in one commit; the commit id."""
    init_repo(path)
    write_files(path, files)
    return commit_all(path, message)


def png_bytes() -> bytes:
    """A real 1x1 PNG."""
    return make_png()


def fact_rows(repo: PinnedRepository) -> int:
    """How many blob facts the repository's fact cache file holds."""
    path = repo.state_dir / f"facts-v{FACTS_VERSION}.db"
    with sqlite3.connect(path) as db:
        (count,) = db.execute("SELECT count(*) FROM facts").fetchone()
    db.close()
    return int(count)


@attrs.define(frozen=True)
class Project:
    """A working repository and the id of its first commit."""

    path: Path
    first: str


@pytest.fixture
def host() -> PluginHost:
    """A host that loads no entry-point plugin (only the kernel's built-ins)."""
    return PluginHost(allow=[])


@pytest.fixture
def reading_host() -> PluginHost:
    """A host with the repository and FTS plugins, as an application would enable them."""
    return PluginHost(allow=["taskctx-repo", "taskctx-fts"])


@pytest.fixture
def project(tmp_path: Path) -> Project:
    """A repository with :data:`FILES` in its first commit."""
    path = tmp_path / "project"
    return Project(path, make_repo(path, FILES))


PinFactory = Callable[..., PinnedRepository]


@pytest.fixture
def pin(host: PluginHost) -> Iterator[PinFactory]:
    """``pin(location, commit="HEAD", paths=("**",), **kw)``: closed at teardown."""
    made: list[PinnedRepository] = []

    def make(
        location: str | Path, commit: str = "HEAD", paths: Iterable[str] = ("**",), **kw: Any
    ) -> PinnedRepository:
        kw.setdefault("host", host)
        repository = PinnedRepository(location, commit, paths, **kw)
        made.append(repository)
        return repository

    yield make
    for repository in made:
        repository.close()
