"""The one media classification every source and the reader use (DESIGN rule 5).

Plain text and source-parsed text enter packages. Documents (PDF, Office, OpenDocument)
go through a FileIOHandler, or stay reference only. Images, archives, executables,
audio, video and unknown bytes are reference only and are never guessed to be text.

Signals are the path (well-known name or suffix), a declared media type, a
``content_kind`` claim and the first bytes. When they disagree the decision closes
towards non-text or unknown, never towards text; a magic number in the bytes wins over
every name or claim. Each fact lives in one table below.
"""

from __future__ import annotations

import codecs
import mimetypes
import struct
import zlib
from collections.abc import Callable, Mapping
from typing import NamedTuple

from pydantic import model_validator

from taskctx._media_tables import (
    _ALIASES,
    _B,
    _CONTAINERS,
    _D,
    _MAGIC,
    _MEDIA_TYPES,
    _SUFFIXES,
    _T,
    _TEXT_NAMES,
    _TEXT_STRUCTURED_SUFFIXES,
    _U,
    OCTET_STREAM,
    MediaClass,
    _Magic,
)
from taskctx.errors import MediaError
from taskctx.model import FrozenModel, Representation

__all__ = [
    "ATTACHABLE_IMAGE_MEDIA_TYPES",
    "OCTET_STREAM",
    "ImageInfo",
    "MediaClass",
    "MediaDecision",
    "classify",
    "clean_text",
    "decode_text",
    "guess_media_type",
    "is_hidden_path",
    "normalize_media_type",
    "sniff_image",
]


_HIDDEN_SEPARATORS = ("/", "\\")
_MIME_GUESSER = mimetypes.MimeTypes()  # built-in defaults only: no system files read


def normalize_media_type(media_type: str) -> str:
    """Lower-case a media type, drop parameters (``; charset=...``) and resolve aliases."""
    base = media_type.split(";", 1)[0].strip().lower()
    return _ALIASES.get(base, base)


def _class_of_media_type(media_type: str) -> MediaClass:
    """Class of a normalized media type from the tables; UNKNOWN when none says."""
    if media_type in _CLASS_BY_TYPE:
        return _CLASS_BY_TYPE[media_type]
    if "/" not in media_type:
        return _U
    major = media_type.split("/", 1)[0] + "/"
    if major != "text/" and major in _MEDIA_TYPES:
        return _MEDIA_TYPES[major]
    if major == "application/" and media_type.endswith(_TEXT_STRUCTURED_SUFFIXES):
        return _T
    return _MEDIA_TYPES.get(major, _U)


def _build_class_by_type() -> dict[str, MediaClass]:
    table: dict[str, MediaClass] = {}
    for media_type, media_class in _SUFFIXES.values():
        table[media_type] = media_class
    for key, media_class in _MEDIA_TYPES.items():
        if not key.endswith("/"):
            table[key] = media_class
    return table


_CLASS_BY_TYPE: Mapping[str, MediaClass] = _build_class_by_type()

ATTACHABLE_IMAGE_MEDIA_TYPES: frozenset[str] = frozenset(
    {"image/png", "image/jpeg", "image/gif", "image/webp"}
)
"""Raster image types :func:`sniff_image` validates; only these can become attachments."""


class MediaDecision(FrozenModel):
    """How one item enters a package: its best media type, class and the reasons why."""

    media_type: str
    media_class: MediaClass
    enters_as_text: bool
    needs_handler: bool
    reasons: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _flags_agree(self) -> MediaDecision:
        if self.enters_as_text != (self.media_class is MediaClass.TEXT):
            raise ValueError("enters_as_text must be True exactly for text")
        if self.needs_handler != (self.media_class is MediaClass.DOCUMENT):
            raise ValueError("needs_handler must be True exactly for documents")
        return self

    def representation(self, *, handler_available: bool = False) -> Representation:
        """TEXT for text, PARSED_TEXT for a document with a handler, else REFERENCE_ONLY."""
        if self.media_class is MediaClass.TEXT:
            return Representation.TEXT
        if self.media_class is MediaClass.DOCUMENT and handler_available:
            return Representation.PARSED_TEXT
        return Representation.REFERENCE_ONLY


