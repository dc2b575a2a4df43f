"""Open beneath a folder without following links: the one owner of workspace file access.

Every file operation of a workspace (reads, writes, parent folders, staging, promotion,
the fallback area, the stat walk, digests) reaches its file through this module and
never hands a whole path to the kernel. A path is walked one component at a time from
the descriptor of a base folder (the workspace root, or an area under ``.taskctx/``):
each folder is opened with ``openat(folder, name, O_DIRECTORY | O_NOFOLLOW)``, the last
component is opened ``O_NOFOLLOW`` relative to its folder, and a rename names both ends
by folder descriptor. A folder swapped for a symlink between two operations is met as a
symlink by the open itself: nothing is checked by path and then used by path.

Symlinks inside the base keep working: when a component is a symlink, its target is read
with ``readlinkat`` and walked the same way, ``..`` steps back down the stack of folder
descriptors already held, and a target that leaves the base (``..`` above it, an absolute
path outside it), loops (more than :data:`MAX_LINKS` links) or, under the root, enters
``.taskctx/`` is refused with a :class:`~taskctx.errors.PolicyError`. The kernel never
follows a link on the workspace's behalf: this is openat2's ``RESOLVE_BENEATH`` done in
user space. Where ``os`` cannot take folder descriptors (Windows), :func:`require_support`
raises instead of falling back to path-based access.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from types import TracebackType

import attrs

from taskctx.errors import PolicyError
from taskctx.nofollow import DIR_FLAGS, FILE_FLAGS
from taskctx_workspace.errors import UnsupportedPlatformError, WorkspaceNotFoundError
from taskctx_workspace.paths import STATE_DIR_NAME, is_state_name, require_regular

__all__ = [
    "MAX_LINKS",
    "Base",
    "Located",
    "Root",
    "open_regular_at",
    "read_all",
    "require_support",
]

MAX_LINKS = 40
"""Symlinks one resolution may pass through before it is refused as a loop (Linux's limit)."""

_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CHUNK = 1 << 20
_MAKE_ATTEMPTS = 8
# errors an open of a folder component gives when a symlink or a file stands there
_NOT_A_FOLDER = (errno.ENOTDIR, errno.ELOOP)


def require_support() -> None:
    """UnsupportedPlatformError unless this platform opens files relative to a folder fd."""
    functions = (os.open, os.stat, os.mkdir, os.readlink, os.rename, os.unlink)
    missing = [f.__name__ for f in functions if f not in os.supports_dir_fd]
    if not (_O_DIRECTORY and _O_NOFOLLOW):
        missing.append("O_DIRECTORY/O_NOFOLLOW")
    if os.scandir not in os.supports_fd:
        missing.append("scandir(fd)")
    if missing:
        raise UnsupportedPlatformError(
            "taskctx-workspace confines paths by opening each component relative to its "
            f"folder's descriptor, which this platform ({os.name}) cannot do "
            f"(missing: {', '.join(missing)}); it refuses to fall back to racy path checks"
        )


def _refuse(rel: str, rule: str) -> PolicyError:
    return PolicyError(f"path {rel!r} refused: {rule}")


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)
    fds.clear()


