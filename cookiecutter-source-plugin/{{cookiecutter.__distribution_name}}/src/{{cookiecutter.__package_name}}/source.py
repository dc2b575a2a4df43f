"""The source: a working example that serves a folder of JSON files. Make it yours.

Every ``*.json`` file under ``root`` is one item, delivered as pretty-printed JSON text.
Replace the reading with your own material (a ticket API, a wiki, a table) and keep the
rules that ``tests/test_source.py`` checks with ``taskctx.testing.SourceContract``:

- ``async_revision`` is cheap: it stats files and never opens them;
- descriptors are structure (path, title, size, length, content version), no content;
- ``async_read_exact`` returns at most ``limit`` characters, with the digest of all;
- unknown refs, and refs that would leave ``root``, raise ``NotFoundError``.
"""

from __future__ import annotations

import asyncio
import bisect
import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from taskctx import (
    ContextRef,
    DescriptorPage,
    EnumerationRequest,
    ExactRead,
    NamespacedCode,
    NotFoundError,
    Problem,
    Representation,
    RunConfiguration,
    SourceDescriptor,
    SourceUnavailableError,
    UnsupportedScopeError,
    sha256_digest,
)

__all__ = ["INVALID_JSON", "{{ cookiecutter.__class_name }}"]

INVALID_JSON = NamespacedCode("{{ cookiecutter.__source_kind }}:invalid_json")
"""Problem code of a file that is not valid JSON: a code that is not one of the kernel's
(``taskctx.ProblemCode``) is namespaced ``<namespace>:<name>``."""

MEDIA_TYPE = "application/json"
SUFFIX = ".json"

Stamp = tuple[int, int]
"""(mtime_ns, size) of a file: it changes whenever the file does, and costs one stat."""


@dataclass(frozen=True)
class _Facts:
    """What a descriptor says about one file, computed once per stamp."""

    stamp: Stamp
    content_version: str
    title: str
    chars: int | None
    problem: Problem | None


def _pretty(value: Any) -> str:
    """The canonical text of a JSON value: two-space indent, a final newline."""
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def _title(path: str, value: Any) -> str:
    """The document's top-level string ``"title"`` if it has one, else the file name."""
    if isinstance(value, dict) and isinstance(value.get("title"), str) and value["title"]:
        return str(value["title"])
    return path.rsplit("/", 1)[-1]


