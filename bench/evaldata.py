"""Where the shared evaluation data lives, for the tests and the benches alike.

The data (80 documents, BEIR SciFact, 11 Agent Skills) is third-party and never copied
into the repository. ``TASKCTX_EVAL`` names its folder (the one holding ``docs/``,
``beir/scifact/`` and ``skills/anthropics/``); without it, ``shared/eval`` beside this
checkout, or beside the main checkout when this is a git worktree. ``TASKCTX_EVAL_DOCS``
still names the documents folder alone. Whatever reads a set skips cleanly when it is
absent, saying where it looked and how to point at it.
"""

from __future__ import annotations

import os
import subprocess
from functools import cache
from pathlib import Path

__all__ = ["EVAL_DOCS_ENV", "EVAL_ENV", "docs_dir", "eval_root", "missing_reason"]

EVAL_ENV = "TASKCTX_EVAL"
EVAL_DOCS_ENV = "TASKCTX_EVAL_DOCS"
REPO_ROOT = Path(__file__).resolve().parents[1]


@cache
def _beside_checkout() -> Path:
    """``shared/eval`` beside this checkout, else beside a worktree's main checkout."""
    candidates = [REPO_ROOT.parent]
    common = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "rev-parse", "--path-format=absolute", "--git-common-dir"],
        capture_output=True,
        text=True,
        check=False,
    )
    if common.returncode == 0 and common.stdout.strip():
        candidates.append(Path(common.stdout.strip()).parent.parent)
    found = [candidate / "shared" / "eval" for candidate in candidates]
    return next((path for path in found if path.is_dir()), found[0])


def eval_root() -> Path:
    """The eval folder: ``$TASKCTX_EVAL``, else ``shared/eval`` beside the checkout."""
    named = os.environ.get(EVAL_ENV)
    return Path(named) if named else _beside_checkout()


def docs_dir() -> Path:
    """The 80 documents: ``$TASKCTX_EVAL_DOCS``, else ``docs`` in :func:`eval_root`."""
    named = os.environ.get(EVAL_DOCS_ENV)
    return Path(named) if named else eval_root() / "docs"


def missing_reason(path: Path) -> str:
    """Why a test or bench skips a set that is not at ``path``, and how to get it."""
    return f"eval data not found at {path} (set {EVAL_ENV} to the folder holding it)"
