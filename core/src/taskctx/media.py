"""The one media classification every source and the reader use (DESIGN rule 5).

Plain text and source-parsed text enter packages. Documents (PDF, Office, OpenDocument)
go through a FileIOHandler, or stay reference only. Images, archives, executables,
audio, video and unknown bytes are reference only and are never guessed to be text.

Signals are the path (well-known name or suffix), a declared media type, a
``content_kind`` claim and the first bytes. When they disagree the decision closes
towards non-text or unknown, never towards text; a magic number in the bytes wins over
every name or claim. Each fact lives in one table below. Whether an image is valid
enough to become an attachment is :mod:`taskctx.images`' question.
"""

from __future__ import annotations

import codecs
import mimetypes
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, NamedTuple

from pydantic import model_validator

from taskctx._media_tables import (
    _ALIASES,
    _B,
    _CONTAINERS,
    _D,
    _MAGIC,
    _MAGIC_BY_LEAD,
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
from taskctx.codes import ProblemCode, Representation
from taskctx.descriptors import ExactRead, Problem
from taskctx.frozen import FrozenModel
from taskctx.text import clean_text, decode_text, text_nul

if TYPE_CHECKING:
    from taskctx.protocols import FileIOHandler

__all__ = [
    "HEAD_BYTES",
    "OCTET_STREAM",
    "MediaClass",
    "MediaDecision",
    "classify",
    "classify_bytes",
    "clean_text",
    "decode_text",
    "guess_media_type",
    "handler_for",
    "handler_missing",
    "handler_missing_message",
    "head_of",
    "is_hidden_path",
    "normalize_media_type",
    "read_mismatch",
    "text_nul",
]

HEAD_BYTES = 8192
"""How many leading bytes decide magic numbers and UTF-8 validity, for every caller."""


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
    for magic in _MAGIC_BY_LEAD[data[0]] if data else _MAGIC:  # runs for every file
        if all(data.startswith(part, offset) for offset, part in magic.parts):
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


def _decide_without_metadata(
    sniffed: _Signal | None, content_kind: str | None, reasons: list[str]
) -> MediaDecision:
    """No name, suffix or media type speaks: the text sniff, else the claim, decides."""
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
    if head is not None and _magic_of(head) is not None:
        return _classify(path, media_type, content_kind, head)
    # Bytes without a signature count only by what sniffing says, the path only by its
    # well-known name or suffix: decisions are shared by that key (a sync classifies all).
    sniffed = _sniff_text(head) if head is not None else None
    name = _file_name(path) if path else ""
    if name and name.lower() in _TEXT_NAMES:
        key: tuple[object, ...] = ("name", name, media_type, content_kind, sniffed)
    else:
        key = ("suffix", _suffix(name) if name else None, media_type, content_kind, sniffed)
    decision = _DECISIONS.get(key)
    if decision is None:
        if len(_DECISIONS) >= _MAX_DECISIONS:
            _DECISIONS.clear()
        decision = _DECISIONS[key] = _classify(path, media_type, content_kind, head)
    return decision


_DECISIONS: dict[tuple[object, ...], MediaDecision] = {}
_MAX_DECISIONS = 4096


def _classify(
    path: str | None, media_type: str | None, content_kind: str | None, head: bytes | None
) -> MediaDecision:
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
        return _decide_without_metadata(sniffed, content_kind, reasons)
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


def head_of(data: bytes) -> bytes:
    """The leading bytes every classifier sniffs: the first :data:`HEAD_BYTES`."""
    return data[:HEAD_BYTES]


def classify_bytes(
    path: str | None,
    data: bytes,
    media_type: str | None = None,
    *,
    content_kind: str | None = None,
    whole: bool = True,
) -> MediaDecision:
    """Decide how bytes enter a package: the one classifier of files, records and entries.

    The head (:func:`head_of`) decides magic numbers and UTF-8 validity. When ``data`` is
    the whole content (``whole``), a NUL byte anywhere makes would-be text binary: plain
    text never holds NUL. With only a head at hand, pass ``whole=False`` and classify the
    whole bytes again before delivering them as text.
    """
    decision = classify(path, media_type, content_kind=content_kind, head=head_of(data))
    if not whole or decision.media_class is not MediaClass.TEXT or len(data) <= HEAD_BYTES:
        return decision
    nul = data.find(b"\x00", HEAD_BYTES)
    if nul < 0:
        return decision
    reason = f"{decision.media_type} by its first {HEAD_BYTES} bytes, but the bytes are not text"
    return _decide(_Signal(f"bytes (NUL byte at offset {nul})", OCTET_STREAM, _B), [reason])


_TEXT_REPRESENTATIONS = (Representation.TEXT, Representation.PARSED_TEXT)


def read_mismatch(claimed: Representation, read: ExactRead) -> str | None:
    """Why an exact read does not back a descriptor's text claim, or None when it does.

    A ``text`` claim needs a read of plain text, a ``parsed_text`` claim one of parsed text;
    bytes, the other representation, a non-text media type or a NUL in the text fail.
    """
    if claimed not in _TEXT_REPRESENTATIONS:
        return f"{claimed.value} is no representation a source delivers as text"
    if read.text is not None:
        came = f"text marked {read.representation.value}"
    else:
        came = "bytes" if read.data is not None else "no content"
    said = f"the descriptor claims {claimed.value} but the read returned {came}"
    if read.text is None or read.representation is not claimed:
        return said
    media = classify(read.path, read.media_type).media_class
    allowed = (
        (MediaClass.TEXT, MediaClass.DOCUMENT)
        if claimed is Representation.PARSED_TEXT
        else (MediaClass.TEXT,)
    )
    if media not in allowed:
        return f"{said} of media type {read.media_type} ({media.value}), which is never text"
    nul = text_nul(read.text)
    if nul is not None:
        return f"{said} holding a NUL character at offset {nul}; text never holds NUL"
    return None


def is_hidden_path(path: str) -> bool:
    """Whether any component of ``path`` is a hidden name (starts with ``.``).

    ``.`` and ``..`` are not hidden names; ``/`` and ``\\`` both separate components.
    """
    if not path.startswith(".") and "/." not in path and "\\." not in path:
        return False  # no component starts with "." (the common case, without a split)
    normalized = path.replace("\\", "/")
    return any(part.startswith(".") and part not in (".", "..") for part in normalized.split("/"))


# --- Handler lookup: the one algorithm every host, workspace and source uses. ------------


def handler_for(
    handlers: Iterable[FileIOHandler], path: str | None, media_type: str | None
) -> FileIOHandler | None:
    """The handler of a document: the first of ``handlers`` claiming ``media_type``, else the
    first of the longest suffix match of ``path``'s file name.

    Media types are compared normalized on both sides (parameters dropped, aliases such as
    ``application/x-pdf`` resolved), so an alias finds the handler of its canonical type.
    """
    handlers = tuple(handlers)
    if media_type:
        wanted = normalize_media_type(media_type)
        for handler in handlers:
            if wanted in {normalize_media_type(m) for m in handler.media_types}:
                return handler
    if not path:
        return None
    filename = _file_name(path).lower()
    best: tuple[int, FileIOHandler | None] = (0, None)
    for handler in handlers:
        for suffix in handler.suffixes:
            dotted = "." + suffix.lower().lstrip(".")
            if filename.endswith(dotted) and len(dotted) > best[0]:
                best = (len(dotted), handler)
    return best[1]


def handler_missing_message(path: str, media_type: str) -> str:
    """The sentence for a document no installed FileIOHandler parses (code ``handler_missing``)."""
    return f"{path}: no installed FileIOHandler parses {media_type}; reference only"


def handler_missing(path: str, media_type: str) -> Problem:
    """The problem of a document no installed FileIOHandler parses: reference only."""
    return Problem(
        code=ProblemCode.HANDLER_MISSING, message=handler_missing_message(path, media_type)
    )
