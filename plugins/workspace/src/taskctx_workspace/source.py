"""The ``task_workspace`` ContextSource: a folder's files, by file and by section.

Revisions come from stamps (size, mtime, inode, ctime) of a stat walk, never from
rehashing: a file is hashed and parsed again only when its stamp changes. Long text
files and documents are also described per section or line chunk, so a reader can
deliver the part that matters instead of a whole file or nothing.
"""

from __future__ import annotations

import asyncio
import codecs
import hashlib
import marshal
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from taskctx.codes import ProblemCode
from taskctx.digests import SHA256_PREFIX, sha256_digest, sha256_hex
from taskctx.errors import MediaError, NotFoundError, StaleReaderError, UnsupportedScopeError
from taskctx.media import MediaClass, MediaDecision, decode_text, handler_missing
from taskctx.model import (
    ContextRef,
    DescriptorPage,
    EnumerationRequest,
    ExactRead,
    Problem,
    Representation,
    SourceDescriptor,
)
from taskctx.progress import report
from taskctx.protocols import ChangeSet, ParsedDocument
from taskctx.sections import markdown_sections, parse_line_scope, passages, slice_lines
from taskctx.statefiles import StateDir
from taskctx_workspace.handed import HandedTexts
from taskctx_workspace.units import document_units, read_notes, section_of

if TYPE_CHECKING:
    from taskctx.policy import RunConfiguration
    from taskctx_workspace.workspace import TaskWorkspace

__all__ = ["DEFAULT_CHUNK_CHARS", "WorkspaceSource"]

DEFAULT_CHUNK_CHARS = 4000
"""Text files longer than this are also described in passages of about this size
(``taskctx.sections.passages``: headings, paragraphs and code blocks)."""

Stamp = tuple[int, int, int, int]
DescriptorKey = tuple[str, str | None]
KEPT_SCANS = 8
"""How many recent revisions ``async_changes`` can diff against."""


def _revision_of(stamps: Mapping[str, Stamp]) -> str:
    # sorted paths, then their stamps (sorting (path, stamp) pairs is several times slower);
    # marshal format 2 has no back-references: the bytes depend on the values alone
    paths = sorted(stamps)
    payload = marshal.dumps((paths, list(map(stamps.__getitem__, paths))), 2)
    return "ws-" + hashlib.sha256(payload).hexdigest()[:24]


@attrs.define(slots=True)
class _FileView:
    """What one scan learnt about one file: its stamp and its descriptors."""

    stamp: Stamp
    descriptors: tuple[SourceDescriptor, ...]


@attrs.define(slots=True)
class _Loaded:
    """One read of one file: its bytes, their sha256 content version, media, and the
    decoded text and parse of exactly those bytes (made once, when first needed)."""

    path: str
    data: bytes
    version: str
    decision: MediaDecision
    parsed: ParsedDocument | None = None
    _text: str | None = None

    def text(self) -> str:
        """The bytes decoded as text (raises MediaError for invalid text)."""
        if self._text is None:
            self._text = decode_text(self.data)
        return self._text


@attrs.define(slots=True)
class _Scan:
    """One stat walk: stamps by path and the revision they make."""

    revision: str
    stamps: dict[str, Stamp]


