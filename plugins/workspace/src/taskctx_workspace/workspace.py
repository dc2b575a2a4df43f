"""``TaskWorkspace``: an ordinary folder as the file boundary of one task execution.

- Every caller path is confined (:mod:`taskctx_workspace.paths`) before any I/O, and
  every file is reached through :mod:`taskctx_workspace.beneath`: opened component by
  component from the root's descriptor, never following a link, so a folder swapped for
  a symlink by a concurrent process is refused instead of followed out of the root.
- ``read_only`` (the default) never modifies an existing external file: every write
  (new or existing path) lands in this execution's own area,
  ``.taskctx/files/<execution-id>/<path>``, and a read of a path missing externally
  falls back to that copy (``origin="fallback"``). ``read_write`` writes the real path,
  atomically. Staged promotion follows the same rule: in read-only mode the promoted
  target is this execution's copy.
- What the workspace derives from the folder (its index, the digest database, the parse
  cache) lives outside it, in ``<state_dir>/folders/<name>-<digest>/``
  (:func:`taskctx.statefiles.folder_state_dir`: ``state_dir`` defaults to
  ``$TASKCTX_STATE_DIR`` or the user cache), so reading a folder writes nothing into it
  and a folder that cannot be written is read fine. What an execution writes (fallback
  files, staged candidates) lives under the root's ``.taskctx/``.
- One FileIOHandler registry per workspace: the host's handlers plus
  :meth:`TaskWorkspace.register_file_io_handler`.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from taskctx.codes import ProblemCode
from taskctx.digests import sha256_hex
from taskctx.errors import MediaError, PolicyError
from taskctx.media import (
    HEAD_BYTES,
    MediaClass,
    MediaDecision,
    classify,
    classify_bytes,
    decode_text,
    handler_missing,
    is_hidden_path,
)
from taskctx.model import Problem, Representation
from taskctx.plugins import PluginHost
from taskctx.protocols import FileIOHandler, ParsedDocument
from taskctx.statefiles import StateDir, folder_state_dir
from taskctx_workspace.areas import Areas, Mode, ReadOrigin
from taskctx_workspace.beneath import Root, read_all, require_support
from taskctx_workspace.digests import DigestCache
from taskctx_workspace.errors import WorkspaceNotFoundError
from taskctx_workspace.parsing import HandlerRegistry, ParseCache
from taskctx_workspace.paths import (
    STATE_DIR_NAME,
    default_agent_root,
    normalize_prefix,
    normalize_relative,
    safe_name,
)
from taskctx_workspace.results import (
    FileEntry,
    FileRef,
    FileResult,
    FileStat,
    Origin,
    StagedFile,
    completeness_of,
    reference_only,
    stamp_of,
    text_result,
)
from taskctx_workspace.walk import ErrorHandler, walk
from taskctx_workspace.walk import stamps as walk_stamps

if TYPE_CHECKING:
    from taskctx_workspace.source import WorkspaceSource

__all__ = ["HEAD_BYTES", "FileStat", "Mode", "TaskWorkspace", "default_agent_root"]

_MODES = ("read_only", "read_write")


class TaskWorkspace:
    """A folder seen through confinement and a write policy, with caches kept outside it.

    ``host`` None builds the default host from the environment, so the installed
    FileIOHandlers are used. ``execution_id`` (default: a new uuid4 hex) names this
    execution's private areas. ``create`` makes a missing root; otherwise a missing root
    raises :class:`WorkspaceNotFoundError`. ``state_dir`` is the base of the folder's
    derived state (default ``$TASKCTX_STATE_DIR``, else the user cache folder); the
    folder's own part of it is :attr:`derived_dir`.
    """

    __slots__ = (
        "__weakref__",
        "_areas",
        "_digests",
        "_handlers",
        "_hashed_closed",
        "_lock",
        "_parse_cache",
        "_pinned",
        "areas_dir",
        "derived",
        "execution_id",
        "host",
        "mode",
        "root",
    )

    def __init__(
        self,
        root: str | os.PathLike[str],
        mode: Mode = "read_only",
        execution_id: str | None = None,
        create: bool = True,
        host: PluginHost | None = None,
        state_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        if mode not in _MODES:
            raise ValueError(f"mode must be 'read_only' or 'read_write', not {mode!r}")
        require_support()
        path = Path(root)
        if not path.exists():
            if not create:
                raise WorkspaceNotFoundError(
                    f"workspace root {str(path)!r} does not exist (it is made only when "
                    "created on purpose: create=True, or a read_write source)"
                )
            path.mkdir(parents=True, exist_ok=True)
        if not path.is_dir():
            raise WorkspaceNotFoundError(f"workspace root {str(path)!r} is not a folder")
        self.root: Path = path.resolve(strict=True)
        self.mode: Mode = mode
        self.execution_id: str = (
            uuid.uuid4().hex if execution_id is None else safe_name(execution_id, "execution id")
        )
        self.areas_dir: Path = self.root / STATE_DIR_NAME
        """``<root>/.taskctx``: this execution's fallback files and staged candidates."""
        self.derived: StateDir = folder_state_dir(self.root, state_dir)
        """Where the folder's index, digests and parse cache live (outside the folder)."""
        self._pinned = Root.pin(self.root)
        self._areas = Areas(self._pinned, self.execution_id, mode)
        self.host: PluginHost = host if host is not None else PluginHost.from_environment()
        self._handlers = HandlerRegistry(self.host.file_io_handlers())
        self._digests: DigestCache | None = None
        self._parse_cache: ParseCache | None = None
        self._hashed_closed = 0
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"TaskWorkspace({str(self.root)!r}, mode={self.mode!r})"

    def __enter__(self) -> TaskWorkspace:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Write pending cache rows and close the digest database (reopened on next use)."""
        with self._lock:
            if self._digests is not None:
                self._digests.close()
                self._hashed_closed += self._digests.hashed_count
                self._digests = None

    def source(self, **options: Any) -> WorkspaceSource:
        """This workspace as a ContextSource of kind ``task_workspace``."""
        from taskctx_workspace.source import WorkspaceSource

        return WorkspaceSource(self, **options)

    # -- derived state, outside the folder ----------------------------------------------

    @property
    def derived_dir(self) -> Path:
        """``<state_dir>/folders/<name>-<digest>``: this folder's derived state (the path
        as named; made on first use)."""
        return self.derived.path

    @staticmethod
    def _derived(area: StateDir) -> Path | None:
        """The derived-state folder ``area``, made; None when it cannot be (an unwritable
        state folder: the caches then live in memory). A link there is refused."""
        try:
            return area.ensure()
        except OSError:
            return None

    def _digest_cache(self) -> DigestCache:
        with self._lock:
            if self._digests is None:
                area = self.derived.child("workspace")
                folder = self._derived(area)
                db_path = None if folder is None else folder / "digests.db"
                # the cache reaches its files through the folder's descriptor, opened
                # without following links each time, so a folder swapped later is refused
                self._digests = DigestCache(db_path, folder=area.open)
            return self._digests

    def _parses(self) -> ParseCache:
        with self._lock:
            if self._parse_cache is None:
                area = self.derived.child("parsed")
                self._parse_cache = ParseCache(self._derived(area), folder=area.open)
            return self._parse_cache

    @property
    def hashed_count(self) -> int:
        """How many files the digest cache actually hashed so far (its misses)."""
        current = self._digests.hashed_count if self._digests is not None else 0
        return self._hashed_closed + current

    @property
    def parse_count(self) -> int:
        """How many times a FileIOHandler actually parsed a document for this workspace."""
        return self._parse_cache.parse_count if self._parse_cache is not None else 0

    # -- reading ---------------------------------------------------------------------

    def read_bytes(self, rel_path: str, *, origin: ReadOrigin = "auto") -> bytes:
        """All bytes of a confined regular file (external first, then this execution's)."""
        rel = normalize_relative(rel_path)
        fd, _ = self._areas.find(rel, origin)
        try:
            return read_all(fd)
        finally:
            os.close(fd)

    def read_file(
        self, path: str, limit: int | None = None, *, origin: ReadOrigin = "auto"
    ) -> FileResult:
        """The file's text cut at ``limit`` characters (never inside one), or its facts.

        Text files give their decoded text, documents with a handler their parsed text;
        images, binaries and documents without a handler are reference only (use
        :meth:`read_bytes` for the bytes). ``origin`` "auto" reads the external file and
        falls back to this execution's copy when it is missing.
        """
        if limit is not None and limit < 0:
            raise ValueError(f"limit must be >= 0 or None, not {limit}")
        rel = normalize_relative(path)
        fd, st, found = self._areas.open(rel, origin)
        try:
            return self._read_open(fd, st, found, rel, limit)
        finally:
            os.close(fd)

    def _read_open(
        self, fd: int, st: os.stat_result, found: Origin, rel: str, limit: int | None
    ) -> FileResult:
        decision = classify_bytes(rel, os.pread(fd, HEAD_BYTES, 0), whole=False)
        facts: dict[str, Any] = {
            "path": rel,
            "size": st.st_size,
            "media_type": decision.media_type,
            "origin": found,
        }
        if decision.media_class is MediaClass.TEXT:
            data = read_all(fd)  # the digest is of exactly these bytes
            decision = classify_bytes(rel, data)  # all of them: a NUL past the head is binary
            facts.update(sha256=sha256_hex(data), size=len(data), media_type=decision.media_type)
            if decision.media_class is not MediaClass.TEXT:
                return reference_only(facts, None)
            try:
                text = decode_text(data)
            except MediaError as exc:
                return reference_only(
                    facts, Problem(code=ProblemCode.INVALID_TEXT, message=f"{rel}: {exc}")
                )
            return text_result(facts, text, limit, Representation.TEXT)
        # documents and binaries: the digest by stamp, the bytes only on a parse-cache miss
        digest = (
            self._digest_cache().digest(rel, lambda: os.dup(fd), stamp_of(st))
            if found == "external"
            else sha256_hex(read_all(fd))
        )
        facts["sha256"] = digest
        if decision.media_class is MediaClass.DOCUMENT:
            handler = self.file_io_handler_for(rel, decision.media_type)
            if handler is None:
                return reference_only(facts, handler_missing(rel, decision.media_type))
            try:
                parsed = self._parses().parsed(digest, handler, rel, lambda: read_all(fd))
            except MediaError as exc:
                return reference_only(facts, Problem(code=exc.code, message=str(exc)))
            result = text_result(facts, parsed.text, limit, Representation.PARSED_TEXT)
            return result.model_copy(update={"sections": parsed.sections})
        return reference_only(facts, None)

    def media(self, rel_path: str, data: bytes | None) -> MediaDecision:
        """The kernel's media decision (:func:`taskctx.media.classify_bytes`) for a workspace
        path and all of its bytes (None: the path alone): what ``read_file`` and the source
        both deliver by."""
        rel = normalize_relative(rel_path)
        return classify(rel) if data is None else classify_bytes(rel, data)

    @staticmethod
    def _media_of_open(rel: str, fd: int) -> MediaDecision:
        """The decision ``media`` makes for an open file, reading past the head only for
        text: a NUL anywhere makes it binary, here as in ``read_file`` and every source."""
        head = os.pread(fd, HEAD_BYTES, 0)
        decision = classify_bytes(rel, head, whole=False)
        if decision.media_class is MediaClass.TEXT and len(head) == HEAD_BYTES:
            decision = classify_bytes(rel, read_all(fd))
        return decision

    def parsed(self, rel_path: str) -> ParsedDocument:
        """The parsed document at ``rel_path``, once per content digest (cached).

        Raises ``MediaError`` with a code: ``not_a_document``, ``handler_missing``, or the
        handler's own (``encrypted``, ``parse_failed``, ``no_text``, ...).
        """
        rel = normalize_relative(rel_path)
        fd, st, found = self._areas.open(rel)
        try:
            return self._parsed_open(fd, st, found, rel)
        finally:
            os.close(fd)

    def _parsed_open(self, fd: int, st: os.stat_result, found: Origin, rel: str) -> ParsedDocument:
        decision = self._media_of_open(rel, fd)
        if not decision.needs_handler:
            raise MediaError(
                f"{rel} is {decision.media_type} ({decision.media_class.value}), not a document",
                code=ProblemCode.NOT_A_DOCUMENT,
            )
        handler = self.file_io_handler_for(rel, decision.media_type)
        if handler is None:
            problem = handler_missing(rel, decision.media_type)
            raise MediaError(problem.message, code=problem.code)
        digest = (
            self._digest_cache().digest(rel, lambda: os.dup(fd), stamp_of(st))
            if found == "external"
            else None
        )
        return self._parses().parsed(digest, handler, rel, lambda: read_all(fd))

    # -- walking and digests ---------------------------------------------------------------

    def iter_entries(
        self,
        include_hidden: bool = True,
        prefix: str = "",
        on_error: ErrorHandler | None = None,
    ) -> Iterator[FileStat]:
        """Regular files under the root with their stamps, in a deterministic order.

        Depth first, names sorted within each folder. Skips ``.taskctx/``, temporary
        files of atomic writes, special files, folder symlinks, file symlinks that escape
        the root, loop or enter ``.taskctx/``, and hidden names unless ``include_hidden``.
        ``prefix`` is a plain string prefix of the relative paths; a folder that cannot
        be read is reported to ``on_error``. In ``read_write`` mode the walk removes the
        stale temporary files of killed writers it meets.
        """
        return walk(
            self._pinned,
            include_hidden=include_hidden,
            prefix=prefix,
            on_error=on_error,
            on_temp=self._temp_handler(),
        )

    def _temp_handler(self) -> Callable[[int, str], None] | None:
        """In read-write mode, walks remove the temporary files killed writers left."""
        return self._areas.temp_seen if self.mode == "read_write" else None

    def stamps(self) -> dict[str, tuple[int, int, int, int]]:
        """Every file's (size, mtime_ns, inode, ctime_ns), hidden files included: one stat walk."""
        return walk_stamps(self._pinned, include_hidden=True, on_temp=self._temp_handler())

    def stamp_digest(self, rel_path: str, stat: FileStat | os.stat_result) -> str:
        """The sha256 of an external file, from the cache when ``stat``'s stamp matches."""
        rel = normalize_relative(rel_path)
        return self._digest_cache().digest(
            rel, lambda: self._areas.open_external(rel), stamp_of(stat)
        )

    def digest_batch(self) -> AbstractContextManager[None]:
        """Group digest-cache writes of one scan into one transaction."""
        return self._digest_cache().batch()

    def list_files(self, prefix: str = "", include_hidden: bool = False) -> list[FileEntry]:
        """External files (not ``.taskctx/``) with digest, media type and representation."""
        entries: list[FileEntry] = []
        cache = self._digest_cache()
        with cache.batch():
            for st in self.iter_entries(include_hidden=include_hidden, prefix=prefix):
                try:
                    fd = self._areas.open_external(st.path)
                except (FileNotFoundError, PolicyError):
                    continue  # gone or replaced by something refused since the walk
                try:
                    digest = cache.digest(st.path, lambda: os.dup(fd), st.stamp)  # noqa: B023
                    decision = self._media_of_open(st.path, fd)
                finally:
                    os.close(fd)
                handled = decision.needs_handler and (
                    self.file_io_handler_for(st.path, decision.media_type) is not None
                )
                representation = decision.representation(handler_available=handled)
                entries.append(
                    FileEntry(
                        path=st.path,
                        size=st.size,
                        sha256=digest,
                        media_type=decision.media_type,
                        representation=representation,
                        completeness=completeness_of(representation),
                        mtime_ns=st.mtime_ns,
                    )
                )
        if normalize_prefix(prefix) == "":  # a whole walk: forget what is gone
            visible = None if include_hidden else _not_hidden
            cache.retain([entry.path for entry in entries], scope=visible)
        return entries

    # -- FileIOHandlers ------------------------------------------------------------------

    def register_file_io_handler(self, handler: FileIOHandler) -> None:
        """Add a FileIOHandler to this workspace's registry (consulted before the host's)."""
        self._handlers.register(handler)

    def file_io_handlers(self) -> tuple[FileIOHandler, ...]:
        """This workspace's handlers, in the order they are consulted."""
        return self._handlers.handlers()

    def file_io_handler_for(
        self, path: str | None, media_type: str | None = None
    ) -> FileIOHandler | None:
        """The handler for ``media_type`` if one claims it, else the longest suffix match."""
        return self._handlers.handler_for(path, media_type)

    # -- writing ---------------------------------------------------------------------

    def write_file(self, path: str, content: str | bytes) -> FileRef:
        """Write ``content`` (str as UTF-8) atomically where the mode says (see module doc)."""
        return self._areas.write(normalize_relative(path), _encode(content))

    def edit_file(
        self, path: str, old: str, new: str, expected_sha256: str | None = None
    ) -> FileRef:
        """Replace the one occurrence of ``old`` with ``new``, atomically.

        Edits the file a write of ``path`` lands on: the real file in ``read_write``
        mode; in ``read_only`` mode this execution's copy, made from the external file
        on the first edit. ``expected_sha256`` must match that file's current digest.
        """
        return self._areas.edit(normalize_relative(path), old, new, expected_sha256)

    # -- staged delivery ---------------------------------------------------------------

    def stage(self, path: str, content: str | bytes) -> StagedFile:
        """Write a candidate under ``.taskctx/staged/<execution-id>/`` and read it back."""
        return self._areas.stage(normalize_relative(path), _encode(content))

    def promote(self, staged: StagedFile, target: str, expected_sha256: str) -> FileRef:
        """Verify ``staged`` and deliver it to ``target`` atomically, read back whole.

        In ``read_only`` mode the target is this execution's copy (``origin="fallback"``).
        Raises ``PromotionBlocked`` (``outcome="blocked"``) on any failure.
        """
        rel = normalize_relative(target)
        staged_rel = normalize_relative(staged.path)
        return self._areas.promote(staged, staged_rel, rel, expected_sha256)


def _not_hidden(path: str) -> bool:
    return not is_hidden_path(path)


def _encode(content: str | bytes) -> bytes:
    if isinstance(content, str):
        return content.encode("utf-8")
    if isinstance(content, (bytes, bytearray, memoryview)):
        return bytes(content)
    raise TypeError(f"content must be str or bytes, not {type(content).__name__}")