def read_all(fd: int) -> bytes:
    """Every byte of the open file ``fd`` from offset 0 (``pread``: the offset is untouched)."""
    chunks: list[bytes] = []
    offset = 0
    while chunk := os.pread(fd, _CHUNK, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def open_regular_at(dir_fd: int, name: str, rel: str) -> int:
    """A read-only descriptor of the regular file ``name`` in the folder ``dir_fd``.

    The type is checked before the open (a FIFO or device is never opened) and again on
    the descriptor; ``O_NOFOLLOW`` refuses a symlink that appeared in between.
    """
    try:
        require_regular(rel, os.stat(name, dir_fd=dir_fd, follow_symlinks=False))
        fd = os.open(name, FILE_FLAGS, dir_fd=dir_fd)
    except (FileNotFoundError, NotADirectoryError):
        raise WorkspaceNotFoundError(f"{rel}: no such file in the workspace") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _refuse(rel, "it became a symlink while it was opened") from None
        raise
    try:
        require_regular(rel, os.fstat(fd))
    except BaseException:
        os.close(fd)
        raise
    return fd


@attrs.frozen(slots=True)
class Root:
    """The workspace root folder, pinned by identity (device, inode) when it was opened.

    Every operation opens it again by its resolved path and checks the identity, so a
    root renamed away and replaced (by a folder or a symlink) is refused, not followed.
    """

    path: Path
    device: int
    inode: int

    @classmethod
    def pin(cls, path: Path) -> Root:
        """Pin the resolved folder ``path``."""
        fd = os.open(path, DIR_FLAGS)
        try:
            st = os.fstat(fd)
        finally:
            os.close(fd)
        return cls(path, st.st_dev, st.st_ino)

    def open(self) -> int:
        """A descriptor of the root; PolicyError if another folder now stands at its path."""
        try:
            fd = os.open(self.path, DIR_FLAGS)
        except FileNotFoundError:
            raise WorkspaceNotFoundError(f"workspace root {str(self.path)!r} is gone") from None
        except OSError as exc:
            if exc.errno not in _NOT_A_FOLDER:
                raise
            raise PolicyError(
                f"workspace root {str(self.path)!r} refused: it is no longer a real folder"
            ) from None
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != (self.device, self.inode):
            os.close(fd)
            raise PolicyError(
                f"workspace root {str(self.path)!r} refused: another folder stands at its "
                "path since the workspace was opened"
            )
        return fd

    def base(self) -> Base:
        """The root itself as a base: ``.taskctx/`` is never reached from it."""
        return Base(self, (), "the workspace root")

    def area(self, *parts: str, label: str) -> Base:
        """The state folder ``.taskctx/<parts>`` as a base (every level a real folder)."""
        return Base(self, parts, label)


@attrs.frozen(slots=True)
class Base:
    """A folder that paths are confined beneath: the root, or an area under ``.taskctx/``."""

    root: Root
    parts: tuple[str, ...]
    label: str

    @property
    def path(self) -> Path:
        """Where the folder is (for messages and absolute symlink targets)."""
        if not self.parts:
            return self.root.path
        return self.root.path.joinpath(STATE_DIR_NAME, *self.parts)

    def open(self, *, create: bool = False) -> int | None:
        """A descriptor of the folder; None when an area is missing and ``create`` is false.

        An area's every level is a real folder, made on demand with ``mkdirat``: a symlink
        or a file where the workspace keeps its state is a PolicyError, never followed.
        """
        fd = self.root.open()
        current = self.root.path
        for part in (STATE_DIR_NAME, *self.parts) if self.parts else ():
            current = current / part
            try:
                child = _open_folder(fd, part, create=create)
            except OSError as exc:
                os.close(fd)
                if exc.errno not in _NOT_A_FOLDER:
                    raise
                raise PolicyError(
                    f"workspace state {str(current)!r} refused: not a real folder (a symlink "
                    "or a file stands where the workspace keeps its own state)"
                ) from None
            os.close(fd)
            if child is None:
                return None
            fd = child
        return fd

    def ensure(self) -> Path:
        """Make the folder (every level checked, as :meth:`open`) and return its path."""
        fd = self.open(create=True)
        assert fd is not None
        os.close(fd)
        return self.path

    def locate(self, rel: str, *, create_parents: bool = False) -> Located:
        """The folder holding ``rel`` (a normalized relative path) and its last name.

        Symlinks on the way, the last component included, are resolved beneath the base.
        A missing folder is made with ``create_parents`` (a missing area too), else
        :class:`WorkspaceNotFoundError`; a file where a folder should be is refused.
        """
        fd = self.open(create=create_parents)
        if fd is None:
            raise WorkspaceNotFoundError(f"{rel}: no such file in {self.label}")
        return _resolve(self, fd, rel, create_parents=create_parents)


def _open_folder(dir_fd: int, name: str, *, create: bool, rel: str = "") -> int | None:
    """``name`` in ``dir_fd`` opened as a folder without following it; None if missing.

    With ``create`` a missing folder is made; a folder renamed away between the make and
    the open is made again, a few times, before the walk gives up with a clear error.
    """
    what = f"{rel}: folder {name!r}" if rel else f"folder {name!r}"
    for _ in range(_MAKE_ATTEMPTS):
        try:
            return os.open(name, DIR_FLAGS, dir_fd=dir_fd)
        except FileNotFoundError:
            if not create:
                return None
        try:
            os.mkdir(name, 0o777, dir_fd=dir_fd)
        except FileExistsError:
            pass  # made meanwhile: the open checks what it is
        except FileNotFoundError:
            raise WorkspaceNotFoundError(
                f"{what} cannot be made: the folder holding it was removed by another process"
            ) from None
    raise PolicyError(
        f"{what} refused: it vanished each time it was made (another process keeps moving it)"
    )


def _link_target(dir_fd: int, name: str) -> str | None:
    """The target of the symlink ``name`` in ``dir_fd``; None if it is not a symlink."""
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.EINVAL, errno.ENOENT):
            return None
        raise


