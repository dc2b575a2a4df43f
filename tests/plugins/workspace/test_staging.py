"""Staged delivery: verified promotion, blocked outcomes, and crash safety at every step."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from taskctx_workspace import PromotionBlocked, StagedFile, TaskWorkspace, staging
from taskctx_workspace.paths import TEMP_MARKER

from taskctx import PluginHost
from taskctx.errors import PolicyError, TaskCtxError


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


OLD = b"old line\n" * 40_000
NEW = b"new text, longer than the old one\n" * 40_000


@pytest.fixture
def target(rw: TaskWorkspace) -> Path:
    """An existing external file holding OLD."""
    path = rw.root / "out" / "report.txt"
    path.parent.mkdir()
    path.write_bytes(OLD)
    return path


# --- stage and promote ------------------------------------------------------------------------


def test_stage_writes_the_candidate_privately_and_verifies_it(rw: TaskWorkspace) -> None:
    """stage() writes under .taskctx/staged/<execution-id>/ and returns its digest."""
    staged = rw.stage("out/report.txt", "draft\n")
    assert staged == StagedFile(path="out/report.txt", sha256=_sha(b"draft\n"), size=6)
    location = rw.areas_dir / "staged" / rw.execution_id / "out" / "report.txt"
    assert location.read_bytes() == b"draft\n"
    assert not (rw.root / "out").exists()


def test_promote_delivers_and_reads_back(rw: TaskWorkspace, target: Path) -> None:
    """A verified promotion replaces the target and says the readback matched."""
    staged = rw.stage("candidate.txt", NEW)
    ref = rw.promote(staged, "out/report.txt", expected_sha256=_sha(NEW))
    assert target.read_bytes() == NEW
    assert (ref.path, ref.sha256, ref.size) == ("out/report.txt", _sha(NEW), len(NEW))
    assert ref.readback_verified is True
    assert ref.origin == "external"
    assert [p.name for p in target.parent.iterdir()] == ["report.txt"]


def test_promote_creates_a_new_target(rw: TaskWorkspace) -> None:
    """A target that does not exist yet is created with its folders."""
    staged = rw.stage("x.txt", "fresh")
    rw.promote(staged, "new/dir/x.txt", staged.sha256)
    assert (rw.root / "new" / "dir" / "x.txt").read_text() == "fresh"


def test_read_only_promotion_goes_to_the_execution_area(ro: TaskWorkspace) -> None:
    """In read_only mode the promoted target is this execution's copy."""
    staged = ro.stage("notes.txt", "promoted\n")
    ref = ro.promote(staged, "notes.txt", staged.sha256)
    assert ref.origin == "fallback"
    assert ref.readback_verified
    assert (ro.root / "notes.txt").read_text() == "alpha\nbeta\n"
    assert ro.read_file("notes.txt", origin="fallback").text == "promoted\n"


def _untouched(target: Path, before: os.stat_result) -> None:
    after = target.stat()
    assert target.read_bytes() == OLD
    assert (after.st_mtime_ns, after.st_ino) == (before.st_mtime_ns, before.st_ino)
    assert [p.name for p in target.parent.iterdir()] == ["report.txt"]


def test_wrong_expected_digest_is_rejected_and_target_untouched(
    rw: TaskWorkspace, target: Path
) -> None:
    """expected_sha256 different from the staged digest blocks before any write."""
    before = target.stat()
    staged = rw.stage("c.txt", NEW)
    with pytest.raises(PromotionBlocked) as info:
        rw.promote(staged, "out/report.txt", expected_sha256=_sha(b"something else"))
    assert (info.value.outcome, info.value.reason) == ("blocked", "expected_digest_mismatch")
    assert isinstance(info.value, TaskCtxError)
    _untouched(target, before)


def test_tampered_staged_bytes_are_rejected(rw: TaskWorkspace, target: Path) -> None:
    """Staged bytes changed after staging no longer match their digest: blocked."""
    before = target.stat()
    staged = rw.stage("c.txt", NEW)
    (rw.areas_dir / "staged" / rw.execution_id / "c.txt").write_bytes(b"evil")
    with pytest.raises(PromotionBlocked) as info:
        rw.promote(staged, "out/report.txt", staged.sha256)
    assert info.value.reason == "staged_digest_mismatch"
    _untouched(target, before)


def test_forged_staged_file_is_rejected(rw: TaskWorkspace, target: Path) -> None:
    """A StagedFile whose digest does not describe the staged bytes is rejected."""
    before = target.stat()
    rw.stage("c.txt", NEW)
    forged = StagedFile(path="c.txt", sha256=_sha(b"other"), size=5)
    with pytest.raises(PromotionBlocked, match="staged_digest_mismatch"):
        rw.promote(forged, "out/report.txt", forged.sha256)
    missing = StagedFile(path="never-staged.txt", sha256=_sha(b"x"), size=1)
    with pytest.raises(PromotionBlocked, match="staged_missing"):
        rw.promote(missing, "out/report.txt", missing.sha256)
    _untouched(target, before)


