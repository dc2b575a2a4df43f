"""The 11 real Anthropic skills of the shared eval set discover, validate and bind under the
library's limits exactly as skills-ref judges them.

The set is ``skills/anthropics`` of the eval data (:mod:`bench.evaldata`: ``$TASKCTX_EVAL``
or ``shared/eval`` beside the checkout) and is read-only: binding works on a copy. When the
folder is absent (a plain clone) every test here skips.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from skills_ref.validator import validate
from taskctx_skills import SkillLibrary

from bench.evaldata import eval_root, missing_reason

REPO = Path(__file__).resolve().parents[3]
EXPECTED_SKILLS = 11


EVAL_SKILLS = eval_root() / "skills" / "anthropics"
pytestmark = pytest.mark.skipif(not EVAL_SKILLS.is_dir(), reason=missing_reason(EVAL_SKILLS))


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
