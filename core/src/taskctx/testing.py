"""The conformance kit for third-party sources, and an in-memory reference source.

Subclass :class:`SourceContract` in a test module and provide a ``source`` fixture;
pytest then runs every protocol rule against it::

    class TestMySource(SourceContract):
        @pytest.fixture
        def source(self, tmp_path) -> ContextSource:
            return MySource(tmp_path)

:class:`MemorySource` is a complete source held in memory, with a change journal and
optionally the history to serve pinned revisions; it is handy in tests and examples.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Coroutine, Mapping
from typing import Any, TypeVar

import pytest

from taskctx.errors import NotFoundError
from taskctx.media import classify, guess_media_type
from taskctx.model import (
    ContextRef,
    DescriptorPage,
    EnumerationRequest,
    ExactRead,
    SourceDescriptor,
)
from taskctx.protocols import ChangeSet, ContextSource
from taskctx.sections import markdown_sections

__all__ = ["MemorySource", "SourceContract", "sha256_of"]

T = TypeVar("T")


def sha256_of(content: str | bytes) -> str:
    """``sha256:<hex>`` of text (UTF-8) or bytes: the digest format every source uses."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coroutine)


class MemorySource:
    """A source of named items held in memory; every change bumps the revision.

    ``keep_history=True`` keeps every revision so readers continue a pinned snapshot
    after changes (like a record store); otherwise old revisions are gone.
    """

    kind = "memory"

    def __init__(
        self,
        items: Mapping[str, str | bytes] | None = None,
        *,
        identity: str | None = None,
        keep_history: bool = False,
        page_size: int = 1000,
    ) -> None:
        self.identity = identity
        self.serves_pinned_revisions = keep_history
        self._page_size = page_size
        self._revision = 0
        self._items: dict[str, str | bytes] = {}
        self._history: dict[int, dict[str, str | bytes]] = {}
        self._journal: list[tuple[int, str]] = []
        self._keep_history = keep_history
        self.enumerations = 0
        self.reads = 0
        for path, content in (items or {}).items():
            self._items[path] = content
        self._commit_snapshot()

    def _commit_snapshot(self) -> None:
        if self._keep_history:
            self._history[self._revision] = dict(self._items)

    def put(self, path: str, content: str | bytes) -> None:
        """Add or replace one item (a new revision)."""
        self._items[path] = content
        self._revision += 1
        self._journal.append((self._revision, path))
        self._commit_snapshot()

    def delete(self, path: str) -> None:
        """Remove one item (a new revision)."""
        del self._items[path]
        self._revision += 1
        self._journal.append((self._revision, path))
        self._commit_snapshot()

    def _view(self, revision: str | None) -> tuple[int, dict[str, str | bytes]]:
        if revision is None or revision == f"r{self._revision}":
            return self._revision, self._items
        number = int(revision[1:]) if revision.startswith("r") and revision[1:].isdigit() else -1
        if number in self._history:
            return number, self._history[number]
        return self._revision, self._items  # cannot serve it: the page says which it is

    def _descriptor(self, path: str, content: str | bytes) -> SourceDescriptor:
        text = content if isinstance(content, str) else None
        media = classify(
            path,
            guess_media_type(path) if text is None else None,
            content_kind="text" if text is not None else None,
            head=content[:512] if isinstance(content, bytes) else None,
        )
        return SourceDescriptor(
            path=path,
            title=path.rsplit("/", 1)[-1],
            media_type=media.media_type,
            size=len(content.encode() if isinstance(content, str) else content),
            chars=len(text) if text is not None else None,
            content_version=sha256_of(content),
            sections=markdown_sections(text) if text is not None else (),
        )

    async def async_revision(self) -> str:
        """``r<N>``: the number of changes so far."""
        return f"r{self._revision}"

    async def async_enumerate_descriptors(self, request: EnumerationRequest) -> DescriptorPage:
        """Items in path order, ``page_size`` at a time; the cursor is an offset."""
        self.enumerations += 1
        number, items = self._view(request.revision)
        paths = sorted(
            p for p in items if request.path_prefix is None or p.startswith(request.path_prefix)
        )
        start = int(request.cursor) if request.cursor else 0
        size = min(request.page_size, self._page_size)
        chunk = paths[start : start + size]
        end = start + len(chunk)
        return DescriptorPage(
            descriptors=tuple(self._descriptor(p, items[p]) for p in chunk),
            revision=f"r{number}",
            next_cursor=str(end) if end < len(paths) else None,
            total=len(paths),
        )

    async def async_read_exact(self, ref: ContextRef, limit: int | None = None) -> ExactRead:
        """The item's text (cut at ``limit`` characters) or bytes, with the full digest."""
        self.reads += 1
        items = self._items
        if ref.version is not None and self._keep_history:
            for snapshot in (self._items, *reversed(self._history.values())):
                content = snapshot.get(ref.path)
                if content is not None and sha256_of(content) == ref.version:
                    items = snapshot
                    break
        content = items.get(ref.path)
        if content is None:
            raise NotFoundError(f"memory source has no item {ref.path!r}")
        descriptor = self._descriptor(ref.path, content)
        if isinstance(content, bytes):
            return ExactRead(
                path=ref.path,
                data=content,
                media_type=descriptor.media_type,
                digest=sha256_of(content),
                content_version=sha256_of(content),
            )
        return ExactRead.from_text(
            ref.path,
            content,
            limit,
            media_type=descriptor.media_type,
            content_version=sha256_of(content),
            sections=descriptor.sections,
        )

    async def async_changes(self, since: str) -> ChangeSet | None:
        """What changed since ``since``, from the journal (None if unknown)."""
        if not since.startswith("r") or not since[1:].isdigit():
            return None
        start = int(since[1:])
        touched = sorted({path for number, path in self._journal if number > start})
        upserts = tuple(self._descriptor(p, self._items[p]) for p in touched if p in self._items)
        deletes = tuple((p, None) for p in touched if p not in self._items)
        return ChangeSet(
            since=since, revision=f"r{self._revision}", upserts=upserts, deletes=deletes
        )


