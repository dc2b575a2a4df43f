"""The values a TaskWorkspace returns: frozen pydantic models, and the stat record of a walk.

``sha256`` is always the lowercase hex digest of the file's whole raw bytes.
``origin`` says where a file was found or written: ``external`` (the real path under the
root) or ``fallback`` (this execution's own area, ``.taskctx/files/<execution-id>/``).
"""

from __future__ import annotations

import os
from typing import Any, Literal

import attrs

from taskctx.model import Completeness, FrozenModel, Problem, Representation, SectionInfo

__all__ = [
    "FileEntry",
    "FileRef",
    "FileResult",
    "FileStat",
    "Origin",
    "StagedFile",
    "Stamp",
    "completeness_of",
    "reference_only",
    "stamp_of",
    "text_result",
]

Origin = Literal["external", "fallback"]
Stamp = tuple[int, int, int, int]
"""(size, mtime_ns, ino, ctime_ns): cheap identity of one version of a file."""


@attrs.frozen(slots=True)
class FileStat:
    """One file seen by a walk: relative POSIX path and its stamp (no content read)."""

    path: str
    size: int
    mtime_ns: int
    ino: int
    ctime_ns: int

    @classmethod
    def of(cls, path: str, st: os.stat_result) -> FileStat:
        """The record of ``path`` from its ``os.stat_result``."""
        return cls(path, st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)

    @property
    def stamp(self) -> Stamp:
        """(size, mtime_ns, ino, ctime_ns)."""
        return (self.size, self.mtime_ns, self.ino, self.ctime_ns)


def stamp_of(stat: FileStat | os.stat_result) -> Stamp:
    """The stamp of a FileStat or an ``os.stat_result``."""
    if isinstance(stat, FileStat):
        return stat.stamp
    return (stat.st_size, stat.st_mtime_ns, stat.st_ino, stat.st_ctime_ns)


class FileRef(FrozenModel):
    """A file the workspace wrote: where, which bytes, and whether they were read back."""

    path: str
    sha256: str
    size: int
    readback_verified: bool = False
    origin: Origin = "external"


class StagedFile(FrozenModel):
    """A candidate written to ``.taskctx/staged/<execution-id>/`` and verified by readback."""

    path: str
    sha256: str
    size: int


class FileResult(FrozenModel):
    """What ``read_file`` returns: bounded text (or none) and the facts about the file.

    ``text`` is None for reference-only files (images, binaries, documents without a
    handler or that failed to parse: ``problem`` says why). ``chars_total`` is the length
    of the whole text; ``complete`` is False when ``limit`` cut it (then ``completeness``
    is ``lossy``) or when no text is delivered at all.
    """

    path: str
    sha256: str
    size: int
    media_type: str
    representation: Representation
    completeness: Completeness
    text: str | None = None
    chars_total: int | None = None
    complete: bool
    origin: Origin = "external"
    problem: Problem | None = None
    sections: tuple[SectionInfo, ...] = ()


class FileEntry(FrozenModel):
    """One file of ``list_files``: path, size, digest (cached by stamp) and media facts."""

    path: str
    size: int
    sha256: str
    media_type: str
    representation: Representation
    completeness: Completeness
    mtime_ns: int


def completeness_of(representation: Representation) -> Completeness:
    """Reference-only representations are reference-only; whole text is complete."""
    if representation is Representation.REFERENCE_ONLY:
        return Completeness.REFERENCE_ONLY
    return Completeness.COMPLETE


def text_result(
    facts: dict[str, Any], text: str, limit: int | None, representation: Representation
) -> FileResult:
    """A result holding ``text`` cut at ``limit`` characters (str slicing: whole code points)."""
    cut = text if limit is None else text[:limit]
    complete = len(cut) == len(text)
    return FileResult(
        **facts,
        representation=representation,
        completeness=Completeness.COMPLETE if complete else Completeness.LOSSY,
        text=cut,
        chars_total=len(text),
        complete=complete,
    )


def reference_only(facts: dict[str, Any], problem: Problem | None) -> FileResult:
    """A result without text: the file is only referred to (``problem`` says why, if known)."""
    return FileResult(
        **facts,
        representation=Representation.REFERENCE_ONLY,
        completeness=Completeness.REFERENCE_ONLY,
        complete=False,
        problem=problem,
    )