class _Signal(NamedTuple):
    label: str
    media_type: str
    media_class: MediaClass


def _file_name(path: str) -> str:
    name = path
    for separator in _HIDDEN_SEPARATORS:
        name = name.rsplit(separator, 1)[-1]
    return name


def _suffix(name: str) -> str:
    stem = name.lstrip(".")
    if "." not in stem:
        return ""
    return stem.rsplit(".", 1)[1].lower()


def _path_signal(path: str) -> _Signal | None:
    """Signal of a path: well-known name, then the suffix table, then ``mimetypes``."""
    name = _file_name(path)
    if not name:
        return None
    known = _TEXT_NAMES.get(name.lower())
    if known is not None:
        return _Signal(f"file name {name!r}", known, _T)
    suffix = _suffix(name)
    if not suffix:
        return None
    entry = _SUFFIXES.get(suffix)
    if entry is not None:
        return _Signal(f"suffix '.{suffix}'", entry[0], entry[1])
    guessed = _guess_with_mimetypes(suffix)
    if guessed is None:
        return None
    media_class = _class_of_media_type(guessed)
    if media_class is _T and not guessed.startswith("text/"):
        media_class = _U  # the fallback only ever says text for text/* types
    return _Signal(f"suffix '.{suffix}' (mimetypes guess)", guessed, media_class)


def _guess_with_mimetypes(suffix: str) -> str | None:
    media_type, encoding = _MIME_GUESSER.guess_type(f"file.{suffix}", strict=False)
    if encoding is not None:
        return OCTET_STREAM  # compressed: never text
    return normalize_media_type(media_type) if media_type else None


def guess_media_type(path: str) -> str | None:
    """Best media type for a path from its name or suffix; None when nothing is known."""
    signal = _path_signal(path)
    return signal.media_type if signal is not None else None


def _magic_of(data: bytes) -> _Magic | None:
    for magic in _MAGIC:
        if all(data[offset : offset + len(part)] == part for offset, part in magic.parts):
            return magic
    return None


def _sniff_text(head: bytes) -> _Signal:
    """TEXT when the leading bytes are UTF-8 without NUL, BINARY otherwise."""
    nul = head.find(b"\x00")
    if nul >= 0:
        return _Signal(f"leading bytes (NUL byte at offset {nul})", OCTET_STREAM, _B)
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    try:
        decoder.decode(head, final=False)  # the head may end inside a character
    except UnicodeDecodeError as exc:
        return _Signal(f"leading bytes (invalid UTF-8 at offset {exc.start})", OCTET_STREAM, _B)
    label = "leading bytes (empty)" if not head else "leading bytes (UTF-8 text)"
    return _Signal(label, "text/plain", _T)


def _merge_metadata(
    path_signal: _Signal | None, declared: _Signal | None, reasons: list[str]
) -> _Signal | None:
    """Combine suffix and declared type; disagreement closes to non-text or unknown."""
    if path_signal is None or declared is None:
        return path_signal or declared
    if path_signal.media_class is declared.media_class:
        if path_signal.media_type == declared.media_type or declared.media_type == OCTET_STREAM:
            return path_signal
        if declared.media_class is _T and declared.media_type == "text/plain":
            return path_signal  # the suffix is more specific
        reasons.append(
            f"{path_signal.label} says {path_signal.media_type} but the "
            f"{declared.label} wins within the same class"
        )
        return declared
    if path_signal.media_class is _T:
        reasons.append(f"{path_signal.label} says text but {declared.label} does not")
        return declared
    if declared.media_class is _T:
        reasons.append(f"{declared.label} says text but {path_signal.label} does not")
        return path_signal
    if declared.media_type == OCTET_STREAM:
        return path_signal  # a generic binary type defers to a specific non-text suffix
    reasons.append(
        f"{path_signal.label} ({path_signal.media_class.value}) conflicts with "
        f"{declared.label} ({declared.media_class.value})"
    )
    return _Signal("conflicting signals", OCTET_STREAM, _U)


