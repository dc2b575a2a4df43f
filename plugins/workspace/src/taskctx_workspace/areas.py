"""Where a workspace's files live, and which place a read finds or a write lands in.

Three areas, each a :class:`~taskctx_workspace.beneath.Base` of the pinned root: the
external folder itself, this execution's own copies (``.taskctx/files/<execution-id>/``)
and its staged candidates (``.taskctx/staged/<execution-id>/``). A read finds the
external file first and falls back to this execution's copy; a write lands on the real
file in ``read_write`` mode and on this execution's copy in ``read_only`` mode, so an
existing external file is never modified there. Every write is atomic
(:mod:`taskctx_workspace.staging`); a target that is a folder, a special file or (when
written) a hard link is refused.
"""

from __future__ import annotations

import os
from typing import Literal

from taskctx.digests import sha256_hex
from taskctx.media import classify_bytes
from taskctx_workspace import staging
from taskctx_workspace.beneath import Base, Located, Root, read_all
from taskctx_workspace.edits import replace_once
from taskctx_workspace.errors import WorkspaceConflictError, WorkspaceNotFoundError
from taskctx_workspace.paths import require_regular, require_single_link
from taskctx_workspace.results import FileRef, Origin, StagedFile

__all__ = ["Areas", "Mode", "ReadOrigin"]

Mode = Literal["read_only", "read_write"]
ReadOrigin = Literal["auto", "external", "fallback"]


class Areas:
    """The external, fallback and staging areas of one execution under one write mode."""

    __slots__ = ("_swept", "external", "fallback", "mode", "staged")

    def __init__(self, pinned: Root, execution_id: str, mode: Mode) -> None:
        """The areas of execution ``execution_id`` under the pinned root."""
        self.mode: Mode = mode
        self.external: Base = pinned.base()
        self.fallback: Base = pinned.area("files", execution_id, label="this execution's area")
        self.staged: Base = pinned.area(
            "staged", execution_id, label="this execution's staging area"
        )
        self._swept: set[tuple[int, int]] = set()

    # -- locating files ------------------------------------------------------------------

    @staticmethod
    def open_in(area: Base, rel: str) -> int | None:
        """A descriptor of the regular file ``rel`` under ``area``; None if nothing is there."""
        try:
            with area.locate(rel) as at:
                return at.open_regular()
        except WorkspaceNotFoundError:
            return None

    def open(self, rel: str, origin: ReadOrigin = "auto") -> tuple[int, os.stat_result, Origin]:
        """The open file a read of ``rel`` finds (external first), its stat and origin."""
        fd, found = self.find(rel, origin)
        return fd, os.fstat(fd), found

    def find(self, rel: str, origin: ReadOrigin = "auto") -> tuple[int, Origin]:
        """The open file a read of ``rel`` finds (external first) and its origin."""
        if origin != "fallback":
            fd = self.open_in(self.external, rel)
            if fd is not None:
                return fd, "external"
        if origin != "external":
            fd = self.open_in(self.fallback, rel)
            if fd is not None:
                return fd, "fallback"
        where = {"auto": "", "external": " (external only)", "fallback": " (this execution's)"}
        raise WorkspaceNotFoundError(f"{rel}: no such file in the workspace{where[origin]}")

    def open_external(self, rel: str) -> int:
        """A descriptor of the external file ``rel``; WorkspaceNotFoundError if missing."""
        fd = self.open_in(self.external, rel)
        if fd is None:
            raise WorkspaceNotFoundError(f"{rel}: no such file in the workspace")
        return fd

    @staticmethod
    def check_target(area: Base, rel: str, *, written: bool) -> None:
        """Refuse a folder or special file at ``rel`` (and a hard link if it is ``written``)."""
        try:
            with area.locate(rel) as at:
                st = at.stat()
        except WorkspaceNotFoundError:
            return
        if st is not None:
            require_regular(rel, st)
            if written:
                require_single_link(rel, st)

    def write_target(self, rel: str) -> tuple[Base, Origin]:
        """The area a write of ``rel`` lands in under the mode, its target checked."""
        self.check_target(self.external, rel, written=self.mode == "read_write")
        if self.mode == "read_only":
            self.check_target(self.fallback, rel, written=True)
            return self.fallback, "fallback"
        return self.external, "external"

    def open_target(self, area: Base, rel: str) -> Located:
        """The target's folder, made and open, the target checked again; stale
        temporary files of killed writers in that folder are removed (once per folder)."""
        at = area.locate(rel, create_parents=True)
        try:
            st = at.stat()
            if st is not None:
                require_regular(rel, st)
                require_single_link(rel, st)
            self._sweep(at.dir_fd)
        except BaseException:
            at.close()
            raise
        return at

    def _sweep(self, folder: int) -> None:
        st = os.fstat(folder)
        key = (st.st_dev, st.st_ino)
        if key not in self._swept:
            self._swept.add(key)
            staging.sweep_stale(folder)

    def temp_seen(self, folder: int, name: str) -> None:
        """A walk met the temporary file ``name`` in ``folder``: remove it if it is stale."""
        staging.remove_if_stale(folder, name)

    # -- writing ---------------------------------------------------------------------

    def write(self, rel: str, data: bytes) -> FileRef:
        """Write ``data`` to ``rel`` atomically where the mode says."""
        area, origin = self.write_target(rel)
        with self.open_target(area, rel) as at:
            staging.atomic_write(at, data)
        return FileRef(path=rel, sha256=sha256_hex(data), size=len(data), origin=origin)

    def edit(self, rel: str, old: str, new: str, expected_sha256: str | None) -> FileRef:
        """Replace the one occurrence of ``old`` with ``new`` in the file a write of ``rel``
        lands on (in ``read_only`` mode made from the external file on the first edit)."""
        source: ReadOrigin = "external" if self.mode == "read_write" else "auto"
        if self.mode == "read_only":
            copy = self.open_in(self.fallback, rel)
            if copy is not None:
                os.close(copy)
                source = "fallback"
        fd, _, found = self.open(rel, source)
        try:
            data = read_all(fd)
        finally:
            os.close(fd)
        digest = sha256_hex(data)
        if expected_sha256 is not None and expected_sha256 != digest:
            raise WorkspaceConflictError(
                f"{rel}: expected sha256 {expected_sha256} but the file is {digest}; "
                "read it again before editing",
                path=rel,
                expected=expected_sha256,
                actual=digest,
            )
        media = classify_bytes(rel, data)
        updated = replace_once(data, old, new, rel=rel, media=media)
        area, origin = self.write_target(rel)
        current = digest if found == origin else None  # checked again just before replace
        with self.open_target(area, rel) as at:
            staging.atomic_write(at, updated, expected_current=current)
        return FileRef(path=rel, sha256=sha256_hex(updated), size=len(updated), origin=origin)

    # -- staged delivery ---------------------------------------------------------------

    def stage(self, rel: str, data: bytes) -> StagedFile:
        """Write a candidate into the staging area and read it back."""
        self.check_target(self.staged, rel, written=True)
        with self.open_target(self.staged, rel) as at:
            return staging.stage_bytes(at, data)

    def promote(self, staged: StagedFile, staged_rel: str, rel: str, expected: str) -> FileRef:
        """Verify ``staged`` (at ``staged_rel``) and deliver it to ``rel`` atomically."""
        area, origin = self.write_target(rel)

        def read_staged() -> bytes:
            with self.staged.locate(staged_rel) as at:
                return at.read()

        return staging.promote_bytes(
            staged,
            read_staged,
            lambda: self.open_target(area, rel),
            rel,
            expected,
            origin=origin,
        )
