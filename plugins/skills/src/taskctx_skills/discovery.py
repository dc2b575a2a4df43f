"""Discovery: each skill's metadata layer, read under the library's limits and no-follow rule.

The library root is opened once; each skill folder is opened from it without following
a symlink, and its ``SKILL.md`` from the folder's descriptor the same way
(:mod:`taskctx_skills.files`). Only a regular file within ``max_file_bytes`` is read,
and only its front matter, once within the front matter bounds, is parsed
(:mod:`taskctx_skills.frontmatter`). Whatever is refused is listed as an invalid skill
with a message naming the rule or the limit; the rest of the library is discovered.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Container
from pathlib import Path

from taskctx.errors import PolicyError
from taskctx_skills.files import (
    ChangedPathError,
    RefusedPathError,
    open_directory,
    open_folder,
    read_regular,
)
from taskctx_skills.frontmatter import read_metadata
from taskctx_skills.limits import SkillLimits
from taskctx_skills.snapshot import FOLDER_LABEL, SKILL_FILES
from taskctx_skills.values import SkillEntry

__all__ = ["discover", "is_listed"]

_ATTEMPTS = 3
"""Reads of a SKILL.md that changes while it is read, before it is reported as changing."""


def _candidates(root_fd: int, root: Path, limits: SkillLimits) -> list[str]:
    """Names of the root's folders and symlinks (hidden ones left out), sorted."""
    names = []
    with os.scandir(root_fd) as listing:
        for count, entry in enumerate(listing, start=1):
            if count > limits.max_entries:
                raise PolicyError(
                    f"skill library {root} holds more than {limits.max_entries} entries, "
                    "over the entry limit (SkillLimits.max_entries): not discovered"
                )
            if entry.name.startswith("."):
                continue
            if entry.is_symlink() or entry.is_dir(follow_symlinks=False):
                names.append(entry.name)
    return sorted(names)


def _read_skill_md(folder_fd: int, limits: SkillLimits) -> bytes | None:
    """The bytes of the folder's SKILL.md (or skill.md); None when it has neither."""
    for name in SKILL_FILES:
        try:
            return read_regular(folder_fd, name, name, limits.max_file_bytes)[0]
        except FileNotFoundError:
            continue
    return None


def _read_folder(root_fd: int, folder: str, limits: SkillLimits) -> bytes | None:
    """The SKILL.md bytes of skill ``folder``, read again while it changes under the read."""
    for attempt in range(1, _ATTEMPTS + 1):
        try:
            with open_folder(root_fd, folder, FOLDER_LABEL) as folder_fd:
                return _read_skill_md(folder_fd, limits)
        except ChangedPathError:
            if attempt == _ATTEMPTS:
                raise
    raise AssertionError("unreachable")


def _entry(
    root_fd: int, folder: str, trusted: Container[str], limits: SkillLimits
) -> SkillEntry | None:
    """What discovery says of ``folder``; None when it is not a skill (no SKILL.md)."""
    try:
        data = _read_folder(root_fd, folder, limits)
    except FileNotFoundError:
        return None  # removed since the listing
    except RefusedPathError as exc:
        return SkillEntry(
            folder=folder,
            name=None,
            description=None,
            trusted=folder in trusted,
            valid=False,
            problems=(str(exc),),
        )
    if data is None:
        return None
    metadata, problems = read_metadata(Path(folder), data, limits)
    name = metadata.get("name")
    description = metadata.get("description")
    return SkillEntry(
        folder=folder,
        name=str(name) if name is not None else None,
        description=str(description) if description is not None else None,
        trusted=folder in trusted,
        valid=not problems,
        problems=tuple(problems),
    )


def discover(root: Path, trusted: Container[str], limits: SkillLimits) -> tuple[SkillEntry, ...]:
    """Every skill under ``root``, by folder name: metadata, trust and validity.

    A symlink at the root is listed as an invalid skill (it is never followed to learn
    what it points to); a folder without SKILL.md is not a skill. Raises PolicyError
    when the root holds more than ``limits.max_entries`` entries.
    """
    with open_directory(root) as root_fd:
        found = (
            _entry(root_fd, name, trusted, limits) for name in _candidates(root_fd, root, limits)
        )
        return tuple(entry for entry in found if entry is not None)


def is_listed(root: Path, name: str) -> bool:
    """Whether discovery of ``root`` lists ``name``, found without reading any file."""
    if not name or name.startswith(".") or "/" in name or "\0" in name:
        return False
    try:
        info = os.lstat(root / name)
    except OSError:
        return False
    if stat.S_ISLNK(info.st_mode):
        return True
    return stat.S_ISDIR(info.st_mode) and any(
        os.path.lexists(root / name / skill_md) for skill_md in SKILL_FILES
    )