def _decide(signal: _Signal, reasons: list[str]) -> MediaDecision:
    return MediaDecision(
        media_type=signal.media_type,
        media_class=signal.media_class,
        enters_as_text=signal.media_class is _T,
        needs_handler=signal.media_class is _D,
        reasons=(f"{signal.label}: {signal.media_type} is {signal.media_class.value}", *reasons),
    )


def _decide_by_magic(
    magic: _Magic,
    metadata: tuple[_Signal | None, ...],
    content_kind: str | None,
    reasons: list[str],
) -> MediaDecision:
    """The bytes carry a signature: it wins; a container may keep a compatible type."""
    signal = _Signal(f"leading bytes ({magic.name} signature)", magic.media_type, magic.media_class)
    members = _CONTAINERS.get(magic.media_type, frozenset())
    for candidate in metadata:
        if (
            candidate is not None
            and candidate.media_type != magic.media_type
            and candidate.media_type in members
        ):
            signal = _Signal(
                f"{candidate.label} ({magic.name} container)",
                candidate.media_type,
                candidate.media_class,
            )
            break
    for candidate in metadata:
        if candidate is None or candidate.media_type in (
            signal.media_type,
            magic.media_type,
            OCTET_STREAM,
        ):
            continue
        reasons.append(
            f"{candidate.label} says {candidate.media_type} but the bytes are "
            f"{magic.name}; the bytes win"
        )
    if content_kind == "text":
        reasons.append(f"content_kind='text' claim ignored: the bytes are {magic.name}")
    return _decide(signal, reasons)


def classify(
    path: str | None = None,
    media_type: str | None = None,
    *,
    content_kind: str | None = None,
    head: bytes | None = None,
) -> MediaDecision:
    """Decide how an item enters a package from its path, media type, claim and bytes.

    ``content_kind`` is ``"text"``, ``"binary"`` or None; a text claim counts only when
    no suffix, media type or byte says otherwise. ``head`` is the first bytes (or all).
    """
    if content_kind not in (None, "text", "binary"):
        raise ValueError(f"content_kind must be 'text', 'binary' or None, not {content_kind!r}")
    reasons: list[str] = []
    path_signal = _path_signal(path) if path else None
    declared: _Signal | None = None
    if media_type is not None and media_type.strip():
        normalized = normalize_media_type(media_type)
        declared = _Signal(
            f"declared media type {normalized!r}", normalized, _class_of_media_type(normalized)
        )
    if head is not None:
        magic = _magic_of(head)
        if magic is not None:
            return _decide_by_magic(magic, (declared, path_signal), content_kind, reasons)
    sniffed = _sniff_text(head) if head is not None else None
    metadata = _merge_metadata(path_signal, declared, reasons)

    if metadata is None:
        if sniffed is not None:
            if sniffed.media_class is _B and content_kind == "text":
                reasons.append(f"content_kind='text' claim ignored: {sniffed.label}")
            if sniffed.media_class is _T and content_kind == "binary":
                reasons.append("content_kind='binary' claim closes the text sniff")
                return _decide(_Signal("content_kind claim", OCTET_STREAM, _B), reasons)
            return _decide(sniffed, reasons)
        if content_kind == "text":
            reasons.append("nothing contradicts the text claim")
            return _decide(_Signal("content_kind='text' claim", "text/plain", _T), reasons)
        if content_kind == "binary":
            return _decide(_Signal("content_kind='binary' claim", OCTET_STREAM, _B), reasons)
        reasons.append("no known name, suffix, media type or bytes")
        return _decide(_Signal("no signal", OCTET_STREAM, _U), reasons)

    if metadata.media_class is _T:
        if sniffed is not None and sniffed.media_class is _B:
            reasons.append(f"{metadata.label} says text but the bytes are not text")
            return _decide(sniffed, reasons)
        if content_kind == "binary":
            reasons.append(f"content_kind='binary' claim closes {metadata.label}")
            return _decide(_Signal("content_kind claim", OCTET_STREAM, _B), reasons)
        return _decide(metadata, reasons)

    if content_kind == "text":
        reasons.append(
            f"content_kind='text' claim ignored: {metadata.label} is {metadata.media_class.value}"
        )
    if metadata.media_class is _U and (
        content_kind == "binary" or (sniffed is not None and sniffed.media_class is _B)
    ):
        return _decide(_Signal(metadata.label, metadata.media_type, _B), reasons)
    return _decide(metadata, reasons)


