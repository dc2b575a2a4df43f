"""Staged delivery: write a candidate privately, verify it, promote it atomically, read back.

Every write of a workspace goes through :func:`atomic_write`, inside a folder opened by
:mod:`taskctx_workspace.beneath`: a hidden temporary sibling
(``.<name>.taskctx-tmp-<pid>-<random>``, a reserved name no listing shows) is created
``O_EXCL | O_NOFOLLOW`` relative to the folder's descriptor, locked (``flock``), written
and fsynced; ``rename`` with both ends named by the folder descriptor puts it over the
target, and the folder is fsynced. A process killed at any point leaves the target
holding exactly the old or exactly the new bytes.

A killed writer leaves its temporary file behind. :func:`sweep_stale` removes such
leftovers: a temporary file is stale when its lock is free (the kernel drops a lock when
its holder dies, even by ``kill -9``) and the pid in its name is no live process. Both
must agree, so a live writer's file (locked, or in the instant between its creation and
its lock, with a live pid) is never removed.

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
import os
import re
import stat
import sys
import time
import uuid
from collections.abc import Callable

from taskctx.digests import sha256_hex
from taskctx.errors import TaskCtxError
from taskctx_workspace.beneath import Located
from taskctx_workspace.errors import (
    PromotionBlocked,
    WorkspaceConflictError,
    WorkspaceNotFoundError,
)
from taskctx_workspace.paths import TEMP_MARKER
from taskctx_workspace.results import FileRef, Origin, StagedFile

if sys.platform != "win32":
    import fcntl

__all__ = [
    "LEGACY_STALE_AFTER_S",
    "STEPS",
    "StepHook",
    "atomic_write",
    "is_stale",
    "promote_bytes",
    "read_whole",
    "remove_if_stale",
    "stage_bytes",
    "sweep_stale",
    "temp_name",
]

StepHook = Callable[[str], None]
STEPS = ("temp_written", "temp_synced", "replaced", "dir_synced")
"""The steps of an atomic write, in order; ``_step_hook`` is called after each."""
LEGACY_STALE_AFTER_S = 3600.0
"""A temporary file named without a pid (older versions) is stale once unlocked this long."""

_step_hook: StepHook | None = None
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_TEMP_TAIL = re.compile(re.escape(TEMP_MARKER) + r"(?:([1-9][0-9]{0,9})-)?[0-9a-f]{12}\Z")


def _step(name: str) -> None:
    hook = _step_hook
    if hook is not None:
        hook(name)


def temp_name(name: str) -> str:
    """A fresh hidden temporary name for a sibling of ``name``: this pid and 12 random hex."""
    return f".{name[:150]}{TEMP_MARKER}{os.getpid()}-{uuid.uuid4().hex[:12]}"


def read_whole(at: Located) -> bytes:
    """All bytes of the regular file at ``at``."""
    return at.read()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def atomic_write(at: Located, data: bytes, *, expected_current: str | None = None) -> None:
    """Replace the file at ``at`` with ``data`` atomically (temp, fsync, rename, fsync dir).

    ``expected_current``: the digest the target must still have just before the replace,
    else :class:`WorkspaceConflictError` and the target is left alone. An existing
    target's permission bits are kept.
    """
    folder, name, rel = at.dir_fd, at.name, at.rel
    temp = temp_name(name)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_CLOEXEC | _O_NOFOLLOW
    try:
        fd = os.open(temp, flags, 0o666, dir_fd=folder)
    except FileNotFoundError:
        raise WorkspaceNotFoundError(
            f"{rel}: its folder was removed by another process while it was written; "
            "nothing was written"
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # held until the rename: a live writer's temp
        current = at.stat()
        if current is not None and stat.S_ISREG(current.st_mode):
            os.fchmod(fd, stat.S_IMODE(current.st_mode))
        _write_all(fd, data)
        _step("temp_written")
        os.fsync(fd)
        _step("temp_synced")
        if expected_current is not None:
            found = sha256_hex(at.read())
            if found != expected_current:
                raise WorkspaceConflictError(
                    f"{rel} changed while it was being edited: expected sha256 "
                    f"{expected_current}, found {found}; nothing was written",
                    path=rel,
                    expected=expected_current,
                    actual=found,
                )
        os.replace(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=folder)
        raise
    finally:
        os.close(fd)
    _step("replaced")
    os.fsync(folder)
    _step("dir_synced")


# -- leftovers of killed writers ---------------------------------------------------------


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's live process
    return True


def is_stale(name: str, st: os.stat_result, *, locked: bool, now: float | None = None) -> bool:
    """Whether the temporary file ``name`` (its stat ``st``) was left by a dead writer.

    ``locked``: whether another descriptor holds its lock. A pid-less (legacy) name is
    stale once unlocked for :data:`LEGACY_STALE_AFTER_S`.
    """
    match = _TEMP_TAIL.search(name)
    if match is None or locked:
        return False
    if match.group(1) is None:
        moment = time.time() if now is None else now
        return moment - st.st_mtime > LEGACY_STALE_AFTER_S
    return not _alive(int(match.group(1)))


def remove_if_stale(folder: int, name: str) -> bool:
    """Remove the temporary file ``name`` in the folder ``folder`` if it is stale."""
    if TEMP_MARKER not in name:
        return False
    try:
        fd = os.open(name, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC, dir_fd=folder)
    except OSError:
        return False  # gone, or a symlink or special file: not ours to remove
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # a live writer holds it
        if not is_stale(name, st, locked=False):
            return False
        now = os.stat(name, dir_fd=folder, follow_symlinks=False)
        if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            return False  # replaced since it was opened
        os.unlink(name, dir_fd=folder)
        return True
    except FileNotFoundError:
        return False
    finally:
        os.close(fd)


def sweep_stale(folder: int) -> int:
    """Remove the stale temporary files directly in ``folder``; return how many."""
    with os.scandir(folder) as listing:
        names = [entry.name for entry in listing if TEMP_MARKER in entry.name]
    return sum(remove_if_stale(folder, name) for name in names)


# -- staged delivery ---------------------------------------------------------------------


def stage_bytes(at: Located, data: bytes) -> StagedFile:
    """Write the candidate ``data`` at ``at`` and read it back whole."""
    digest = sha256_hex(data)
    atomic_write(at, data)
    back = sha256_hex(read_whole(at))
    if back != digest:
        raise PromotionBlocked(
            at.rel, "readback_mismatch", f"staged bytes read back as {back}, written as {digest}"
        )
    return StagedFile(path=at.rel, sha256=digest, size=len(data))


def promote_bytes(
    staged: StagedFile,
    read_staged: Callable[[], bytes],
    open_target: Callable[[], Located],
    target_rel: str,
    expected_sha256: str,
    *,
    origin: Origin,
) -> FileRef:
    """Verify ``staged`` (its bytes from ``read_staged``) and put them at the target.

    ``open_target`` runs only after the verification: it makes the target's folders and
    returns them open, and the target is written and read back inside that folder.
    Returns a readback-verified FileRef.
    """
    if expected_sha256 != staged.sha256:
        raise PromotionBlocked(
            target_rel,
            "expected_digest_mismatch",
            f"expected sha256 {expected_sha256} but staged {staged.path!r} is {staged.sha256}",
        )
    try:
        data = read_staged()
    except WorkspaceNotFoundError:
        raise PromotionBlocked(
            target_rel, "staged_missing", f"the staged candidate {staged.path!r} is gone"
        ) from None
    actual = sha256_hex(data)
    if actual != staged.sha256:
        raise PromotionBlocked(
            target_rel,
            "staged_digest_mismatch",
            f"staged {staged.path!r} now reads as {actual}, staged as {staged.sha256}",
        )
    try:
        at = open_target()
    except OSError as exc:
        raise PromotionBlocked(target_rel, "write_failed", f"{type(exc).__name__}: {exc}") from exc
    with at:
        try:
            atomic_write(at, data)
        except OSError as exc:
            raise PromotionBlocked(
                target_rel, "write_failed", f"{type(exc).__name__}: {exc}"
            ) from exc
        try:
            back = read_whole(at)
        except (OSError, TaskCtxError) as exc:
            raise PromotionBlocked(
                target_rel, "readback_failed", f"{type(exc).__name__}: {exc}"
            ) from exc
    if sha256_hex(back) != actual:
        raise PromotionBlocked(
            target_rel,
            "readback_mismatch",
            f"the target reads back as {sha256_hex(back)}, promoted as {actual}",
        )
    return FileRef(
        path=target_rel, sha256=actual, size=len(back), readback_verified=True, origin=origin
    )
