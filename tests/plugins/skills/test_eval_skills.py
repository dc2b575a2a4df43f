"""The 11 real Anthropic skills of the shared eval set discover, validate and bind under the
library's limits exactly as skills-ref judges them.

The set lives beside the clone (``<repo>/../shared/eval/skills/anthropics``; for a git
worktree, beside its main checkout) and is read-only: binding works on a copy. When the
folder is absent (a plain clone) every test here skips.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from skills_ref.validator import validate
from taskctx_skills import SkillLibrary

REPO = Path(__file__).resolve().parents[3]
EXPECTED_SKILLS = 11


def _eval_skills() -> Path:
    """The eval set's folder, beside this checkout or beside the main checkout of a worktree."""
    candidates = [REPO.parent]
    common = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--path-format=absolute", "--git-common-dir"],
        capture_output=True,
        text=True,
        check=False,
    )
    if common.returncode == 0:
        candidates.append(Path(common.stdout.strip()).parent.parent)
    found = [c / "shared" / "eval" / "skills" / "anthropics" for c in candidates]
    return next((path for path in found if path.is_dir()), found[0])


EVAL_SKILLS = _eval_skills()
pytestmark = pytest.mark.skipif(not EVAL_SKILLS.is_dir(), reason=f"no eval set at {EVAL_SKILLS}")


def test_every_real_skill_is_discovered_with_the_validators_verdict() -> None:
    """discover() lists all 11 skills; each verdict is exactly skills-ref's own."""
    entries = SkillLibrary(EVAL_SKILLS).discover()
    assert len(entries) == EXPECTED_SKILLS
    for entry in entries:
        expected = validate(EVAL_SKILLS / entry.folder)
        assert (entry.valid, entry.problems) == (not expected, tuple(expected)), entry.folder
        assert entry.name == entry.folder
        assert entry.description


def test_every_valid_real_skill_binds_with_all_its_files(tmp_path: Path) -> None:
    """Each skill skills-ref accepts binds under the default limits with every file it has."""
    root = tmp_path / "skills"
    shutil.copytree(EVAL_SKILLS, root)
    valid = [p.name for p in sorted(root.iterdir()) if not validate(p)]
    assert len(valid) >= EXPECTED_SKILLS - 1
    library = SkillLibrary(root, trusted=valid)
    for name in valid:
        relative = [p.relative_to(root / name) for p in (root / name).rglob("*") if p.is_file()]
        files = sorted(
            r.as_posix() for r in relative if not any(part.startswith(".") for part in r.parts)
        )
        assert library.validate(name) == []
        assert [f.path for f in library.bind(name).files] == files, name