class SourceContract:
    """The protocol rules every ContextSource keeps. Provide a ``source`` fixture."""

    max_pages = 100_000

    @pytest.fixture
    def source(self) -> ContextSource:
        """Override: return the source under test, holding at least two text items."""
        raise NotImplementedError("subclass SourceContract and define a `source` fixture")

    def _all(self, source: ContextSource, page_size: int = 500) -> list[DescriptorPage]:
        pages: list[DescriptorPage] = []
        cursor: str | None = None
        for _ in range(self.max_pages):
            page = _run(
                source.async_enumerate_descriptors(
                    EnumerationRequest(cursor=cursor, page_size=page_size)
                )
            )
            pages.append(page)
            if page.next_cursor is None:
                return pages
            assert page.next_cursor != cursor, "cursor did not advance"
            cursor = page.next_cursor
        raise AssertionError("enumeration did not end")

    def _text_descriptors(self, source: ContextSource) -> list[SourceDescriptor]:
        found = []
        for page in self._all(source):
            for descriptor in page.descriptors:
                if descriptor.scope is not None or descriptor.chars == 0:
                    continue
                ref = ContextRef(binding="contract", path=descriptor.path)
                read = _run(source.async_read_exact(ref, None))
                if read.text is not None and len(read.text) > 1:
                    found.append(descriptor)
        assert found, "the source fixture must hold at least one text item of 2+ characters"
        return found

    def test_kind_is_a_name(self, source: ContextSource) -> None:
        """The source names its kind."""
        assert isinstance(source.kind, str)
        assert source.kind

    def test_revision_is_stable_while_nothing_changes(self, source: ContextSource) -> None:
        """Two revision calls with no change in between agree."""
        assert _run(source.async_revision()) == _run(source.async_revision())

    def test_pages_carry_the_revision(self, source: ContextSource) -> None:
        """Every descriptor page names the revision it was taken at, the current one."""
        revision = _run(source.async_revision())
        for page in self._all(source):
            assert page.revision == revision

    def test_cursors_advance_and_end(self, source: ContextSource) -> None:
        """Paging one descriptor at a time visits each descriptor once and ends."""
        whole = [d.key for page in self._all(source) for d in page.descriptors]
        paged = [d.key for page in self._all(source, page_size=1) for d in page.descriptors]
        assert paged == whole
        assert len(set(paged)) == len(paged), "a descriptor was enumerated twice"

    def test_exact_reads_match_ref_and_digest(self, source: ContextSource) -> None:
        """An exact read returns the ref's path and scope, the digest of its content."""
        for descriptor in self._text_descriptors(source):
            ref = ContextRef(binding="contract", path=descriptor.path)
            read = _run(source.async_read_exact(ref, None))
            assert (read.path, read.scope) == (descriptor.path, None)
            assert read.complete
            assert read.text is not None
            assert read.digest == sha256_of(read.text)
            assert read.chars_total in (None, len(read.text))
            if read.content_version is not None:
                assert read.content_version == descriptor.content_version

    def test_bounded_reads_are_honoured(self, source: ContextSource) -> None:
        """A read with a limit returns at most that many characters and says it is cut."""
        for descriptor in self._text_descriptors(source):
            ref = ContextRef(binding="contract", path=descriptor.path)
            whole = _run(source.async_read_exact(ref, None))
            cut = _run(source.async_read_exact(ref, 1))
            assert cut.text is not None
            assert len(cut.text) <= 1
            assert cut.text == (whole.text or "")[:1]
            assert cut.complete is False
            assert cut.digest == whole.digest, "the digest is of the whole content"

    def test_unknown_ref_raises_not_found(self, source: ContextSource) -> None:
        """Reading a ref the source does not hold raises NotFoundError."""
        ref = ContextRef(binding="contract", path="no/such/item-7f3a9c.txt")
        with pytest.raises(NotFoundError):
            _run(source.async_read_exact(ref, None))


