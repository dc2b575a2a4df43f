"""Documents: the workspace's one FileIOHandler registry and its parse cache.

:class:`HandlerRegistry` holds the handlers of one TaskWorkspace: those its host's
plugins registered through ``register_file_io_handlers`` plus any registered on the
workspace itself (which are consulted first). There is no other registry.

:class:`ParseCache` parses each document once per content digest and handler version.
Results live in the folder's derived state, ``parsed/<sha256>-<handler>-<version>.json``
(written atomically); failures are cached as their code and message, so a broken file is
not parsed again on every scan. A ``timeout`` is not cached: it may not happen next time.
The cache is bounded (``max_bytes``, ``max_files``): past either, the entries used least
recently (a hit touches its file) are deleted until it is back under 80 % of both.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable
from pathlib import Path

from pydantic import ValidationError

from taskctx.codes import ProblemCode
from taskctx.digests import sha256_hex
from taskctx.errors import MediaError
from taskctx.media import handler_for
from taskctx.protocols import FileIOHandler, ParsedDocument, missing_members, protocol_shape

__all__ = [
    "CACHE_FORMAT",
    "DEFAULT_PARSE_CACHE_BYTES",
    "DEFAULT_PARSE_CACHE_FILES",
    "HandlerRegistry",
    "ParseCache",
    "handler_version",
]

CACHE_FORMAT = 1
DEFAULT_PARSE_CACHE_BYTES = 256 * 1024 * 1024
"""How large one folder's parse cache may grow on disk before it is trimmed."""
DEFAULT_PARSE_CACHE_FILES = 20_000
"""How many parsed documents one folder's parse cache may keep on disk."""
_KEPT_AFTER_TRIM = 0.8
_UNSAFE = re.compile(r"[^A-Za-z0-9_.]+")
_MEMORY_ENTRIES = 64
_UNCACHED_CODES = frozenset({ProblemCode.TIMEOUT})
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def handler_version(handler: FileIOHandler) -> str:
    """The handler's ``version`` attribute as text (``"0"`` when it has none)."""
    return str(getattr(handler, "version", "0"))


class HandlerRegistry:
    """FileIOHandlers by name: explicitly registered ones first, then the host's."""

    def __init__(self, host_handlers: Iterable[FileIOHandler] = ()) -> None:
        self._own: list[FileIOHandler] = []
        self._host: list[FileIOHandler] = list(host_handlers)

    def register(self, handler: FileIOHandler) -> None:
        """Add ``handler``; a second handler with the same name is refused."""
        name = getattr(handler, "name", None)
        if not isinstance(name, str) or not name:
            raise TypeError(f"a FileIOHandler needs a non-empty str name, not {name!r}")
        missing = missing_members(handler, FileIOHandler)
        if missing:
            raise TypeError(f"{name!r} lacks {', '.join(missing)}")
        for attr in (m.name for m in protocol_shape(FileIOHandler) if m.returns == tuple[str, ...]):
            value = getattr(handler, attr)
            if isinstance(value, str) or not all(isinstance(v, str) and v for v in value):
                raise TypeError(f"{attr} of {name!r} must be a tuple of non-empty str")
        if any(h.name == name for h in self.handlers()):
            raise ValueError(f"a FileIOHandler named {name!r} is already registered")
        self._own.append(handler)

    def handlers(self) -> tuple[FileIOHandler, ...]:
        """Every handler, in the order they are consulted."""
        return (*self._own, *self._host)

    def handler_for(self, path: str | None, media_type: str | None) -> FileIOHandler | None:
        """The first handler claiming ``media_type`` (aliases resolved), else the longest
        suffix match: the kernel's one lookup, ``taskctx.media.handler_for``."""
        return handler_for(self.handlers(), path, media_type)


def _safe(text: str) -> str:
    return _UNSAFE.sub("_", text)[:64] or "_"


