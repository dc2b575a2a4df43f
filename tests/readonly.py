"""Running a command with a folder mounted read only (a user and mount namespace)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

__all__ = ["read_only_runner"]


READ_ONLY_SCRIPT = """
set -e
mount --bind "$1" "$1"
mount -o remount,bind,ro "$1"
if touch "$1/probe" 2>/dev/null; then echo "mount is writable"; exit 3; fi
shift
exec "$@"
"""


def read_only_runner() -> list[str]:
    """The prefix that runs ``FOLDER COMMAND...`` with FOLDER mounted read only, or a
    skip saying what is missing (a failure under CI)."""
    unshare = shutil.which("unshare")
    problem = None
    if unshare is None:
        problem = "no unshare(1) (Debian: apt-get install util-linux)"
    else:
        probe = subprocess.run(
            [unshare, "--user", "--map-root-user", "--mount", "true"],
            capture_output=True,
            text=True,
            check=False,
        )
        if probe.returncode != 0:
            problem = f"unshare --user --mount is not permitted here: {probe.stderr.strip()}"
    if problem is not None:
        if os.environ.get("CI"):
            pytest.fail(f"a read-only mount is needed in CI: {problem}")
        pytest.skip(f"cannot mount a folder read only: {problem}")
    assert unshare is not None
    return [unshare, "--user", "--map-root-user", "--mount", "sh", "-c", READ_ONLY_SCRIPT, "sh"]
