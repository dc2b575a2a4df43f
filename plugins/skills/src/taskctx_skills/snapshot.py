"""Taking a skill folder as one consistent set of bytes, validated by ``skills-ref``.

Validation and hashing see the same bytes: ``SKILL.md`` is read once, its front matter
parsed by ``skills_ref.parser.parse_frontmatter`` and checked by
``skills_ref.validator.validate_metadata`` (the reference implementation of the Agent
Skills spec), and only a valid skill becomes a :class:`~taskctx_skills.values.BoundSkill`.
A folder that changes while it is read is read again; one that keeps changing fails.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
from skills_ref.errors import ParseError
from skills_ref.parser import parse_frontmatter
from skills_ref.validator import validate_metadata

from taskctx.errors import TaskCtxError
from taskctx_skills.errors import SkillValidationError
from taskctx_skills.values import BoundSkill, SkillFile, resource_kind

__all__ = [
    "SkillLimits",
    "SkillSnapshot",
    "build_skill",
    "read_metadata",
    "revision_of",
    "take_snapshot",
]

SKILL_FILES = ("SKILL.md", "skill.md")


@attrs.define(frozen=True, slots=True)
class SkillLimits:
    """Bounds on one skill folder: more files or bytes than this are refused."""

    max_files: int = 2_000
    max_file_bytes: int = 16 * 1024 * 1024
    max_total_bytes: int = 64 * 1024 * 1024


@attrs.define(frozen=True, slots=True)
class SkillSnapshot:
    """A validated skill and the bytes of each of its files, by path."""

    skill: BoundSkill
    blobs: Mapping[str, bytes]


def revision_of(files: tuple[SkillFile, ...]) -> str:
    """``sha256:`` of the canonical list of (path, file digest): a digest of all files."""
    listing = [[f.path, f.sha256] for f in sorted(files, key=lambda f: f.path)]
    raw = json.dumps(listing, separators=(",", ":"), ensure_ascii=False).encode()
    return "sha256:" + hashlib.sha256(raw).hexdigest()


def read_metadata(folder: Path, data: bytes) -> tuple[dict[str, Any], list[str]]:
    """Front matter of ``SKILL.md`` bytes and the validator's messages (empty: valid)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return {}, [f"SKILL.md is not UTF-8: {exc}"]
    try:
        metadata, _ = parse_frontmatter(text)
    except ParseError as exc:
        return {}, [str(exc)]
    return metadata, list(validate_metadata(metadata, folder))


def _hidden(name: str) -> bool:
    return name.startswith(".")


def _walk(folder: Path, limits: SkillLimits) -> list[tuple[str, Path, tuple[int, int, int]]]:
    """Regular files of ``folder`` (hidden entries skipped) with their stamps, by path.

    Symlinks and special files are refused: a trusted skill must not reach outside its
    own folder.
    """
    found: list[tuple[str, Path, tuple[int, int, int]]] = []
    problems: list[str] = []
    total = 0
    stack = [folder]
    while stack:
        current = stack.pop()
        with os.scandir(current) as entries:
            for entry in entries:
                if _hidden(entry.name):
                    continue
                relative = Path(entry.path).relative_to(folder).as_posix()
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISLNK(info.st_mode):
                    problems.append(f"{relative} is a symlink (not followed, not allowed)")
                elif stat.S_ISDIR(info.st_mode):
                    stack.append(Path(entry.path))
                elif stat.S_ISREG(info.st_mode):
                    if info.st_size > limits.max_file_bytes:
                        problems.append(
                            f"{relative} is {info.st_size} bytes, over the "
                            f"{limits.max_file_bytes}-byte file limit"
                        )
                    total += info.st_size
                    found.append(
                        (relative, Path(entry.path), (info.st_mtime_ns, info.st_size, info.st_ino))
                    )
                else:
                    problems.append(f"{relative} is not a regular file")
    if len(found) > limits.max_files:
        problems.append(f"{len(found)} files, over the limit of {limits.max_files}")
    if total > limits.max_total_bytes:
        problems.append(f"{total} bytes in all, over the limit of {limits.max_total_bytes}")
    if problems:
        raise SkillValidationError(folder.name, problems)
    return sorted(found)


def _read_once(folder: Path, limits: SkillLimits) -> dict[str, bytes] | None:
    """Every file's bytes, or None when the folder changed while it was read."""
    before = _walk(folder, limits)
    blobs = {relative: path.read_bytes() for relative, path, _ in before}
    after = _walk(folder, limits)
    return blobs if before == after else None


def take_snapshot(
    folder: Path, limits: SkillLimits | None = None, attempts: int = 3
) -> SkillSnapshot:
    """Read, validate and digest the skill in ``folder``; raise if it is not a valid skill."""
    limits = limits or SkillLimits()
    if not folder.is_dir():
        raise SkillValidationError(folder.name, [f"Not a directory: {folder}"])
    for _ in range(attempts):
        blobs = _read_once(folder, limits)
        if blobs is not None:
            break
    else:
        raise TaskCtxError(f"skill folder {folder} kept changing while it was read")
    files = tuple(
        SkillFile(
            path=relative,
            sha256="sha256:" + hashlib.sha256(data).hexdigest(),
            size=len(data),
            kind=resource_kind(relative),
        )
        for relative, data in sorted(blobs.items())
    )
    skill_md = next((name for name in SKILL_FILES if name in blobs), None)
    if skill_md is None:
        raise SkillValidationError(folder.name, ["Missing required file: SKILL.md"])
    skill = build_skill(folder.name, files, blobs[skill_md])
    return SkillSnapshot(skill=skill, blobs=blobs)


def build_skill(folder: str, files: tuple[SkillFile, ...], skill_md: bytes) -> BoundSkill:
    """The pinned skill of ``files``, its metadata layer read from the SKILL.md bytes.

    The store calls this too, so a manifest edited on disk cannot change what a
    binding discloses: name, description and the optional fields come from the blob.
    """
    metadata, problems = read_metadata(Path(folder), skill_md)
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
