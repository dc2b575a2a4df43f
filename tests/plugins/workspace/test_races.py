"""Path races: a real second process swaps folders for symlinks to outside meanwhile.

The attack and its checks live in :mod:`races` (also runnable as a probe). Nothing may
come back from outside, nothing may be created or changed outside, no success may be
reported for a file that is not inside the root, and every operation that does not
succeed raises a TaskCtxError (PolicyError, not found, PromotionBlocked), never a bare
OSError.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.plugins.workspace import races

pytestmark = pytest.mark.slow

SECONDS = 1.5


def test_swapping_a_folder_of_the_root_never_escapes(tmp_path: Path) -> None:
    """``d`` swapped: reads, writes, staging, promotion, listing and stamps stay inside."""
    tally = races.attack(races.root_child(tmp_path), SECONDS)
    assert tally.swaps > 50, tally.summary()
    assert not tally.escapes, tally.summary()
    assert not tally.unclear, tally.summary()
    assert tally.count("done") > 10, tally.summary()


def test_swapping_a_middle_folder_never_escapes(tmp_path: Path) -> None:
    """``a/b`` swapped under ``a/b/c/f.txt``: every operation stays inside."""
    tally = races.attack(races.middle_folder(tmp_path), SECONDS)
    assert tally.swaps > 50, tally.summary()
    assert not tally.escapes, tally.summary()
    assert not tally.unclear, tally.summary()
    assert tally.count("done") > 10, tally.summary()


def test_swapping_folders_of_the_fallback_and_staging_areas_never_escapes(
    tmp_path: Path,
) -> None:
    """Read-only mode: ``d`` swapped in this execution's fallback and staging areas."""
    tally = races.attack(races.state_areas(tmp_path), SECONDS)
    assert tally.swaps > 50, tally.summary()
    assert not tally.escapes, tally.summary()
    assert not tally.unclear, tally.summary()
    assert tally.count("done") > 10, tally.summary()