class ParseCache:
    """Parsed documents (or their failures) by content digest and handler version.

    ``directory`` None keeps results in memory only. ``parse_count`` counts real calls
    of a handler's ``parse``. ``folder`` opens ``directory`` (a workspace passes one that
    walks it without following links): files are then read and written relative to that
    descriptor, never through a link swapped in on the way. On disk the cache keeps at
    most ``max_bytes`` and ``max_files`` (``evicted`` counts the entries trimmed).
    """

    def __init__(
        self,
        directory: Path | None,
        *,
        folder: Callable[[], int] | None = None,
        max_bytes: int = DEFAULT_PARSE_CACHE_BYTES,
        max_files: int = DEFAULT_PARSE_CACHE_FILES,
    ) -> None:
        if max_bytes < 1 or max_files < 1:
            raise ValueError(
                f"max_bytes and max_files must be at least 1, not {max_bytes} and {max_files}"
            )
        self.directory = directory
        self._folder = folder
        self.max_bytes = max_bytes
        self.max_files = max_files
        self.evicted = 0
        """How many entries were deleted to keep the cache within its bounds."""
        self._usage: tuple[int, int] | None = None  # (bytes, files) on disk, once counted
        self.parse_count = 0
        self._memory: OrderedDict[str, ParsedDocument | MediaError] = OrderedDict()
        self._lock = threading.Lock()

    def file_name(self, sha256: str, handler: FileIOHandler) -> str:
        """``<sha256>-<handler name>-<handler version>.json`` (names made file-safe)."""
        return f"{sha256}-{_safe(handler.name)}-{_safe(handler_version(handler))}.json"

    def parsed(
        self, sha256: str | None, handler: FileIOHandler, path: str, load: Callable[[], bytes]
    ) -> ParsedDocument:
        """The parse of the document at ``path`` whose digest is ``sha256``.

        ``load`` reads the bytes, only on a miss; if they no longer have that digest the
        result is cached under the digest of what was read. ``sha256`` None: read first.
        Raises ``MediaError`` with the handler's code (cached ones included).
        """
        data: bytes | None = None
        if sha256 is None:
            data = load()
            sha256 = sha256_hex(data)
        result = self._get(sha256, handler)
        if result is None:
            if data is None:
                data = load()
                actual = sha256_hex(data)
                if actual != sha256:
                    sha256 = actual
                    result = self._get(sha256, handler)
            if result is None:
                result = self._parse(handler, data, path)
                self._put(sha256, handler, result)
        if isinstance(result, MediaError):
            raise MediaError(str(result), code=result.code)
        return result

    def _parse(self, handler: FileIOHandler, data: bytes, path: str) -> ParsedDocument | MediaError:
        with self._lock:
            self.parse_count += 1
        try:
            document: object = handler.parse(data, path)
        except MediaError as exc:
            return exc
        except Exception as exc:  # a handler bug must not escape as an uncaught error
            return MediaError(
                f"{path}: handler {handler.name!r} failed: {type(exc).__name__}: {exc}",
                code=ProblemCode.PARSE_FAILED,
            )
        if not isinstance(document, ParsedDocument):
            return MediaError(
                f"{path}: handler {handler.name!r} returned {type(document).__name__}, "
                "not a ParsedDocument",
                code=ProblemCode.PARSE_FAILED,
            )
        return document

    # -- storage -------------------------------------------------------------------------

    def _get(self, sha256: str, handler: FileIOHandler) -> ParsedDocument | MediaError | None:
        name = self.file_name(sha256, handler)
        with self._lock:
            if name in self._memory:
                self._memory.move_to_end(name)
                return self._memory[name]
        if self.directory is None:
            return None
        try:
            record = json.loads(self._read(name, touch=True).decode("utf-8"))
            result = self._decode(record, sha256, handler)
        except (OSError, ValueError, KeyError, TypeError, ValidationError):
            return None  # missing or damaged: parse again
        if result is not None:
            self._remember(name, result)
        return result

    def _decode(
        self, record: dict[str, object], sha256: str, handler: FileIOHandler
    ) -> ParsedDocument | MediaError | None:
        identity = (record["format"], record["sha256"], record["handler"], record["version"])
        if identity != (CACHE_FORMAT, sha256, handler.name, handler_version(handler)):
            return None
        error = record.get("error")
        if isinstance(error, dict):
            return MediaError(str(error["message"]), code=str(error["code"]))
        return ParsedDocument.model_validate(record["document"])

    def _put(
        self, sha256: str, handler: FileIOHandler, result: ParsedDocument | MediaError
    ) -> None:
        if isinstance(result, MediaError) and result.code in _UNCACHED_CODES:
            return
        name = self.file_name(sha256, handler)
        self._remember(name, result)
        if self.directory is None:
            return
        record: dict[str, object] = {
            "format": CACHE_FORMAT,
            "sha256": sha256,
            "handler": handler.name,
            "version": handler_version(handler),
        }
        try:
            if isinstance(result, MediaError):
                record["error"] = {"code": result.code, "message": str(result)}
            else:
                record["document"] = result.model_dump(mode="json")
            text = json.dumps(record, ensure_ascii=False)
        except (TypeError, ValueError):
            return  # metadata that is not JSON: kept in memory only
        self._write(name, text)

    def _open_folder(self) -> int | None:
        return self._folder() if self._folder is not None else None

    def _read(self, name: str, *, touch: bool = False) -> bytes:
        """The entry's bytes; ``touch`` marks it used now (eviction deletes the oldest)."""
        assert self.directory is not None
        folder = self._open_folder()
        try:
            where = name if folder is not None else os.path.join(self.directory, name)
            fd = os.open(where, os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=folder)
            try:
                data = b"".join(iter(lambda: os.read(fd, 1 << 20), b""))
                if touch:
                    with contextlib.suppress(OSError):  # a read-only cache still reads
                        os.utime(fd)
                return data
            finally:
                os.close(fd)
        finally:
            if folder is not None:
                os.close(folder)

    def _write(self, name: str, text: str) -> None:
        assert self.directory is not None
        temp = f".{name}.{uuid.uuid4().hex[:12]}.part"
        try:
            folder = self._open_folder()
        except OSError:
            return
        path = os.fspath(self.directory)
        where = (lambda n: n) if folder is not None else (lambda n: os.path.join(path, n))
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC
        try:
            fd = os.open(where(temp), flags, 0o666, dir_fd=folder)
            try:
                data = text.encode("utf-8")
                while data:
                    data = data[os.write(fd, data) :]
            finally:
                os.close(fd)
            os.replace(where(temp), where(name), src_dir_fd=folder, dst_dir_fd=folder)
            self._grew(folder, path, len(text.encode("utf-8")))
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(where(temp), dir_fd=folder)
        finally:
            if folder is not None:
                os.close(folder)

    # -- bounds ---------------------------------------------------------------------------

    def _entries(self, folder: int | None, path: str) -> list[tuple[int, int, str]]:
        """(last use in ns, size, name) of every entry on disk."""
        found = []
        with os.scandir(folder if folder is not None else path) as listing:
            for entry in listing:
                if not entry.name.endswith(".json") or entry.name.startswith("."):
                    continue
                with contextlib.suppress(OSError):
                    st = entry.stat(follow_symlinks=False)
                    found.append((st.st_mtime_ns, st.st_size, entry.name))
        return found

    def _grew(self, folder: int | None, path: str, size: int) -> None:
        """Count an entry written (the disk is counted once); trim past a bound."""
        with self._lock:
            if self._usage is None:
                entries = self._entries(folder, path)
                self._usage = (sum(e[1] for e in entries), len(entries))
            else:
                self._usage = (self._usage[0] + size, self._usage[1] + 1)
            used, files = self._usage
            if used <= self.max_bytes and files <= self.max_files:
                return
            entries = sorted(self._entries(folder, path))
            used, files = sum(e[1] for e in entries), len(entries)
            keep_bytes = self.max_bytes * _KEPT_AFTER_TRIM
            keep_files = self.max_files * _KEPT_AFTER_TRIM
            for _, entry_size, name in entries:
                if used <= keep_bytes and files <= keep_files:
                    break
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(
                        name if folder is not None else os.path.join(path, name), dir_fd=folder
                    )
                    self.evicted += 1
                used, files = used - entry_size, files - 1
            self._usage = (used, files)

    def _remember(self, name: str, result: ParsedDocument | MediaError) -> None:
        with self._lock:
            self._memory[name] = result
            self._memory.move_to_end(name)
            while len(self._memory) > _MEMORY_ENTRIES:
                self._memory.popitem(last=False)