# --- FileIOHandler conformance kit --------------------------------------------------

from taskctx.errors import MediaError  # noqa: E402
from taskctx.model import Representation  # noqa: E402
from taskctx.protocols import FileIOHandler, ParsedDocument  # noqa: E402

__all__ += ["FileIOHandlerContract"]

_CONTROL_CHARACTERS = frozenset(
    chr(code) for code in (*range(0x20), 0x7F, *range(0x80, 0xA0)) if code not in (0x09, 0x0A)
)
_GARBAGE: dict[str, bytes] = {
    "text": b"not a document",
    "empty": b"",
    "random": b"".join(hashlib.sha256(bytes([n])).digest() for n in range(128)),
}
_GARBAGE_CODES = frozenset({"parse_failed", "no_text", "encrypted"})


class FileIOHandlerContract:
    """The rules every FileIOHandler keeps. Provide ``handler`` and ``sample`` fixtures.

    ``sample`` is ``(data, path)`` of a valid document holding some text::

        class TestMyHandler(FileIOHandlerContract):
            @pytest.fixture
            def handler(self) -> FileIOHandler:
                return MyHandler()

            @pytest.fixture
            def sample(self) -> tuple[bytes, str]:
                return Path("tests/data/report.ext").read_bytes(), "report.ext"
    """

    @pytest.fixture
    def handler(self) -> FileIOHandler:
        """Override: return the handler under test."""
        raise NotImplementedError("subclass FileIOHandlerContract and define a `handler` fixture")

    @pytest.fixture
    def sample(self) -> tuple[bytes, str]:
        """Override: return ``(data, path)`` of a valid document with text."""
        raise NotImplementedError("subclass FileIOHandlerContract and define a `sample` fixture")

    def _parse(self, handler: FileIOHandler, sample: tuple[bytes, str]) -> ParsedDocument:
        data, path = sample
        parsed = handler.parse(data, path)
        assert isinstance(parsed, ParsedDocument), f"parse returned {type(parsed).__name__}"
        return parsed

    def test_attributes_are_typed(self, handler: FileIOHandler) -> None:
        """name, suffixes, media_types, parse and the optional version have their types."""
        assert isinstance(handler, FileIOHandler)
        assert isinstance(handler.name, str)
        assert handler.name
        for attr in ("suffixes", "media_types"):
            value = getattr(handler, attr)
            assert isinstance(value, tuple), f"{attr} must be a tuple"
            assert value, f"{attr} must not be empty"
            assert all(isinstance(v, str) and v for v in value), f"{attr} holds non-empty str"
        assert all("/" in m for m in handler.media_types)
        assert callable(handler.parse)
        version = getattr(handler, "version", None)
        assert version is None or (isinstance(version, str) and version)

    def test_sample_has_a_handled_suffix(
        self, handler: FileIOHandler, sample: tuple[bytes, str]
    ) -> None:
        """The sample's path ends with one of the suffixes the handler claims."""
        name = sample[1].lower()
        assert any(name.endswith("." + s.lower().lstrip(".")) for s in handler.suffixes)

    def test_parse_returns_parsed_text(
        self, handler: FileIOHandler, sample: tuple[bytes, str]
    ) -> None:
        """A valid document parses to non-empty parsed_text of a media type the handler lists."""
        parsed = self._parse(handler, sample)
        assert parsed.representation is Representation.PARSED_TEXT
        assert parsed.text.strip()
        assert parsed.media_type in handler.media_types

    def test_sections_slice_the_text_exactly(
        self, handler: FileIOHandler, sample: tuple[bytes, str]
    ) -> None:
        """Sections carry start/end/chars, are ordered, disjoint, and uniquely scoped."""
        parsed = self._parse(handler, sample)
        previous_end = 0
        for section in parsed.sections:
            assert section.start is not None, f"{section.scope}: no start offset"
            assert section.end is not None, f"{section.scope}: no end offset"
            assert previous_end <= section.start <= section.end <= len(parsed.text)
            assert section.chars in (None, section.end - section.start)
            assert section.scope
            assert section.title
            previous_end = section.end
        scopes = [section.scope for section in parsed.sections]
        assert len(set(scopes)) == len(scopes), "two sections share a scope"

    def test_text_has_no_control_characters(
        self, handler: FileIOHandler, sample: tuple[bytes, str]
    ) -> None:
        """Parsed text keeps newlines and tabs and holds no NUL or other control character."""
        parsed = self._parse(handler, sample)
        found = sorted({f"U+{ord(c):04X}" for c in parsed.text if c in _CONTROL_CHARACTERS})
        assert not found, f"control characters in parsed text: {found}"

    @pytest.mark.parametrize("garbage", sorted(_GARBAGE))
    def test_garbage_raises_media_error(self, handler: FileIOHandler, garbage: str) -> None:
        """Bytes that are no document raise MediaError with a code, never another exception."""
        suffix = handler.suffixes[0].lstrip(".")
        with pytest.raises(MediaError) as caught:
            handler.parse(_GARBAGE[garbage], f"garbage-{garbage}.{suffix}")
        assert caught.value.code in _GARBAGE_CODES
        assert f"garbage-{garbage}.{suffix}" in str(caught.value), "the message names the file"

    def test_parse_is_deterministic(
        self, handler: FileIOHandler, sample: tuple[bytes, str]
    ) -> None:
        """The same bytes parse to the same document, so parse caches can key on a digest."""
        assert self._parse(handler, sample) == self._parse(handler, sample)

    def test_result_round_trips_through_json(
        self, handler: FileIOHandler, sample: tuple[bytes, str]
    ) -> None:
        """The parsed document (metadata included) survives a JSON round trip for caches."""
        parsed = self._parse(handler, sample)
        assert ParsedDocument.model_validate_json(parsed.model_dump_json()) == parsed
