"""Taking a skill folder as one consistent set of bytes, validated by ``skills-ref``.

Validation and hashing see the same bytes: ``SKILL.md`` is read once, its front matter
parsed by ``skills_ref.parser.parse_frontmatter`` and checked by
``skills_ref.validator.validate_metadata`` (the reference implementation of the Agent
Skills spec), and only a valid skill becomes a :class:`~taskctx_skills.values.BoundSkill`.
A folder that changes while it is read is read again; one that keeps changing fails.

The folder is opened from the library root, and every folder and file in it from its
parent's descriptor, never through a symlink (:mod:`taskctx_skills.files`); a first
pass lists and checks the :class:`~taskctx_skills.limits.SkillLimits`, a second lists
again and reads, so no byte is read from a skill the limits refuse.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path

import attrs

from taskctx.digests import sha256_digest
from taskctx.errors import TaskCtxError
from taskctx_skills.errors import SkillValidationError
from taskctx_skills.files import (
    ChangedPathError,
    RefusedPathError,
    Stamp,
    not_regular,
    open_directory,
    open_folder,
    read_regular,
    stamp_of,
)
from taskctx_skills.frontmatter import read_metadata
from taskctx_skills.limits import SkillLimits
from taskctx_skills.values import BoundSkill, SkillFile, resource_kind

__all__ = [
    "SKILL_FILES",
    "SkillLimits",
    "SkillSnapshot",
    "build_skill",
    "read_metadata",
    "revision_of",
    "take_snapshot",
]

SKILL_FILES = ("SKILL.md", "skill.md")
FOLDER_LABEL = "the skill folder"
"""How messages name the skill folder itself."""


@attrs.define(frozen=True, slots=True)
class SkillSnapshot:
    """A validated skill and the bytes of each of its files, by path."""

    skill: BoundSkill
    blobs: Mapping[str, bytes]


def revision_of(files: tuple[SkillFile, ...]) -> str:
    """``sha256:`` of the canonical list of (path, file digest): a digest of all files."""
    listing = [[f.path, f.sha256] for f in sorted(files, key=lambda f: f.path)]
    raw = json.dumps(listing, separators=(",", ":"), ensure_ascii=False).encode()
    return sha256_digest(raw)


def _hidden(name: str) -> bool:
    return name.startswith(".")


class _Changed(Exception):
    """The folder changed while it was walked or read."""


@attrs.define(slots=True)
class _Walk:
    """One pass over a skill folder: its regular files by path with their stamps.

    With ``blobs`` set, each file is read as the pass reaches it, through the folder
    descriptors of this pass, and must still be the file the listing stamped.
    """

    skill: str
    limits: SkillLimits
    blobs: dict[str, bytes] | None = None
    found: dict[str, Stamp] = attrs.field(factory=dict)
    problems: list[str] = attrs.field(factory=list)
    entries: int = 0
    total: int = 0

    def visit(self, dir_fd: int, prefix: str, depth: int) -> None:
        """Walk the folder ``dir_fd`` (at ``prefix`` inside the skill) and its subfolders."""
        folders: list[str] = []
        with os.scandir(dir_fd) as listing:
            for entry in listing:
                self.entries += 1
                if self.entries > self.limits.max_entries:
                    raise SkillValidationError(
                        self.skill,
                        [
                            f"more than {self.limits.max_entries} entries (files and folders, "
                            "hidden ones included), over the entry limit"
                        ],
                    )
                if not _hidden(entry.name):
                    self._entry(dir_fd, prefix, entry, folders)
        for name in sorted(folders):
            relative = prefix + name
            if depth >= self.limits.max_depth:
                self.problems.append(
                    f"{relative} is nested {depth + 1} folders deep, over the "
                    f"{self.limits.max_depth}-folder depth limit"
                )
                continue
            try:
                with open_folder(dir_fd, name, relative) as inner:
                    self.visit(inner, relative + "/", depth + 1)
            except (FileNotFoundError, RefusedPathError) as exc:
                raise _Changed(str(exc)) from None

    def _entry(self, dir_fd: int, prefix: str, entry: os.DirEntry[str], folders: list[str]) -> None:
        relative = prefix + entry.name
        try:
            info = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            raise _Changed(relative) from None
        except OSError as exc:
            self.problems.append(f"{relative} cannot be read: {exc.strerror}")
            return
        if stat.S_ISDIR(info.st_mode):
            if relative in SKILL_FILES:
                self.problems.append(not_regular(relative, info.st_mode))
            folders.append(entry.name)
        elif not stat.S_ISREG(info.st_mode):
            self.problems.append(not_regular(relative, info.st_mode))
        elif info.st_size > self.limits.max_file_bytes:
            self.problems.append(
                f"{relative} is {info.st_size} bytes, over the "
                f"{self.limits.max_file_bytes}-byte file limit"
            )
        else:
            self.total += info.st_size
            self.found[relative] = stamp_of(info)
            if self.blobs is not None and not self.problems:
                self._read(dir_fd, entry.name, relative)

    def _read(self, dir_fd: int, name: str, relative: str) -> None:
        assert self.blobs is not None
        if len(self.found) > self.limits.max_files or self.total > self.limits.max_total_bytes:
            return  # refused once the pass ends; read nothing more
        try:
            data, stamp = read_regular(dir_fd, name, relative, self.limits.max_file_bytes)
        except (FileNotFoundError, ChangedPathError) as exc:
            raise _Changed(str(exc)) from None
        except RefusedPathError as exc:
            self.problems.append(str(exc))
            return
        if stamp != self.found[relative]:
            raise _Changed(f"{relative} changed while it was read")
        self.blobs[relative] = data

    def check(self) -> None:
        """Raise SkillValidationError with every problem of the pass and every limit passed."""
        problems = list(self.problems)
        if len(self.found) > self.limits.max_files:
            problems.append(f"{len(self.found)} files, over the limit of {self.limits.max_files}")
        if self.total > self.limits.max_total_bytes:
            problems.append(
                f"{self.total} bytes in all, over the limit of {self.limits.max_total_bytes}"
            )
        if problems:
            raise SkillValidationError(self.skill, problems)


def _walk(
    folder_fd: int, skill: str, limits: SkillLimits, blobs: dict[str, bytes] | None
) -> dict[str, Stamp]:
    walk = _Walk(skill, limits, blobs)
    walk.visit(folder_fd, "", 0)
    walk.check()
    return walk.found


def _read_once(folder_fd: int, skill: str, limits: SkillLimits) -> dict[str, bytes] | None:
    """Every file's bytes, or None when the folder changed while it was read.

    A first pass lists and checks; a second lists again and reads each file through the
    descriptors of its own folders, never by path, so no swapped-in symlink is followed.
    """
    blobs: dict[str, bytes] = {}
    try:
        before = _walk(folder_fd, skill, limits, None)
        after = _walk(folder_fd, skill, limits, blobs)
    except _Changed:
        return None
    return blobs if before == after else None


def take_snapshot(
    folder: Path, limits: SkillLimits | None = None, attempts: int = 3
) -> SkillSnapshot:
    """Read, validate and digest the skill in ``folder``; raise if it is not a valid skill.

    ``folder``'s parent (the library root) is opened by path; the folder itself and
    everything in it are never reached through a symlink.
    """
    limits = limits or SkillLimits()
    try:
        with (
            open_directory(folder.parent) as parent,
            open_folder(parent, folder.name, FOLDER_LABEL) as folder_fd,
        ):
            for _ in range(attempts):
                blobs = _read_once(folder_fd, folder.name, limits)
                if blobs is not None:
                    break
            else:
                raise TaskCtxError(f"skill folder {folder} kept changing while it was read")
    except FileNotFoundError:
        raise SkillValidationError(folder.name, [f"Not a directory: {folder}"]) from None
    except RefusedPathError as exc:
        raise SkillValidationError(folder.name, [str(exc)]) from None
    files = tuple(
        SkillFile(
            path=relative,
            sha256=sha256_digest(data),
            size=len(data),
            kind=resource_kind(relative),
        )
        for relative, data in sorted(blobs.items())
    )
    skill_md = next((name for name in SKILL_FILES if name in blobs), None)
    if skill_md is None:
        raise SkillValidationError(folder.name, ["Missing required file: SKILL.md"])
    skill = build_skill(folder.name, files, blobs[skill_md], limits)
    return SkillSnapshot(skill=skill, blobs=blobs)


def build_skill(
    folder: str, files: tuple[SkillFile, ...], skill_md: bytes, limits: SkillLimits | None = None
) -> BoundSkill:
    """The pinned skill of ``files``, its metadata layer read from the SKILL.md bytes.

    The store calls this too, so a manifest edited on disk cannot change what a
    binding discloses: name, description and the optional fields come from the blob.
    """
    metadata, problems = read_metadata(Path(folder), skill_md, limits)
    if problems:
        raise SkillValidationError(folder, problems)
    raw_meta = metadata.get("metadata")
    return BoundSkill(
        name=str(metadata["name"]).strip(),
        description=str(metadata["description"]).strip(),
        revision_ref=revision_of(files),
        files=files,
        license=_optional_str(metadata.get("license")),
        compatibility=_optional_str(metadata.get("compatibility")),
        allowed_tools=_optional_str(metadata.get("allowed-tools")),
        metadata=dict(raw_meta) if isinstance(raw_meta, Mapping) else {},
    )


def _optional_str(value: object) -> str | None:
    return None if value is None else str(value)
