"""Fixtures of the skills tests: skill folders in the Agent Skills layout, hosts, contexts."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path

import pytest
from taskctx_skills import SkillLibrary

from taskctx import PluginHost, TaskContext
from taskctx.statefiles import folder_state_dir
from taskctx.testing import make_png

REVIEW_BODY = """\
# Review code

Read the diff before the description.

## Checklist

Every changed function has a test. Names say what they hold.

## Reporting

Write each finding with its file and line, most severe first.
"""

REVIEW_FRONT_MATTER = """\
name: review-code
description: Review a pull request for bugs, missing tests and unclear names.
license: Apache-2.0
metadata:
  author: qa-team
  version: "1.2"
"""

DEPLOY_BODY = """\
# Deploy the app

## Steps

Run make deploy ENV=staging, then poll the healthz endpoint until it answers 200.

## Rollback

Run make rollback with the previous release tag.
"""

TRIAGE_BODY = """\
# Triage incidents

## Severity

A page that wakes someone is a sev1; a failed nightly batch is a sev3.
"""


def png_bytes() -> bytes:
    """A real 1x1 PNG."""
    return make_png()


REVIEW_FILES: Mapping[str, str | bytes] = {
    "references/style-guide.md": "# Style guide\n\nPrefer early returns over nested branches.\n",
    "references/diagram.png": png_bytes(),
    "examples/good-review.md": "# A good review\n\nsrc/upload.py:42 retries forever; cap it.\n",
    "scripts/lint.py": "print('lint the changed files')\n",
    "assets/finding-template.txt": "Finding: {file}:{line} {severity}\n",
}


def sha256_of(data: str | bytes) -> str:
    """``sha256:<hex>`` of text (UTF-8) or bytes."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return "sha256:" + hashlib.sha256(raw).hexdigest()


def write_skill(
    root: Path,
    name: str,
    description: str | None = "A test skill.",
    body: str = "# Skill\n\nDo the thing.\n",
    files: Mapping[str, str | bytes] | None = None,
    *,
    front_matter: str | None = None,
    folder: str | None = None,
) -> Path:
    """Write ``<root>/<folder or name>/SKILL.md`` and ``files``; return the skill folder.

    ``front_matter`` replaces the generated YAML (between the ``---`` lines) verbatim.
    """
    path = root / (folder or name)
    path.mkdir(parents=True, exist_ok=True)
    if front_matter is None:
        front_matter = f"name: {name}\n"
        if description is not None:
            front_matter += f"description: {description}\n"
    (path / "SKILL.md").write_text(f"---\n{front_matter}---\n{body}", encoding="utf-8")
    for relative, content in (files or {}).items():
        target = path / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")
    return path


def store_root(library_root: Path) -> Path:
    """Where a library's store lives by default: its part of the state folder."""
    return folder_state_dir(library_root).path / "skills"


def store_files(library_root: Path) -> list[str]:
    """Every file under the library's store, relative to it, sorted."""
    store = store_root(library_root)
    if not store.exists():
        return []
    return sorted(p.relative_to(store).as_posix() for p in store.rglob("*") if p.is_file())


def skills_host(*extra: str) -> PluginHost:
    """A host loading the skills plugin and the fts provider (plus ``extra`` distributions)."""
    return PluginHost(allow=["taskctx-skills", "taskctx-fts", *extra])


@pytest.fixture
def lib(tmp_path: Path) -> Path:
    """A library folder with three valid skills: review-code (with resources), deploy-app,
    triage-incidents."""
    root = tmp_path / "skills"
    write_skill(
        root,
        "review-code",
        body=REVIEW_BODY,
        files=REVIEW_FILES,
        front_matter=REVIEW_FRONT_MATTER,
    )
    write_skill(
        root,
        "deploy-app",
        "Deploy the service to the staging cluster and check its health endpoint.",
        DEPLOY_BODY,
    )
    write_skill(
        root,
        "triage-incidents",
        "Sort incoming incidents by severity and page the owner.",
        TRIAGE_BODY,
    )
    return root


@pytest.fixture
def library(lib: Path) -> SkillLibrary:
    """The library over ``lib`` trusting all three skills."""
    return SkillLibrary(lib, trusted=["review-code", "deploy-app", "triage-incidents"])


@pytest.fixture
def context(tmp_path: Path) -> TaskContext:
    """A TaskContext on the skills + fts host with its own state directory."""
    return TaskContext("skills-task", host=skills_host(), state_dir=tmp_path / "state")
