"""The ``pinned_repository`` ContextSource: one commit's authorised files.

Descriptors come from ``git ls-tree -r -l`` with the blob id as content version, so an
index reuses its work for every blob two commits share; what a blob is (media type,
text length, Markdown sections) is cached by blob id. Media rules are the
workspace's: text enters as text, documents as parsed text through a FileIOHandler,
everything else (images, archives, binaries) as reference only. Symlinks and
submodules are described, reference only, with a problem saying they are not followed.
Scoped reads: ``lines:A-B`` of any text, and ``section:<heading>`` of Markdown.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from taskctx.codes import NamespacedCode, ProblemCode
from taskctx.errors import MediaError, NotFoundError, UnsupportedScopeError
from taskctx.media import MediaClass, classify, classify_bytes, decode_text, handler_missing
from taskctx.model import (
    ContextRef,
    DescriptorPage,
    EnumerationRequest,
    ExactRead,
    Problem,
    Representation,
    SectionInfo,
    SourceDescriptor,
)
from taskctx.sections import markdown_sections, parse_line_scope, slice_lines
from taskctx.statefiles import StateDir
from taskctx_repo.facts import FACTS_VERSION, BlobFacts
from taskctx_repo.git import TreeEntry
from taskctx_repo.remote import is_remote

if TYPE_CHECKING:
    from taskctx.policy import RunConfiguration
    from taskctx_repo.repository import PinnedRepository

__all__ = ["NAMES_NOT_UTF8", "RepoSource"]

SECTION_SCOPE = "section:"
NAMES_NOT_UTF8 = NamespacedCode("repo:names_not_utf8")
"""Coverage reason: tree entries whose names are not UTF-8 are not offered
(``PinnedRepository.unreadable_names`` counts them)."""


class _Blob(NamedTuple):
    """One read of a pinned blob: its tree entry, bytes, facts and text (None: not text)."""

    entry: TreeEntry
    data: bytes
    facts: BlobFacts
    text: str | None


def _suffix(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[-1].lower() if "." in name else ""


class RepoSource:
    """A pinned repository as a ContextSource (kind ``pinned_repository``)."""

    kind = "pinned_repository"
    serves_pinned_revisions = True

    def __init__(self, repository: PinnedRepository) -> None:
        self.repository = repository
        self.identity = repository.identity
        self.index_directory = StateDir(repository.state_dir, ("index",))
        self._handler_tags: dict[str, str] = {}

    def with_configuration(self, configuration: RunConfiguration) -> RepoSource:
        """Itself once ``configuration`` allows every URL the repository was fetched from.

        A remote repository contacts hosts only while it is made, so what is checked is
        the URL it was cloned or fetched from and every redirect it followed
        (PolicyError naming the refused one); a local repository contacted none. The
        configuration it was made under keeps applying too: nothing is widened.
        """
        self.repository.authorize(configuration)
        return self

    def describe(self) -> dict[str, Any]:
        """Catalog facts: where, which commit, which globs."""
        repo = self.repository
        return {"location": repo.location, "commit": repo.commit, "paths": list(repo.rules.globs)}

    def rebuild_options(self) -> dict[str, Any]:
        """``host.source("pinned_repository", **options)`` makes this source again: the
        same repository (a local path made absolute; a remote URL with the clone cache it
        was fetched into), the resolved commit id, the path globs and the state folder."""
        repo = self.repository
        options: dict[str, Any] = {
            "location": repo.location,
            "commit": repo.commit,
            "paths": list(repo.rules.globs),
            "state_dir": str(repo.state_dir),
        }
        if is_remote(repo.location):
            options["cache_dir"] = str(repo.git_dir.parent)
        else:
            options["location"] = str(Path(repo.location).resolve())
        return options

    async def async_revision(self) -> str:
        """The commit id plus the authorised path set: it never moves."""
        return self.repository.revision

    # -- facts ------------------------------------------------------------------------

    def _fact_key(self, entry: TreeEntry) -> str:
        suffix = _suffix(entry.path)
        tag = self._handler_tags.get(suffix)
        if tag is None:  # documents: the facts depend on which handler parses them
            decision = classify(entry.path, None)
            tag = "-"
            if decision.media_class is MediaClass.DOCUMENT:
                handler = self.repository.host.file_io_handler_for(entry.path, decision.media_type)
                tag = (
                    "none"
                    if handler is None
                    else f"{type(handler).__module__}.{type(handler).__qualname__}"
                    f"@{getattr(handler, 'version', '1')}"
                )
            self._handler_tags[suffix] = tag
        return f"{FACTS_VERSION}:{entry.oid}:{suffix}:{tag}"

    def _facts_of(self, entry: TreeEntry, data: bytes) -> BlobFacts:
        decision = classify_bytes(entry.path, data)
        if decision.media_class is MediaClass.TEXT:
            try:
                text = decode_text(data)
            except MediaError as exc:
                problem = Problem(code=ProblemCode.INVALID_TEXT, message=f"{entry.path}: {exc}")
                return BlobFacts(
                    decision.media_type, Representation.REFERENCE_ONLY, None, (), problem
                )
            sections = markdown_sections(text) if decision.media_type == "text/markdown" else ()
            return BlobFacts(decision.media_type, Representation.TEXT, len(text), sections)
        if decision.media_class is MediaClass.DOCUMENT:
            handler = self.repository.host.file_io_handler_for(entry.path, decision.media_type)
            if handler is None:
                problem = handler_missing(entry.path, decision.media_type)
                return BlobFacts(
                    decision.media_type, Representation.REFERENCE_ONLY, None, (), problem
                )
            try:
                parsed = handler.parse(data, entry.path)
            except MediaError as exc:
                problem = Problem(code=exc.code, message=str(exc))
                return BlobFacts(
                    decision.media_type, Representation.REFERENCE_ONLY, None, (), problem
                )
            return BlobFacts(
                decision.media_type, Representation.PARSED_TEXT, len(parsed.text), parsed.sections
            )
        return BlobFacts(decision.media_type, Representation.REFERENCE_ONLY, None)

    def _facts(self, entries: list[TreeEntry]) -> dict[str, BlobFacts]:
        keys = [self._fact_key(e) for e in entries]
        known = self.repository.facts.get_many(keys)
        fresh: dict[str, BlobFacts] = {}
        for entry, key in zip(entries, keys, strict=True):
            if key not in known and key not in fresh:
                fresh[key] = self._facts_of(entry, self.repository.cat.read(entry.oid)[1])
        self.repository.facts.put_many(fresh)
        return {**known, **fresh}

    def _descriptor(self, entry: TreeEntry, facts: BlobFacts | None) -> SourceDescriptor:
        base: dict[str, Any] = {
            "path": entry.path,
            "title": entry.path.rsplit("/", 1)[-1],
            "size": entry.size,
            "content_version": f"git:{entry.oid}",
            "metadata": {"mode": entry.mode, "oid": entry.oid},
        }
        if entry.is_submodule:
            problem = Problem(
                code=ProblemCode.SUBMODULE,
                message=f"{entry.path} is a submodule at commit {entry.oid}; not followed",
            )
            return SourceDescriptor(
                **base,
                media_type="application/x-git-submodule",
                representation=Representation.REFERENCE_ONLY,
                problem=problem,
            )
        if entry.is_symlink:
            problem = Problem(
                code=ProblemCode.SYMLINK, message=f"{entry.path} is a symlink; not followed"
            )
            return SourceDescriptor(
                **base,
                media_type="inode/symlink",
                representation=Representation.REFERENCE_ONLY,
                problem=problem,
            )
        assert facts is not None
        return SourceDescriptor(
            **base,
            media_type=facts.media_type,
            representation=facts.representation,
            chars=facts.chars,
            sections=facts.sections,
            problem=facts.problem,
        )

    def _page(self, request: EnumerationRequest) -> DescriptorPage:
        entries = self.repository.entries()
        paths = sorted(entries)
        if request.path_prefix:
            paths = [p for p in paths if p.startswith(request.path_prefix)]
        start = 0
        if request.cursor:
            import bisect

            start = bisect.bisect_right(paths, request.cursor)
        chosen = [entries[p] for p in paths[start : start + request.page_size]]
        blobs = [e for e in chosen if not (e.is_submodule or e.is_symlink)]
        facts = self._facts(blobs)
        descriptors = tuple(self._descriptor(e, facts.get(self._fact_key(e))) for e in chosen)
        more = start + request.page_size < len(paths)
        return DescriptorPage(
            descriptors=descriptors,
            revision=self.repository.revision,
            next_cursor=chosen[-1].path if more and chosen else None,
            total=len(paths),
            reasons=(NAMES_NOT_UTF8,) if self.repository.unreadable_names else (),
        )

    async def async_enumerate_descriptors(self, request: EnumerationRequest) -> DescriptorPage:
        """Authorised files of the pinned tree, by path."""
        return await asyncio.to_thread(self._page, request)

    # -- reads ------------------------------------------------------------------------

    def _load(self, path: str) -> _Blob:
        """One read of the pinned blob at ``path``: its bytes, facts and text."""
        repo = self.repository
        entry = repo.entry(path)
        if entry.is_submodule or entry.is_symlink:
            raise NotFoundError(
                f"{path} is a {'submodule' if entry.is_submodule else 'symlink'}; not followed"
            )
        data = repo.cat.read(entry.oid)[1]
        facts = self._facts([entry])[self._fact_key(entry)]
        return _Blob(entry, data, facts, self._text(entry, data, facts))

    def _read(
        self, ref: ContextRef, limit: int | None, blobs: dict[str, _Blob] | None = None
    ) -> ExactRead:
        blob = blobs.get(ref.path) if blobs is not None else None
        if blob is None:
            blob = self._load(ref.path)
            if blobs is not None:
                blobs[ref.path] = blob
        entry, data, facts, text = blob.entry, blob.data, blob.facts, blob.text
        version = f"git:{entry.oid}"
        if text is None and ref.scope is not None:
            raise UnsupportedScopeError(
                f"{ref.path} is {facts.media_type}, reference only: it has no scope {ref.scope!r}"
            )
        if text is None:
            return ExactRead.from_bytes(
                ref.path, data, media_type=facts.media_type, content_version=version
            )
        if ref.scope is None:
            return ExactRead.from_text(
                ref.path,
                text,
                limit,
                media_type=facts.media_type,
                representation=facts.representation,
                content_version=version,
                sections=facts.sections,
            )
        section = self._scope_text(ref, text, facts.sections)
        return ExactRead.from_text(
            ref.path,
            section,
            limit,
            scope=ref.scope,
            media_type=facts.media_type,
            representation=facts.representation,
            content_version=version,
        )

    def _text(self, entry: TreeEntry, data: bytes, facts: BlobFacts) -> str | None:
        if facts.representation is Representation.TEXT:
            return decode_text(data)
        if facts.representation is Representation.PARSED_TEXT:
            handler = self.repository.host.file_io_handler_for(entry.path, facts.media_type)
            if handler is None:
                return None
            return handler.parse(data, entry.path).text
        return None

    @staticmethod
    def _scope_text(ref: ContextRef, text: str, sections: tuple[SectionInfo, ...]) -> str:
        scope = ref.scope or ""
        if scope.startswith("lines:"):
            try:
                first, last = parse_line_scope(scope)
            except ValueError as exc:
                raise UnsupportedScopeError(str(exc)) from None
            return slice_lines(text, first, last)
        if scope.startswith(SECTION_SCOPE):
            heading = scope[len(SECTION_SCOPE) :].strip()
            matches = [s for s in sections if s.title == heading]
            if not matches:
                raise NotFoundError(f"{ref.path} has no heading {heading!r}")
            first, last = parse_line_scope(matches[0].scope)
            return slice_lines(text, first, last)
        for section in sections:  # a document's own section scopes (page:3, slide:2, ...)
            if section.scope == scope and section.start is not None and section.end is not None:
                return text[section.start : section.end]
        raise UnsupportedScopeError(f"scope {scope!r} of {ref.path} is not a line range or section")

    async def async_read_exact(self, ref: ContextRef, limit: int | None = None) -> ExactRead:
        """The pinned blob at ``ref.path``, bounded; authorised paths only."""
        return await asyncio.to_thread(self._read, ref.with_scope(None), limit)

    async def async_read_scoped(self, ref: ContextRef, limit: int | None = None) -> ExactRead:
        """A line range, a Markdown heading's section or a document section, re-authorised."""
        return await asyncio.to_thread(self._read, ref, limit)

    async def async_read_exact_many(
        self, refs: Sequence[ContextRef], limit: int | None = None
    ) -> list[ExactRead | Exception]:
        """Each ref read as ``async_read_exact`` (a scoped one as ``async_read_scoped``)
        reads it, in one thread hop through the one ``cat-file --batch``; every blob is read,
        decoded or parsed once for all the refs into it."""

        def read_all() -> list[ExactRead | Exception]:
            blobs: dict[str, _Blob] = {}
            answers: list[ExactRead | Exception] = []
            for ref in refs:
                try:
                    answers.append(self._read(ref, limit, blobs))
                except Exception as exc:  # one ref's failure is its answer
                    answers.append(exc)
            return answers

        return await asyncio.to_thread(read_all)
