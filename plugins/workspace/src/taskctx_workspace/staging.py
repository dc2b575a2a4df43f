"""Staged delivery: write a candidate privately, verify it, promote it atomically, read back.

Every write of a workspace goes through :func:`atomic_write`: a hidden temporary sibling
(``.<name>.taskctx-tmp-<random>``, a reserved name no listing shows) is written and
fsynced, ``os.replace`` puts it over the target, and the folder is fsynced. A process
killed at any point leaves the target holding exactly the old or exactly the new bytes.

:func:`stage_bytes` writes a candidate and reads it back whole. :func:`promote_bytes`
checks that the caller's expected digest, the staged digest and the digest of the staged
bytes read again all agree, writes the target atomically, then reads the target back
whole and compares digests. A rejected verification leaves the target untouched; every
failure raises :class:`~taskctx_workspace.errors.PromotionBlocked` and claims nothing.

``_step_hook`` is a fault-injection point for tests: when set, it is called with each
step name of :data:`STEPS` as that step completes.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import uuid
from collections.abc import Callable
from pathlib import Path

from taskctx.errors import TaskCtxError
from taskctx_workspace.errors import (
    PromotionBlocked,
    WorkspaceConflictError,
    WorkspaceNotFoundError,
)
from taskctx_workspace.paths import TEMP_MARKER, open_regular
from taskctx_workspace.results import FileRef, Origin, StagedFile

__all__ = [
    "STEPS",
    "StepHook",
    "atomic_write",
    "fsync_dir",
    "promote_bytes",
    "read_whole",
    "stage_bytes",
    "temp_sibling",
]

StepHook = Callable[[str], None]
STEPS = ("temp_written", "temp_synced", "replaced", "dir_synced")
"""The steps of an atomic write, in order; ``_step_hook`` is called after each."""

_step_hook: StepHook | None = None
_CHUNK = 1 << 20
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", None)


def _step(name: str) -> None:
    hook = _step_hook
    if hook is not None:
        hook(name)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def temp_sibling(target: Path) -> Path:
    """A fresh hidden temporary name next to ``target`` (same folder, same file system)."""
    return target.with_name(f".{target.name[:180]}{TEMP_MARKER}{uuid.uuid4().hex[:12]}")


def fsync_dir(directory: Path) -> None:
    """Make a rename in ``directory`` durable (no-op where folders cannot be opened)."""
    if _O_DIRECTORY is None:  # pragma: no cover - Windows
        return
    fd = os.open(directory, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_whole(file: Path, rel: str) -> bytes:
    """All bytes of the regular file ``file`` (already confined; ``rel`` names it)."""
    fd = open_regular(file, rel)
    try:
        chunks = []
        while chunk := os.read(fd, _CHUNK):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def atomic_write(
    target: Path, data: bytes, *, rel: str, expected_current: str | None = None
) -> None:
    """Replace ``target`` with ``data`` atomically (temp sibling, fsync, replace, fsync dir).

    ``expected_current``: the digest the target must still have just before the replace,
    else :class:`WorkspaceConflictError` and the target is left alone. An existing
    target's permission bits are kept.
    """
    temp = temp_sibling(target)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_CLOEXEC | _O_NOFOLLOW, 0o666)
    try:
        try:
            with contextlib.suppress(FileNotFoundError):
                os.fchmod(fd, stat.S_IMODE(os.stat(target).st_mode))
            _write_all(fd, data)
            _step("temp_written")
            os.fsync(fd)
            _step("temp_synced")
        finally:
            os.close(fd)
        if expected_current is not None:
            current = _sha256(read_whole(target, rel))
            if current != expected_current:
                raise WorkspaceConflictError(
                    f"{rel} changed while it was being edited: expected sha256 "
                    f"{expected_current}, found {current}; nothing was written",
                    path=rel,
                    expected=expected_current,
                    actual=current,
                )
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    _step("replaced")
    fsync_dir(target.parent)
    _step("dir_synced")


def stage_bytes(location: Path, rel: str, data: bytes) -> StagedFile:
    """Write the candidate ``data`` at ``location`` and read it back whole."""
    digest = _sha256(data)
    atomic_write(location, data, rel=rel)
    back = _sha256(read_whole(location, rel))
    if back != digest:
        raise PromotionBlocked(
            rel, "readback_mismatch", f"staged bytes read back as {back}, written as {digest}"
        )
    return StagedFile(path=rel, sha256=digest, size=len(data))


def promote_bytes(
    staged: StagedFile,
    staged_location: Path,
    target: Path,
    target_rel: str,
    expected_sha256: str,
    *,
    origin: Origin,
    prepare: Callable[[], None] = lambda: None,
) -> FileRef:
    """Verify ``staged`` and put its bytes at ``target``; ``prepare`` runs just before the
    write (it makes the target's folders). Returns a readback-verified FileRef."""
    if expected_sha256 != staged.sha256:
        raise PromotionBlocked(
            target_rel,
            "expected_digest_mismatch",
            f"expected sha256 {expected_sha256} but staged {staged.path!r} is {staged.sha256}",
        )
    try:
        data = read_whole(staged_location, staged.path)
    except WorkspaceNotFoundError:
        raise PromotionBlocked(
            target_rel, "staged_missing", f"the staged candidate {staged.path!r} is gone"
        ) from None
    actual = _sha256(data)
    if actual != staged.sha256:
        raise PromotionBlocked(
            target_rel,
            "staged_digest_mismatch",
            f"staged {staged.path!r} now reads as {actual}, staged as {staged.sha256}",
        )
    try:
        prepare()
        atomic_write(target, data, rel=target_rel)
    except OSError as exc:
        raise PromotionBlocked(target_rel, "write_failed", f"{type(exc).__name__}: {exc}") from exc
    try:
        back = read_whole(target, target_rel)
    except (OSError, TaskCtxError) as exc:
        raise PromotionBlocked(
            target_rel, "readback_failed", f"{type(exc).__name__}: {exc}"
        ) from exc
    if _sha256(back) != actual:
        raise PromotionBlocked(
            target_rel,
            "readback_mismatch",
            f"the target reads back as {_sha256(back)}, promoted as {actual}",
        )
    return FileRef(
        path=target_rel, sha256=actual, size=len(back), readback_verified=True, origin=origin
    )
