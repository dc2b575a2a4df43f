"""The library's content-addressed store: file blobs, skill revisions and bindings.

Layout under ``<library>/.taskctx/skills/``::

    objects/<aa>/<rest of sha256>    the bytes of one file, named by their digest
    revisions/<sha256>.json          one pinned skill: metadata layer and its files
    bindings/<sha256>.json           one binding: which skill revisions, which required

Every name is the digest of what it holds, so nothing is ever rewritten: a write goes
to a temporary sibling, is fsynced and renamed into place, blobs before the manifest
that names them. A crash mid-write leaves at most an unnamed temporary file or an
unreferenced blob, never a manifest whose bytes are missing. Reads verify the digest,
and never follow a symlink below the store root nor read a special file or more bytes
than a bound (a blob: ``SkillLimits.max_file_bytes``; a manifest: 64 MiB).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
from pydantic import ValidationError

from taskctx.digests import SHA256_PREFIX, is_digest, sha256_digest
from taskctx.statefiles import ensure_state_dir
from taskctx_skills.errors import (
    SkillRevisionNotFoundError,
    SkillStoreError,
    SkillValidationError,
)
from taskctx_skills.files import RefusedPathError, read_beneath
from taskctx_skills.limits import SkillLimits
from taskctx_skills.snapshot import build_skill, revision_of
from taskctx_skills.values import BoundSkill

__all__ = ["MAX_MANIFEST_BYTES", "BindingEntry", "SkillStore"]

MAX_MANIFEST_BYTES = 64 * 1024 * 1024
"""The most a revision or binding manifest may hold (2,000 files with long paths: ~10 MB)."""


@attrs.define(frozen=True, slots=True)
class BindingEntry:
    """One skill of a binding: its name, pinned revision and whether it is required."""

    name: str
    revision_ref: str
    required: bool


def _hex(digest: str) -> str:
    if not is_digest(digest):
        raise SkillRevisionNotFoundError(f"{digest!r} is not a sha256 digest ('sha256:<64 hex>')")
    return digest[len(SHA256_PREFIX) :]


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _write_once(folder: Path, name: str, data: bytes) -> None:
    """Write ``data`` as ``folder/name`` unless it is already there (names are digests)."""
    target = folder / name
    if os.path.lexists(target):
        return
    fd, temp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=target.suffix)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    directory = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


@attrs.define(slots=True)
class SkillStore:
    """Content-addressed blobs, skill revisions and bindings of one library."""

    root: Path
    limits: SkillLimits = attrs.field(factory=SkillLimits)
    base: Path | None = None
    """The trusted folder ``root`` lies in (the library's root for its own ``.taskctx``):
    the folders between them are made and checked without following links."""

    def _write(self, parts: tuple[str, ...], data: bytes) -> None:
        """Write a store file once, its folders made below ``base`` never through a link."""
        base = self.base if self.base is not None else self.root
        between = self.root.relative_to(base).parts
        try:
            folder = ensure_state_dir(base, *between, *parts[:-1], refuse=self._refuse)
        except ValueError as exc:  # a part that is not a plain name
            raise SkillStoreError(f"skill store {self.root}: {exc}") from None
        _write_once(folder, parts[-1], data)

    def _refuse(self, path: Path, problem: str) -> SkillStoreError:
        return SkillStoreError(f"skill store {self.root}: {path} refused: {problem}")

    def _object_parts(self, digest: str) -> tuple[str, str, str]:
        value = _hex(digest)
        return ("objects", value[:2], value[2:])

    def _object(self, digest: str) -> Path:
        return self.root.joinpath(*self._object_parts(digest))

    def _read(self, parts: tuple[str, ...], limit: int) -> bytes:
        """The bytes of a store file; FileNotFoundError when it is not there."""
        try:
            return read_beneath(self.root, parts, limit)
        except RefusedPathError as exc:
            raise SkillStoreError(f"skill store {self.root}: {exc}: tampered with") from None

    def put_blob(self, data: bytes) -> str:
        """Store ``data``; return its ``sha256:`` digest."""
        digest = sha256_digest(data)
        self._write(self._object_parts(digest), data)
        return digest

    def blob(self, digest: str) -> bytes:
        """The bytes named ``digest``, verified; raise if missing or tampered with."""
        path = self._object(digest)
        try:
            data = self._read(self._object_parts(digest), self.limits.max_file_bytes)
        except FileNotFoundError:
            raise SkillRevisionNotFoundError(
                f"blob {digest} is missing from the skill store {self.root}"
            ) from None
        if sha256_digest(data) != digest:
            raise SkillStoreError(f"blob {path} does not match its digest {digest}: tampered with")
        return data

    def has_blob(self, digest: str) -> bool:
        """Whether the blob named ``digest`` is present (not verified)."""
        return self._object(digest).is_file()

    def put_skill(self, skill: BoundSkill, blobs: dict[str, bytes]) -> None:
        """Store every file of ``skill`` and then its revision manifest."""
        for file in skill.files:
            stored = self.put_blob(blobs[file.path])
            if stored != file.sha256:
                raise SkillStoreError(f"{skill.name}/{file.path} changed while it was stored")
        self._write(
            self._revision_parts(skill.revision_ref), _canonical(skill.model_dump(mode="json"))
        )

    def _revision_parts(self, revision_ref: str) -> tuple[str, str]:
        return ("revisions", f"{_hex(revision_ref)}.json")

    def _revision_path(self, revision_ref: str) -> Path:
        return self.root.joinpath(*self._revision_parts(revision_ref))

    def skill(self, revision_ref: str) -> BoundSkill:
        """The skill pinned at ``revision_ref``; raise loudly when the store lost it."""
        path = self._revision_path(revision_ref)
        try:
            raw = self._read(self._revision_parts(revision_ref), MAX_MANIFEST_BYTES)
        except FileNotFoundError:
            raise SkillRevisionNotFoundError(
                f"skill revision {revision_ref} is not in the skill store {self.root} "
                "(deleted, or made by another library)"
            ) from None
        try:
            skill = BoundSkill.model_validate_json(raw)
        except ValidationError as exc:
            raise SkillStoreError(f"skill revision manifest {path} is damaged: {exc}") from None
        if revision_of(skill.files) != revision_ref:
            raise SkillStoreError(f"skill revision manifest {path} does not match its name")
        try:
            rebuilt = build_skill(
                skill.name, skill.files, self.blob(skill.skill_md.sha256), self.limits
            )
        except SkillValidationError as exc:
            raise SkillStoreError(f"skill revision manifest {path} is damaged: {exc}") from None
        if rebuilt != skill:
            raise SkillStoreError(
                f"skill revision manifest {path} disagrees with its SKILL.md: tampered with"
            )
        return skill

    def put_binding(self, entries: Sequence[BindingEntry]) -> str:
        """Store a binding manifest; return its revision (``sha256:`` of the manifest)."""
        body = {
            "version": 1,
            "skills": [
                {"name": e.name, "revision_ref": e.revision_ref, "required": e.required}
                for e in sorted(entries, key=lambda e: e.name)
            ],
        }
        raw = _canonical(body)
        revision = sha256_digest(raw)
        self._write(("bindings", f"{_hex(revision)}.json"), raw)
        return revision

    def binding(self, revision: str) -> tuple[BindingEntry, ...]:
        """The skills of the binding stored at ``revision``; raise loudly when it is gone."""
        parts = ("bindings", f"{_hex(revision)}.json")
        path = self.root.joinpath(*parts)
        try:
            raw = self._read(parts, MAX_MANIFEST_BYTES)
        except FileNotFoundError:
            raise SkillRevisionNotFoundError(
                f"skill binding {revision} is not in the skill store {self.root}"
            ) from None
        if sha256_digest(raw) != revision:
            raise SkillStoreError(f"skill binding manifest {path} does not match its name")
        try:
            body = json.loads(raw)
            return tuple(
                BindingEntry(str(s["name"]), str(s["revision_ref"]), bool(s["required"]))
                for s in body["skills"]
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise SkillStoreError(f"skill binding manifest {path} is damaged: {exc}") from None

    def has_binding(self, revision: str) -> bool:
        """Whether the binding manifest of ``revision`` is present."""
        return (self.root / "bindings" / f"{_hex(revision)}.json").is_file()
