"""Helpers of the hostile-skill tests: discovery in a child process, bounded in time and memory."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest
from taskctx_skills import SkillEntry

from tests.childpeak import PEAK_RSS_SOURCE

CHILD_MEMORY_CAP = 1024 * 1024 * 1024
"""Address space of a child: a regression fails with MemoryError instead of eating the host."""

_DISCOVER = (
    PEAK_RSS_SOURCE
    + r"""
import json, resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[2]), int(sys.argv[2])))
from skills_ref.parser import parse_frontmatter
from taskctx_skills import SkillLibrary
parse_frontmatter("---\nname: warm\n---\n")  # imports done before the measure
library = SkillLibrary(sys.argv[1])
before = peak_rss_kib()
start = time.perf_counter()
entries = library.discover()
seconds = time.perf_counter() - start
growth = peak_rss_kib() - before
print(json.dumps({"entries": [e.model_dump(mode="json") for e in entries],
                  "seconds": seconds, "rss_growth_kib": growth}))
"""
)


@attrs.define(frozen=True, slots=True)
class ChildDiscovery:
    """What ``discover()`` returned in a child process, how long it took, what it grew by."""

    entries: dict[str, SkillEntry]
    seconds: float
    rss_growth_bytes: int


def run_child(code: str, *args: str, timeout: float) -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter (memory capped); return the JSON it prints.

    A child that is still running after ``timeout`` seconds fails the test: it is the
    hang the test guards against.
    """
    try:
        done = subprocess.run(
            [sys.executable, "-c", code, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"the child did not finish within {timeout} s")
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def discover_in_child(root: Path, timeout: float = 60.0) -> ChildDiscovery:
    """``SkillLibrary(root).discover()`` run in a child, its time and memory growth measured."""
    raw = run_child(_DISCOVER, str(root), str(CHILD_MEMORY_CAP), timeout=timeout)
    entries = [SkillEntry.model_validate(e) for e in raw["entries"]]
    return ChildDiscovery(
        entries={e.folder: e for e in entries},
        seconds=float(raw["seconds"]),
        rss_growth_bytes=int(raw["rss_growth_kib"]) * 1024,
    )


def assert_rest_discovered(entries: dict[str, SkillEntry], folders: list[str]) -> None:
    """The valid skills of the library are still discovered, valid, beside the hostile one."""
    for folder in folders:
        assert entries[folder].valid, entries[folder].problems
