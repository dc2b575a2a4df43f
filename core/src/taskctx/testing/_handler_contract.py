"""FileIOHandlerContract: the rules every FileIOHandler keeps, as a pytest base class."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import pytest

from taskctx.codes import ProblemCode
from taskctx.errors import MediaError
from taskctx.hookspecs import hookimpl
from taskctx.model import ContextRef, Representation
from taskctx.plugins import PluginHost
from taskctx.protocols import FileIOHandler, ParsedDocument, protocol_shape, scope_kind

__all__ = ["FileIOHandlerContract"]

_CONTROL_CHARACTERS = frozenset(
    chr(code) for code in (*range(0x20), 0x7F, *range(0x80, 0xA0)) if code not in (0x09, 0x0A)
)
_GARBAGE: dict[str, bytes] = {
    "text": b"not a document",
    "empty": b"",
    "random": b"".join(hashlib.sha256(bytes([n])).digest() for n in range(128)),
}
_GARBAGE_CODES = frozenset({ProblemCode.PARSE_FAILED, ProblemCode.NO_TEXT, ProblemCode.ENCRYPTED})


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

    Set ``covers`` to the handler's name (``covers = "pdf"``): the kit then checks the
    fixture's handler has that name, and a meta-test can find which handlers are tested.
    """

    covers: str | None = None

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
        for attr in (m.name for m in protocol_shape(FileIOHandler) if m.returns == tuple[str, ...]):
            value = getattr(handler, attr)
            assert isinstance(value, tuple), f"{attr} must be a tuple"
            assert value, f"{attr} must not be empty"
            assert all(isinstance(v, str) and v for v in value), f"{attr} holds non-empty str"
        assert all("/" in m for m in handler.media_types)
        assert callable(handler.parse)
        version = getattr(handler, "version", None)
        assert version is None or (isinstance(version, str) and version)

    def test_covers_the_declared_handler(self, handler: FileIOHandler) -> None:
        """A subclass that declares ``covers`` tests the handler of exactly that name."""
        if self.covers is None:
            pytest.skip("the subclass declares no `covers` handler name")
        assert handler.name == self.covers

    def test_registers_and_is_found(
        self, handler: FileIOHandler, sample: tuple[bytes, str]
    ) -> None:
        """The handler passes the host's registration checks and the host finds it for
        the sample's path and for each media type it lists."""

        class Plugin:
            @hookimpl
            def register_file_io_handlers(self, register: Callable[[Any], None]) -> None:
                register(handler)

        host = PluginHost(allow=[], load_entrypoints=False)
        host.register(Plugin(), name="contract")
        record = host.plugins()[-1]
        assert (record.status, record.error) == ("loaded", None)
        assert host.file_io_handler_for(path=sample[1]) is handler
        for media_type in handler.media_types:
            assert host.file_io_handler_for(media_type=media_type) is handler, media_type

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

    def test_section_scopes_are_ref_scopes(
        self, handler: FileIOHandler, sample: tuple[bytes, str]
    ) -> None:
        """Each section scope is ``<kind>:<value>`` (scoped readers are matched by the kind)
        and survives the canonical ref round trip ``ContextRef.parse(str(ref))``."""
        parsed = self._parse(handler, sample)
        for section in parsed.sections:
            assert ":" in section.scope, f"scope {section.scope!r} has no '<kind>:'"
            assert scope_kind(section.scope), f"scope {section.scope!r} has an empty kind"
            ref = ContextRef(binding="contract", path=sample[1], scope=section.scope)
            assert ContextRef.parse(str(ref)) == ref, f"{ref!r} does not round-trip"

    def test_suffix_case_does_not_matter(
        self, handler: FileIOHandler, sample: tuple[bytes, str]
    ) -> None:
        """The host matches suffixes case-insensitively, so ``REPORT.PDF`` parses to the same
        text and sections as ``report.pdf``."""
        data, path = sample
        directory, _, name = path.rpartition("/")
        shouted = f"{directory}/{name.upper()}" if directory else name.upper()
        lower = self._parse(handler, sample)
        upper = self._parse(handler, (data, shouted))
        assert (upper.text, upper.sections) == (lower.text, lower.sections)

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
