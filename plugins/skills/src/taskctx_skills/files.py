"""Reading below a trusted folder without following links: descriptors and bounded reads.

Only the top folder (the library root, the store root) is opened by path; everything
below it is opened relative to a directory descriptor, each folder with
``O_DIRECTORY | O_NOFOLLOW``, so no component between the top and a file can be a
symlink, not even one swapped in while it is read. A file is looked at without
following (``lstat``) and opened only when it is a regular file, with ``O_NOFOLLOW |
O_NONBLOCK`` (a FIFO swapped in after the look cannot block the open); the opened
descriptor is checked again with ``fstat`` (a regular file, within the byte limit)
before at most ``limit + 1`` bytes are read. Hard links are ordinary files here: they
name bytes the process could already read, and what is read is pinned by digest.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path

from taskctx.errors import TaskCtxError
from taskctx.nofollow import DIR_FLAGS, FILE_FLAGS, describe_mode

__all__ = [
    "ChangedPathError",
    "RefusedPathError",
    "Stamp",
    "describe_mode",
    "not_regular",
    "open_directory",
    "open_folder",
    "read_beneath",
    "read_regular",
    "stamp_of",
]

Stamp = tuple[int, int, int, int]
"""``(st_dev, st_ino, st_size, st_mtime_ns)``: what says a file is still the same file."""

_CHUNK = 1024 * 1024


class RefusedPathError(TaskCtxError):
    """A path the library will not read; the message is a validator-style problem."""


class ChangedPathError(RefusedPathError):
    """A file changed while it was read (a retry may succeed)."""


def stamp_of(info: os.stat_result) -> Stamp:
    """The :data:`Stamp` of a stat result."""
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


def not_regular(label: str, mode: int) -> str:
    """The problem of a path ``label`` of this mode where a regular file is wanted."""
    if stat.S_ISLNK(mode):
        return f"{label} is a symlink (not followed, not allowed)"
    if stat.S_ISDIR(mode):
        return f"{label} is a folder, not a file"
    return f"{label} is not a regular file ({describe_mode(mode)[2:]})"


def _lstat(dir_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return None


@contextmanager
def open_directory(path: Path) -> Iterator[int]:
    """A descriptor of the trusted top folder ``path``, opened by path."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        yield fd
    finally:
        os.close(fd)


@contextmanager
def open_folder(dir_fd: int, name: str, label: str) -> Iterator[int]:
    """Folder ``name`` inside ``dir_fd``, never through a symlink.

    Raises FileNotFoundError when there is no entry ``name``, and RefusedPathError
    (``label`` names it in the message) when it is a symlink or not a folder.
    """
    try:
        fd = os.open(name, DIR_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        raise
    except OSError as exc:
        info = _lstat(dir_fd, name)
        if info is None or stat.S_ISDIR(info.st_mode):
            if exc.errno in (errno.ENOTDIR, errno.ELOOP):  # it was not a folder a moment ago
                raise ChangedPathError(f"{label} changed while it was read") from None
            raise RefusedPathError(f"{label} cannot be opened: {exc.strerror}") from None
        if stat.S_ISLNK(info.st_mode):
            raise RefusedPathError(f"{label} is a symlink (not followed, not allowed)") from None
        raise RefusedPathError(f"{label} is {describe_mode(info.st_mode)}, not a folder") from None
    try:
        yield fd
    finally:
        os.close(fd)


def _read_at_most(fd: int, count: int) -> bytes:
    data = bytearray()
    while len(data) < count:
        chunk = os.read(fd, min(count - len(data), _CHUNK))
        if not chunk:
            break
        data += chunk
    return bytes(data)


def read_regular(dir_fd: int, name: str, label: str, limit: int) -> tuple[bytes, Stamp]:
    """The bytes of the regular file ``name`` inside ``dir_fd`` and its stamp.

    Never follows a symlink, never opens a FIFO, socket or device, and never reads more
    than ``limit + 1`` bytes: a file over ``limit`` bytes is refused by the size of the
    opened descriptor, before any byte is read. Raises FileNotFoundError when there is
    no entry ``name``, RefusedPathError (``label`` names the file in the message) for
    anything else it will not read, and ChangedPathError when the file changed while it
    was read.
    """
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise RefusedPathError(f"{label} cannot be read: {exc.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise RefusedPathError(not_regular(label, info.st_mode))
    try:
        fd = os.open(name, FILE_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        raise
    except OSError as exc:
        swapped = _lstat(dir_fd, name)
        if swapped is not None and not stat.S_ISREG(swapped.st_mode):
            raise RefusedPathError(not_regular(label, swapped.st_mode)) from None
        raise RefusedPathError(f"{label} cannot be read: {exc.strerror}") from None
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):
            raise RefusedPathError(not_regular(label, opened.st_mode))
        if opened.st_size > limit:
            raise RefusedPathError(
                f"{label} is {opened.st_size} bytes, over the {limit}-byte file limit"
            )
        data = _read_at_most(fd, limit + 1)
        if len(data) > limit:
            raise RefusedPathError(f"{label} grew past the {limit}-byte file limit as it was read")
        after = os.fstat(fd)
    finally:
        os.close(fd)
    if stamp_of(after) != stamp_of(opened) or len(data) != opened.st_size:
        raise ChangedPathError(f"{label} changed while it was read")
    return data, stamp_of(opened)


def read_beneath(top: Path, parts: Sequence[str], limit: int) -> bytes:
    """The bytes of ``top/<parts...>``: ``top`` opened by path, the rest never followed.

    Raises FileNotFoundError when a part is missing and RefusedPathError when a part is
    a symlink, not a folder, not a regular file or over ``limit`` bytes.
    """
    with ExitStack() as opened:
        fd = opened.enter_context(open_directory(top))
        for depth, folder in enumerate(parts[:-1], start=1):
            fd = opened.enter_context(open_folder(fd, folder, "/".join(parts[:depth])))
        return read_regular(fd, parts[-1], "/".join(parts), limit)[0]