def test_staged_files_of_another_execution_are_not_found(rw: TaskWorkspace) -> None:
    """Staged candidates belong to the execution that staged them."""
    staged = rw.stage("c.txt", "x")
    other = TaskWorkspace(rw.root, mode="read_write", host=rw.host)
    with pytest.raises(PromotionBlocked, match="staged_missing"):
        other.promote(staged, "c.txt", staged.sha256)


@pytest.mark.parametrize(
    ("staged_path", "target_path"), [("../x", "ok.txt"), ("ok.txt", "../x"), ("ok.txt", "/abs")]
)
def test_promotion_paths_are_confined(
    rw: TaskWorkspace, staged_path: str, target_path: str
) -> None:
    """Both the staged path and the target are confined."""
    rw.stage("ok.txt", "x")
    staged = StagedFile.model_construct(path=staged_path, sha256=_sha(b"x"), size=1)
    with pytest.raises(PolicyError):
        rw.promote(staged, target_path, _sha(b"x"))


def test_promotion_onto_a_folder_is_refused(rw: TaskWorkspace) -> None:
    """A folder target is refused before anything is written."""
    staged = rw.stage("c.txt", "x")
    with pytest.raises(PolicyError, match="a folder"):
        rw.promote(staged, "src", staged.sha256)


def test_failed_write_is_blocked_and_leaves_the_target(
    rw: TaskWorkspace, target: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An I/O failure during the write blocks the promotion; old bytes, no temp file."""
    before = target.stat()
    staged = rw.stage("c.txt", NEW)

    def fail(step: str) -> None:
        if step == "temp_synced":
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(staging, "_step_hook", fail)
    with pytest.raises(PromotionBlocked) as info:
        rw.promote(staged, "out/report.txt", staged.sha256)
    assert info.value.reason == "write_failed"
    assert "No space left" in info.value.detail
    _untouched(target, before)


@pytest.mark.parametrize(
    ("sabotage", "reason"),
    [("overwrite", "readback_mismatch"), ("delete", "readback_failed")],
)
def test_readback_failure_is_blocked(
    rw: TaskWorkspace,
    target: Path,
    monkeypatch: pytest.MonkeyPatch,
    sabotage: str,
    reason: str,
) -> None:
    """When the promoted bytes do not read back, the promotion is blocked, never claimed."""
    staged = rw.stage("c.txt", NEW)

    def interfere(step: str) -> None:
        if step == "dir_synced":
            if sabotage == "overwrite":
                target.write_bytes(NEW[:-1] + b"!")
            else:
                target.unlink()

    monkeypatch.setattr(staging, "_step_hook", interfere)
    with pytest.raises(PromotionBlocked) as info:
        rw.promote(staged, "out/report.txt", staged.sha256)
    assert (info.value.outcome, info.value.reason) == ("blocked", reason)


def test_stage_readback_mismatch_is_blocked(
    rw: TaskWorkspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A candidate that does not read back as written is not handed out."""
    monkeypatch.setattr(staging, "read_whole", lambda at: b"corrupted")
    with pytest.raises(PromotionBlocked, match="readback_mismatch"):
        rw.stage("c.txt", "draft")


# --- crash safety -------------------------------------------------------------------------------

CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from taskctx import PluginHost
    from taskctx_workspace import TaskWorkspace, staging

    root, mode, step = sys.argv[1:4]
    new = b"new text, longer than the old one\\n" * 40_000
    ws = TaskWorkspace(root, mode=mode, execution_id="crash", host=PluginHost(allow=[]))
    staged = ws.stage("candidate.txt", new)
    staging._step_hook = (
        lambda name: os.kill(os.getpid(), signal.SIGKILL) if name == step else None
    )
    ws.promote(staged, "out/report.txt", staged.sha256)
    print("promotion finished without being killed")
    """
)


@pytest.mark.parametrize("mode", ["read_write", "read_only"])
@pytest.mark.parametrize("step", staging.STEPS)
def test_a_killed_promotion_leaves_old_or_new_bytes(
    tmp_path: Path, host: PluginHost, mode: str, step: str
) -> None:
    """A child killed after each step leaves the target whole (old or new), no visible temp."""
    root = tmp_path / "ws"
    (root / "out").mkdir(parents=True)
    (root / "out" / "report.txt").write_bytes(OLD)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(root), mode, step],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()
    after = TaskWorkspace(root, mode=mode, execution_id="crash", host=host)  # type: ignore[arg-type]
    replaced = staging.STEPS.index(step) >= staging.STEPS.index("replaced")
    if mode == "read_write":
        final = (root / "out" / "report.txt").read_bytes()
    else:
        assert (root / "out" / "report.txt").read_bytes() == OLD
        copy = root / ".taskctx" / "files" / "crash" / "out" / "report.txt"
        final = copy.read_bytes() if copy.exists() else OLD
    assert final in (OLD, NEW)
    assert final == (NEW if replaced else OLD)
    temps = list(root.rglob(f"*{TEMP_MARKER}*"))
    assert bool(temps) is (not replaced)
    assert all(p.name.startswith(".") for p in temps)
    listed = [e.path for e in after.list_files(include_hidden=True)]
    assert listed == ["out/report.txt"]
    staged = after.stage("again.txt", NEW)  # a stale temp never blocks the next promotion
    assert after.promote(staged, "out/report.txt", staged.sha256).readback_verified