def is_hidden_path(path: str) -> bool:
    """Whether any component of ``path`` is a hidden name (starts with ``.``).

    ``.`` and ``..`` are not hidden names; ``/`` and ``\\`` both separate components.
    """
    normalized = path.replace("\\", "/")
    return any(part.startswith(".") and part not in (".", "..") for part in normalized.split("/"))


class ImageInfo(FrozenModel):
    """A validated raster image: its real media type and pixel dimensions."""

    media_type: str
    width: int
    height: int


def _need(data: bytes, size: int, what: str) -> None:
    if len(data) < size:
        raise MediaError(f"truncated {what}: need {size} bytes, got {len(data)}")


_PNG_BIT_DEPTHS: dict[int, frozenset[int]] = {
    0: frozenset({1, 2, 4, 8, 16}),
    2: frozenset({8, 16}),
    3: frozenset({1, 2, 4, 8}),
    4: frozenset({8, 16}),
    6: frozenset({8, 16}),
}


def _png_size(data: bytes) -> tuple[int, int]:
    _need(data, 33, "PNG header (signature and IHDR chunk)")
    length, chunk_type = struct.unpack(">I4s", data[8:16])
    if chunk_type != b"IHDR" or length != 13:
        raise MediaError("invalid PNG: the first chunk is not a 13-byte IHDR")
    body = data[16:29]
    (crc,) = struct.unpack(">I", data[29:33])
    if zlib.crc32(data[12:29]) != crc:
        raise MediaError("invalid PNG: IHDR checksum does not match")
    width, height, depth, color, compression, filter_method, interlace = struct.unpack(
        ">IIBBBBB", body
    )
    if width > 0x7FFFFFFF or height > 0x7FFFFFFF:
        raise MediaError(f"invalid PNG: dimensions {width}x{height} exceed 2^31-1")
    if depth not in _PNG_BIT_DEPTHS.get(color, frozenset()):
        raise MediaError(f"invalid PNG: bit depth {depth} with colour type {color}")
    if compression != 0 or filter_method != 0 or interlace not in (0, 1):
        raise MediaError("invalid PNG: unknown compression, filter or interlace method")
    return width, height


def _gif_size(data: bytes) -> tuple[int, int]:
    _need(data, 13, "GIF header (signature and logical screen descriptor)")
    width, height = struct.unpack("<HH", data[6:10])
    return int(width), int(height)


_JPEG_SOF = frozenset(
    {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}
)


def _jpeg_size(data: bytes) -> tuple[int, int]:
    pos = 2
    size = len(data)
    while True:
        if pos >= size:
            raise MediaError("truncated JPEG: no frame header (SOF) before the data ended")
        if data[pos] != 0xFF:
            raise MediaError(f"invalid JPEG: expected a marker at byte offset {pos}")
        while pos < size and data[pos] == 0xFF:
            pos += 1  # fill bytes
        if pos >= size:
            raise MediaError("truncated JPEG: data ends inside a marker")
        marker = data[pos]
        pos += 1
        if 0xD0 <= marker <= 0xD7 or marker == 0x01:
            continue  # standalone markers carry no length
        if marker in (0x00, 0xD8, 0xD9, 0xDA):
            raise MediaError(
                f"invalid JPEG: marker 0xFF{marker:02X} at byte offset {pos - 2} "
                "before a frame header (SOF)"
            )
        if pos + 2 > size:
            raise MediaError("truncated JPEG: data ends inside a segment length")
        (length,) = struct.unpack(">H", data[pos : pos + 2])
        if length < 2:
            raise MediaError(f"invalid JPEG: segment length {length} at byte offset {pos}")
        if marker in _JPEG_SOF:
            if length < 8 or pos + 7 > size:
                raise MediaError("truncated JPEG: frame header (SOF) is incomplete")
            height, width = struct.unpack(">HH", data[pos + 3 : pos + 7])
            return int(width), int(height)
        pos += length