class {{ cookiecutter.__class_name }}:
    """Every ``*.json`` file under ``root`` is one item, read as pretty JSON text.

    Hidden files and folders (``.name``) are skipped; a symbolic link is served only if
    it resolves inside ``root``. A file that is not valid JSON is listed by reference
    only, with the problem :data:`INVALID_JSON`: it never enters a package as text.
    """

    kind = "{{ cookiecutter.__source_kind }}"
    serves_pinned_revisions = False  # a folder keeps no history: a change makes readers stale

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).resolve()
        self.identity = f"{self.kind}:{self.root}"
        self._facts: dict[str, _Facts] = {}

    def with_configuration(
        self, configuration: RunConfiguration
    ) -> {{ cookiecutter.__class_name }}:
        """Itself: a local folder contacts no host, whatever ``allowed_hosts`` say."""
        return self

    def describe(self) -> Mapping[str, Any]:
        """Shown in ``ctx.source_catalog()``."""
        return {"kind": self.kind, "root": str(self.root)}

    def rebuild_options(self) -> dict[str, Any]:
        """What ``host.source(kind, **options)`` needs to make this source again, for
        ``TaskContext.restore``: JSON-safe, absolute paths."""
        return {"root": str(self.root)}

    # -- the protocol ------------------------------------------------------------------

    async def async_revision(self) -> str:
        """A digest of every file's path and stamp: cheap, and it changes with any file."""
        stamps = await asyncio.to_thread(self._stamps)
        return self._revision_of(stamps)

    async def async_enumerate_descriptors(self, request: EnumerationRequest) -> DescriptorPage:
        """One page of descriptors in path order, after ``request.cursor`` (a path)."""
        return await asyncio.to_thread(self._page, request)

    async def async_read_exact(self, ref: ContextRef, limit: int | None = None) -> ExactRead:
        """The pretty JSON text of ``ref.path``, cut at ``limit`` characters.

        A file that is not valid JSON comes back as its bytes, by reference only.
        """
        if ref.scope is not None:
            # scoped refs (``lines:3-9``) are served by the kernel's scoped readers,
            # which read the whole item through this method with no scope
            raise UnsupportedScopeError(f"{self.kind} serves whole files only, not {ref}")
        return await asyncio.to_thread(self._read, ref.path, limit)

    # -- listing -----------------------------------------------------------------------

    def _stamps(self) -> dict[str, Stamp]:
        """Relative path -> stamp of every item, in path order. One stat per file."""
        if not self.root.is_dir():
            raise SourceUnavailableError(f"{self.kind}: {self.root} is not a directory")
        stamps: dict[str, Stamp] = {}
        for folder, dirs, files in os.walk(self.root):  # does not follow folder links
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            for name in files:
                if name.startswith(".") or not name.endswith(SUFFIX):
                    continue
                file = Path(folder, name)
                if file.is_symlink() and not self._inside(file):
                    continue
                try:
                    stat = file.stat()
                except OSError:  # removed meanwhile, or a dangling link
                    continue
                stamps[file.relative_to(self.root).as_posix()] = (stat.st_mtime_ns, stat.st_size)
        return dict(sorted(stamps.items()))

    def _revision_of(self, stamps: Mapping[str, Stamp]) -> str:
        listing = json.dumps(list(stamps.items()), separators=(",", ":")).encode()
        return "stamps:" + hashlib.sha256(listing).hexdigest()[:24]

    def _page(self, request: EnumerationRequest) -> DescriptorPage:
        stamps = self._stamps()
        prefix = request.path_prefix or ""
        paths = [path for path in stamps if path.startswith(prefix)]
        # the cursor is the last path of the previous page: a file added or removed
        # meanwhile cannot make the next page skip or repeat another one
        start = 0 if request.cursor is None else bisect.bisect_right(paths, request.cursor)
        chunk = paths[start : start + request.page_size]
        descriptors = tuple(self._descriptor(path, stamps[path]) for path in chunk)
        for gone in self._facts.keys() - stamps.keys():  # forget removed files
            self._facts.pop(gone, None)
        more = start + len(chunk) < len(paths)
        return DescriptorPage(
            descriptors=descriptors,
            revision=self._revision_of(stamps),
            next_cursor=chunk[-1] if more and chunk else None,
            total=len(paths),
        )

    def _descriptor(self, path: str, stamp: Stamp) -> SourceDescriptor:
        facts = self._facts_of(path, stamp)
        if facts.problem is not None:
            return SourceDescriptor(
                path=path,
                title=facts.title,
                media_type=MEDIA_TYPE,
                size=stamp[1],
                content_version=facts.content_version,
                representation=Representation.REFERENCE_ONLY,
                problem=facts.problem,
            )
        return SourceDescriptor(
            path=path,
            title=facts.title,
            media_type=MEDIA_TYPE,
            size=stamp[1],
            chars=facts.chars,
            content_version=facts.content_version,
        )

    def _facts_of(self, path: str, stamp: Stamp) -> _Facts:
        """The facts of one file, read and hashed only when its stamp changed."""
        known = self._facts.get(path)
        if known is not None and known.stamp == stamp:
            return known
        # ``stamp`` was taken before this read: if the file changes while we read it,
        # its next stamp differs and these facts are recomputed, never trusted stale
        data = (self.root / path).read_bytes()
        version = sha256_digest(data)
        try:
            value = json.loads(data)
        except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
            problem = Problem(code=INVALID_JSON, message=f"{path} is not valid JSON: {exc}")
            facts = _Facts(stamp, version, _title(path, None), None, problem)
        else:
            facts = _Facts(stamp, version, _title(path, value), len(_pretty(value)), None)
        self._facts[path] = facts
        return facts

    # -- reading -----------------------------------------------------------------------

    def _inside(self, file: Path) -> bool:
        """Whether ``file`` resolves (links followed) to a place under ``root``."""
        try:
            return file.resolve().is_relative_to(self.root)
        except (OSError, RuntimeError):  # a link loop
            return False

    def _locate(self, path: str) -> Path:
        """The file behind a ref path, confined to ``root``; NotFoundError otherwise."""
        parts = path.split("/")
        if (
            not path.endswith(SUFFIX)
            or path.startswith("/")
            or "\\" in path
            or any(part in ("", ".", "..") or part.startswith(".") for part in parts)
        ):
            raise NotFoundError(f"{self.kind} has no item {path!r}")
        file = self.root.joinpath(*parts)
        # as in the listing: no folder links, file links only if they stay inside root
        folders = (self.root.joinpath(*parts[:depth]) for depth in range(1, len(parts)))
        if any(folder.is_symlink() for folder in folders) or not file.is_file():
            raise NotFoundError(f"{self.kind} has no item {path!r}")
        if file.is_symlink() and not self._inside(file):
            raise NotFoundError(f"{self.kind} has no item {path!r}")
        return file

    def _read(self, path: str, limit: int | None) -> ExactRead:
        file = self._locate(path)
        try:
            data = file.read_bytes()
        except FileNotFoundError as exc:  # removed since it was located
            raise NotFoundError(f"{self.kind} has no item {path!r}") from exc
        version = sha256_digest(data)
        try:
            value = json.loads(data)
        except ValueError:
            # not JSON: the bytes, reference only, so the text never enters a package
            return ExactRead.from_bytes(path, data, media_type=MEDIA_TYPE, content_version=version)
        return ExactRead.from_text(
            path, _pretty(value), limit, media_type=MEDIA_TYPE, content_version=version
        )