def _resolve(base: Base, base_fd: int, rel: str, *, create_parents: bool) -> Located:
    """Walk ``rel`` from ``base_fd`` one component at a time, never following a link: a
    symlink's target is read and walked the same way. The last folder, open, and the name."""
    stack = [base_fd]  # descriptors of the folders walked, base first; owned here
    names: list[str] = []  # the real components under the base, one per stack entry past it
    pending = [part for part in rel.split("/") if part not in ("", ".")]
    pending.reverse()  # a stack: the next component is last
    links = 0
    forbid_state = not base.parts
    try:
        while pending:
            part = pending.pop()
            if part == "..":
                if len(stack) == 1:
                    raise _refuse(rel, f"it resolves outside {base.label} (symlink escape)")
                os.close(stack.pop())
                names.pop()
                continue
            if forbid_state and len(stack) == 1 and is_state_name(part):
                raise _refuse(rel, f"it resolves into {STATE_DIR_NAME}/, the workspace's own state")
            if not pending:  # the last component: a file name, or a symlink to follow
                target = _link_target(stack[-1], part)
                if target is None:
                    located = Located(stack.pop(), part, rel, "/".join([*names, part]))
                    _close_all(stack)
                    return located
            else:
                target = _descend(stack, names, part, rel, base, create_parents=create_parents)
                if target is None:
                    continue
            links += 1
            if links > MAX_LINKS:
                raise _refuse(rel, "it is a symlink loop")
            pending.extend(reversed(_link_parts(target, rel, base, stack, names)))
        raise _refuse(rel, f"it names {base.label}, not a file")
    except BaseException:
        _close_all(stack)
        raise


def _descend(
    stack: list[int], names: list[str], part: str, rel: str, base: Base, *, create_parents: bool
) -> str | None:
    """Open the folder ``part`` of ``stack[-1]`` (made if missing with ``create_parents``)
    and push it onto ``stack`` and ``names``; if ``part`` is a symlink, return its target
    instead (to be walked in its place)."""
    try:
        child = _open_folder(stack[-1], part, create=create_parents, rel=rel)
    except OSError as exc:
        if exc.errno not in _NOT_A_FOLDER:
            raise
        target = _link_target(stack[-1], part)
        if target is None and create_parents:
            raise _refuse(rel, "a parent of it is not a folder") from None
        if target is None:
            raise WorkspaceNotFoundError(
                f"{rel}: no such file in {base.label} (a parent of it is a file)"
            ) from None
        return target
    if child is None:
        raise WorkspaceNotFoundError(f"{rel}: no such file in {base.label}")
    stack.append(child)
    names.append(part)
    return None


def _link_parts(target: str, rel: str, base: Base, stack: list[int], names: list[str]) -> list[str]:
    """The components a symlink's ``target`` is walked as. An absolute target must lie in
    the base, and its walk starts there again (``stack`` and ``names`` cut back to it)."""
    if target.startswith("/"):
        inside = _beneath(target, base.path)
        if inside is None:
            raise _refuse(rel, f"it resolves outside {base.label} (symlink escape)")
        while len(stack) > 1:  # an absolute target inside the base: walk from it
            os.close(stack.pop())
        names.clear()
        return inside
    return [p for p in target.split("/") if p not in ("", ".")]


def _beneath(target: str, base: Path) -> list[str] | None:
    """The components of the absolute ``target`` under ``base``; None if it is elsewhere."""
    prefix = os.fspath(base).rstrip("/")
    if target != prefix and not target.startswith(prefix + "/"):
        return None
    return [p for p in target[len(prefix) :].split("/") if p not in ("", ".")]


@attrs.define(slots=True)
class Located:
    """An open folder (``dir_fd``, owned) and the name of a file in it; a context manager.

    ``real`` is the file's path under the base after symlinks were resolved.
    """

    dir_fd: int
    name: str
    rel: str
    real: str

    def stat(self) -> os.stat_result | None:
        """The file's own stat (a symlink is not followed); None if nothing is there."""
        try:
            return os.stat(self.name, dir_fd=self.dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def open_regular(self) -> int:
        """A read-only descriptor of the regular file (see :func:`open_regular_at`)."""
        return open_regular_at(self.dir_fd, self.name, self.rel)

    def read(self) -> bytes:
        """All bytes of the regular file."""
        fd = self.open_regular()
        try:
            return read_all(fd)
        finally:
            os.close(fd)

    def close(self) -> None:
        """Close the folder descriptor (idempotent)."""
        if self.dir_fd >= 0:
            os.close(self.dir_fd)
            self.dir_fd = -1

    def __enter__(self) -> Located:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