def _webp_size(data: bytes) -> tuple[int, int]:
    _need(data, 20, "WebP header")
    fourcc = data[12:16]
    (chunk_size,) = struct.unpack("<I", data[16:20])
    if fourcc == b"VP8X":
        _need(data, 30, "WebP VP8X header")
        if chunk_size < 10:
            raise MediaError(f"invalid WebP: VP8X chunk of {chunk_size} bytes")
        width = int.from_bytes(data[24:27], "little") + 1
        height = int.from_bytes(data[27:30], "little") + 1
        return width, height
    if fourcc == b"VP8L":
        _need(data, 25, "WebP VP8L header")
        if chunk_size < 5 or data[20] != 0x2F:
            raise MediaError("invalid WebP: bad VP8L signature")
        (bits,) = struct.unpack("<I", data[21:25])
        if bits >> 29:
            raise MediaError("invalid WebP: unknown VP8L version")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if fourcc == b"VP8 ":
        _need(data, 30, "WebP VP8 header")
        if chunk_size < 10 or data[23:26] != b"\x9d\x01\x2a" or data[20] & 1:
            raise MediaError("invalid WebP: VP8 data does not start with a key frame")
        width, height = struct.unpack("<HH", data[26:30])
        return int(width) & 0x3FFF, int(height) & 0x3FFF
    raise MediaError(f"invalid WebP: unknown first chunk {fourcc!r}")


# --- Table: raster image type -> header parser (keys equal ATTACHABLE_IMAGE_MEDIA_TYPES).
_IMAGE_PARSERS: dict[str, Callable[[bytes], tuple[int, int]]] = {
    "image/png": _png_size,
    "image/gif": _gif_size,
    "image/jpeg": _jpeg_size,
    "image/webp": _webp_size,
}


def sniff_image(data: bytes, declared_media_type: str | None = None) -> ImageInfo:
    """Parse a PNG, GIF, JPEG or WebP header; raise MediaError unless it is a valid image.

    Empty data, an unknown or truncated header, a zero dimension, or a declared media
    type that disagrees with the bytes all raise :class:`~taskctx.errors.MediaError`.
    """
    if not data:
        raise MediaError("empty image data")
    magic = _magic_of(data)
    if magic is None or magic.media_type not in _IMAGE_PARSERS:
        found = f"{magic.name} data" if magic is not None else f"unrecognised bytes {data[:8]!r}"
        raise MediaError(f"not a PNG, JPEG, GIF or WebP image: {found}")
    if declared_media_type is not None:
        declared = normalize_media_type(declared_media_type)
        if declared != magic.media_type:
            raise MediaError(
                f"declared media type {declared!r} does not match the bytes ({magic.media_type})"
            )
    width, height = _IMAGE_PARSERS[magic.media_type](data)
    if width <= 0 or height <= 0:
        raise MediaError(f"{magic.name} image has a zero dimension ({width}x{height})")
    return ImageInfo(media_type=magic.media_type, width=width, height=height)


_CONTROL_CHARACTERS: dict[int, None] = {
    code: None for code in (*range(0x20), 0x7F, *range(0x80, 0xA0)) if code not in (0x09, 0x0A)
}


def clean_text(text: str) -> str:
    """Normalize newlines to ``\\n``, drop a leading BOM and C0/C1 controls but tab/newline."""
    if text.startswith("\ufeff"):
        text = text[1:]
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.translate(_CONTROL_CHARACTERS)


def decode_text(data: bytes) -> str:
    """Decode strict UTF-8, dropping a leading BOM; MediaError names a bad byte offset."""
    start = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        return data[start:].decode("utf-8", errors="strict")
    except UnicodeDecodeError as exc:
        offset = start + exc.start
        raise MediaError(
            f"invalid UTF-8 at byte offset {offset}: {exc.reason} (byte 0x{data[offset]:02X})"
        ) from None