class WorkspaceSource:
    """A TaskWorkspace as a ContextSource (kind ``task_workspace``).

    Made by ``workspace.source()`` or ``host.source("task_workspace", root=..., mode=...)``.
    """

    kind = "task_workspace"

    def __init__(self, workspace: TaskWorkspace, *, chunk_chars: int = DEFAULT_CHUNK_CHARS) -> None:
        if chunk_chars < 1:
            raise ValueError(f"chunk_chars must be at least 1, not {chunk_chars}")
        self.workspace = workspace
        self.chunk_chars = chunk_chars
        self.identity = f"task_workspace:{workspace.root}"
        self.index_directory: StateDir = workspace.derived.child("index")
        self._files: dict[str, _FileView] = {}
        self._scans: dict[str, dict[str, Stamp]] = {}
        self._latest: _Scan | None = None
        self._listing: tuple[str, list[SourceDescriptor]] | None = None
        self._texts = HandedTexts()

    def with_configuration(self, configuration: RunConfiguration) -> WorkspaceSource:
        """Itself, under any configuration: a workspace contacts no host."""
        return self

    def describe(self) -> dict[str, Any]:
        """Catalog facts: the root and mode (no content)."""
        return {"root": str(self.workspace.root), "mode": self.workspace.mode}

    def rebuild_options(self) -> dict[str, Any]:
        """``host.source("task_workspace", **options)`` makes this source again: the same
        root (never created anew: a missing root fails the restore), mode, execution and
        state folder."""
        return {
            "root": str(self.workspace.root),
            "mode": self.workspace.mode,
            "execution_id": self.workspace.execution_id,
            "create": False,
            "chunk_chars": self.chunk_chars,
            "state_dir": str(self.workspace.derived.base),
        }

    # -- revisions ---------------------------------------------------------------

    def _walk(self) -> _Scan:
        stamps = self.workspace.stamps()
        latest = self._latest
        if latest is not None and latest.stamps == stamps:
            return latest  # the revision is the stamps' alone: no sort and hash again
        scan = _Scan(_revision_of(stamps), stamps)
        self._latest = scan
        self._scans[scan.revision] = stamps
        while len(self._scans) > KEPT_SCANS:  # oldest first: dicts keep insertion order
            del self._scans[next(iter(self._scans))]
        return scan

    async def async_revision(self) -> str:
        """The digest of every file's stamp: a stat walk, no hashing."""
        return await asyncio.to_thread(lambda: self._walk().revision)

    # -- descriptors ---------------------------------------------------------------

    def _known(self, path: str, stamp: Stamp) -> bool:
        known = self._files.get(path)
        return known is not None and known.stamp == stamp

    def _view(self, path: str, stamp: Stamp) -> _FileView:
        known = self._files.get(path)
        if known is not None and known.stamp == stamp:
            return known
        view = _FileView(stamp, tuple(self._describe(path, stamp)))
        self._files[path] = view
        return view

    def _describe(self, path: str, stamp: Stamp) -> Iterable[SourceDescriptor]:
        workspace = self.workspace
        data = workspace.read_bytes(path)
        version = sha256_digest(data)
        decision = workspace.media(path, data)
        title = path.rsplit("/", 1)[-1]
        base: dict[str, Any] = {
            "path": path,
            "title": title,
            "media_type": decision.media_type,
            "size": len(data),
            "content_version": version,
        }
        if decision.media_class is MediaClass.TEXT:
            yield from self._describe_text(path, base, data, decision.media_type)
            return
        if decision.media_class is MediaClass.DOCUMENT:
            try:
                parsed = self._parse(path, data, decision, version)
            except MediaError as exc:
                problem = Problem(code=exc.code, message=str(exc))
                yield SourceDescriptor(
                    **base, representation=Representation.REFERENCE_ONLY, problem=problem
                )
                return
            yield SourceDescriptor(
                **base,
                representation=Representation.PARSED_TEXT,
                chars=len(parsed.text),
                sections=parsed.sections,
            )
            for position, section in enumerate(document_units(parsed, self.chunk_chars)):
                yield SourceDescriptor(
                    **{**base, "title": f"{title}: {section.title}"},
                    representation=Representation.PARSED_TEXT,
                    chars=section.chars,
                    scope=section.scope,
                    position=position,
                )
            return
        yield SourceDescriptor(**base, representation=Representation.REFERENCE_ONLY)

    def _describe_text(
        self, path: str, base: dict[str, Any], data: bytes, media_type: str
    ) -> Iterable[SourceDescriptor]:
        """The descriptors of a text file: the file, then its passages when it is long."""
        title = base["title"]
        try:
            text = decode_text(data)
        except MediaError as exc:
            problem = Problem(code=ProblemCode.INVALID_TEXT, message=f"{path}: {exc}")
            yield SourceDescriptor(
                **base, representation=Representation.REFERENCE_ONLY, problem=problem
            )
            return
        sections = markdown_sections(text) if media_type == "text/markdown" else ()
        if len(text) <= self.chunk_chars:
            # a file cut into passages is read by the sync once for all its parts
            self._texts.hold(path, text)
        yield SourceDescriptor(**base, chars=len(text), sections=sections)
        if len(text) > self.chunk_chars:
            markdown = media_type == "text/markdown"
            parts = passages(text, self.chunk_chars, markdown=markdown)
            for position, chunk in enumerate(parts):
                yield SourceDescriptor(
                    **{**base, "title": f"{title}: {chunk.title}"},
                    chars=chunk.chars,
                    scope=chunk.scope,
                    position=position,
                )

    def _descriptors_at(self, scan: _Scan) -> list[SourceDescriptor]:
        if self._listing is not None and self._listing[0] == scan.revision:
            return self._listing[1]
        self._texts.clear()  # what an earlier enumeration did not hand over is not needed
        listing: list[SourceDescriptor] = []
        paths = sorted(scan.stamps)
        fresh = sum(not self._known(path, scan.stamps[path]) for path in paths)
        task, done = f"reading {self.workspace.root.name or self.workspace.root}", 0
        for path in paths:
            stamp = scan.stamps[path]
            known = self._known(path, stamp)
            listing.extend(self._view(path, stamp).descriptors)
            if not known:  # read, hashed and perhaps parsed: the slow part, reported
                done += 1
                report(task, done, fresh)
        for gone in set(self._files) - set(scan.stamps):
            del self._files[gone]
        self._listing = (scan.revision, listing)
        return listing

    async def async_enumerate_descriptors(self, request: EnumerationRequest) -> DescriptorPage:
        """Descriptors of the current files in path order; the cursor is an offset. A page
        hands over the text of each file this enumeration read (``DescriptorPage.texts``,
        within ``handed.HANDED_TEXT_CHARS``), so an index sync does not read it again."""

        def page() -> DescriptorPage:
            listed = self._listing
            if (
                request.cursor is not None
                and listed is not None
                and (request.revision in (None, listed[0]))
            ):
                revision, listing = listed  # a later page of the enumeration in progress
            else:
                scan = self._walk()
                revision, listing = scan.revision, self._descriptors_at(scan)
            if request.path_prefix:
                listing = [d for d in listing if d.path.startswith(request.path_prefix)]
            start = _offset(request.cursor)
            chunk = listing[start : start + request.page_size]
            end = start + len(chunk)
            return DescriptorPage(
                descriptors=tuple(chunk),
                revision=revision,
                next_cursor=str(end) if end < len(listing) else None,
                total=len(listing),
                texts=self._texts.hand(chunk),
            )

        return await asyncio.to_thread(page)

    async def async_changes(self, since: str) -> ChangeSet | None:
        """What changed since ``since`` by comparing stamps: changed files only are read."""

        def diff() -> ChangeSet | None:
            before = self._scans.get(since)
            if before is None:
                return None
            # the walk that pinned the revision a moment ago is the current state
            scan = self._latest if self._latest is not None else self._walk()
            now = scan.stamps
            changed = sorted({path for path, _ in now.items() ^ before.items()})
            for path in changed:  # the old descriptors must be the ones seen at `since`
                view = self._files.get(path)
                if path in before and (view is None or view.stamp != before[path]):
                    return None
            upserts: list[SourceDescriptor] = []
            deletes: list[DescriptorKey] = []
            for path in changed:
                new_stamp = scan.stamps.get(path)
                old = self._files.get(path) if path in before else None
                old_keys = {d.key for d in old.descriptors} if old is not None else set()
                if new_stamp is None:
                    deletes.extend(sorted(old_keys, key=str))
                    self._files.pop(path, None)
                    continue
                fresh = self._view(path, new_stamp).descriptors
                upserts.extend(fresh)
                deletes.extend(sorted(old_keys - {d.key for d in fresh}, key=str))
            self._listing = None
            return ChangeSet(
                since=since,
                revision=scan.revision,
                upserts=tuple(upserts),
                deletes=tuple(deletes),
                texts=self._texts.hand(upserts),
            )

        return await asyncio.to_thread(diff)

    # -- reads ---------------------------------------------------------------------------

    async def async_read_exact(self, ref: ContextRef, limit: int | None = None) -> ExactRead:
        """The file's text (parsed text for documents) cut at ``limit``, or its bytes.

        ``content_version`` is the sha256 of the bytes the content came from; a ref pinned
        to another version (``ref.version``) raises StaleReaderError before any parse.
        """
        if ref.scope is not None:
            return await self.async_read_scoped(ref, limit)
        return await asyncio.to_thread(self._read_one, ref, limit)

    async def async_read_scoped(self, ref: ContextRef, limit: int | None) -> ExactRead:
        """A line range of a text file, or a page/sheet/slide/section of a document, sliced
        from one read of the file's bytes whose sha256 is the ``content_version``."""
        if ref.scope is None:
            return await self.async_read_exact(ref, limit)
        return await asyncio.to_thread(self._read_one, ref, limit)

    async def async_read_exact_many(
        self, refs: Sequence[ContextRef], limit: int | None = None
    ) -> list[ExactRead | Exception]:
        """Each ref read as ``async_read_exact`` reads it (a scoped one as
        ``async_read_scoped``), in one thread hop; every file is read and hashed once for
        all the refs into it, whole or scoped."""

        def read_all() -> list[ExactRead | Exception]:
            loaded: dict[str, _Loaded] = {}
            answers: list[ExactRead | Exception] = []
            for ref in refs:
                try:
                    if ref.path not in loaded:
                        loaded[ref.path] = self._load(ref.path)
                    answers.append(self._serve(loaded[ref.path], ref, limit))
                except Exception as exc:  # one ref's failure is its answer
                    answers.append(exc)
            return answers

        return await asyncio.to_thread(read_all)

    def _read_one(self, ref: ContextRef, limit: int | None) -> ExactRead:
        return self._serve(self._load(ref.path), ref, limit)

    def _load(self, path: str) -> _Loaded:
        """One read of the file and the content version of exactly those bytes."""
        data = self._bytes(path)
        return _Loaded(path, data, sha256_digest(data), self.workspace.media(path, data))

    def _serve(self, loaded: _Loaded, ref: ContextRef, limit: int | None) -> ExactRead:
        """``ref`` (whole or scoped) from one read of its file; refused when the reader
        pinned another version (the file changed since the snapshot)."""
        if ref.version is not None and loaded.version != ref.version:
            raise StaleReaderError(
                f"{ref.path} changed since the snapshot: its bytes are {loaded.version}, the "
                f"reader pinned {ref.version}"
            )
        if ref.scope is None:
            return self._read_whole(loaded, limit)
        return self._read_scope(loaded, ref.scope, limit)

    def _parse(
        self, path: str, data: bytes, decision: MediaDecision, version: str | None = None
    ) -> ParsedDocument:
        """The parse of exactly ``data`` (cached by its digest; ``version`` is its
        ``sha256:`` digest when already made), never of a later read of the file:
        ``workspace.parsed(path)`` reads the file again, which may hold other bytes."""
        handler = self.workspace.file_io_handler_for(path, decision.media_type)
        if handler is None:
            problem = handler_missing(path, decision.media_type)
            raise MediaError(problem.message, code=problem.code)
        digest = version.removeprefix(SHA256_PREFIX) if version else sha256_hex(data)
        return self.workspace._parses().parsed(digest, handler, path, lambda: data)

    def _parsed(self, loaded: _Loaded) -> ParsedDocument:
        if loaded.parsed is None:
            loaded.parsed = self._parse(loaded.path, loaded.data, loaded.decision, loaded.version)
        return loaded.parsed

    def _read_whole(self, loaded: _Loaded, limit: int | None) -> ExactRead:
        path, version, decision = loaded.path, loaded.version, loaded.decision
        if decision.media_class is MediaClass.TEXT:
            # strict UTF-8 without a BOM is exactly the text: its digest is the version
            same = not loaded.data.startswith(codecs.BOM_UTF8)
            return ExactRead.from_text(
                path,
                loaded.text(),
                limit,
                digest=version if same else None,
                media_type=decision.media_type,
                content_version=version,
            )
        if decision.media_class is MediaClass.DOCUMENT:
            parsed = self._parsed(loaded)
            return ExactRead.from_text(
                path,
                parsed.text,
                limit,
                media_type=decision.media_type,
                representation=Representation.PARSED_TEXT,
                content_version=version,
                sections=parsed.sections,
                notes=read_notes(parsed),
            )
        # an image is validated by the kernel (taskctx.images) when it becomes an attachment
        return ExactRead(
            path=path,
            data=loaded.data,
            media_type=decision.media_type,
            digest=version,
            representation=Representation.REFERENCE_ONLY,
            content_version=version,
        )

    def _read_scope(self, loaded: _Loaded, scope: str, limit: int | None) -> ExactRead:
        path, version, decision = loaded.path, loaded.version, loaded.decision
        if decision.media_class is MediaClass.DOCUMENT:
            parsed = self._parsed(loaded)
            section = section_of(parsed, scope)
            if section is not None and section.start is not None and section.end is not None:
                return ExactRead.from_text(
                    path,
                    parsed.text[section.start : section.end],
                    limit,
                    scope=scope,
                    media_type=decision.media_type,
                    representation=Representation.PARSED_TEXT,
                    content_version=version,
                    notes=read_notes(parsed),
                )
            text = parsed.text
        elif decision.media_class is MediaClass.TEXT:
            text = loaded.text()
        else:
            raise UnsupportedScopeError(f"{path} is {decision.media_type}: no scoped reads")
        try:
            first, last = parse_line_scope(scope)
        except ValueError:
            raise UnsupportedScopeError(
                f"scope {scope!r} of {path} is neither a line range nor one of its sections"
            ) from None
        return ExactRead.from_text(
            path,
            slice_lines(text, first, last),
            limit,
            scope=scope,
            media_type=decision.media_type,
            content_version=version,
            representation=(
                Representation.PARSED_TEXT
                if decision.media_class is MediaClass.DOCUMENT
                else Representation.TEXT
            ),
        )

    def _bytes(self, path: str) -> bytes:
        try:
            return self.workspace.read_bytes(path)
        except FileNotFoundError:
            raise NotFoundError(f"{path} is not in the workspace {self.workspace.root}") from None


def _offset(cursor: str | None) -> int:
    if cursor is None:
        return 0
    if not cursor.isdigit():
        raise ValueError(f"malformed workspace enumeration cursor {cursor!r}")
    return int(cursor)
