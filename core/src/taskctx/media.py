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
from enum import Enum
from typing import NamedTuple

from pydantic import model_validator

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

OCTET_STREAM = "application/octet-stream"
"""Media type of bytes whose format is not known."""


class MediaClass(str, Enum):
    """What a media type means for a package: text, document, image, binary or unknown."""

    TEXT = "text"
    DOCUMENT = "document"
    IMAGE = "image"
    BINARY = "binary"
    UNKNOWN = "unknown"


_T = MediaClass.TEXT
_D = MediaClass.DOCUMENT
_I = MediaClass.IMAGE
_B = MediaClass.BINARY
_U = MediaClass.UNKNOWN

# --- Table: suffix (lower case, no dot) -> (media type, class). -------------------------
_SUFFIXES: dict[str, tuple[str, MediaClass]] = {
    # Python
    "py": ("text/x-python", _T),
    "pyi": ("text/x-python", _T),
    "pyw": ("text/x-python", _T),
    "pyx": ("text/x-cython", _T),
    "pxd": ("text/x-cython", _T),
    # Node.js
    "js": ("text/javascript", _T),
    "mjs": ("text/javascript", _T),
    "cjs": ("text/javascript", _T),
    "jsx": ("text/jsx", _T),
    "ts": ("text/x-typescript", _T),
    "mts": ("text/x-typescript", _T),
    "cts": ("text/x-typescript", _T),
    "tsx": ("text/x-tsx", _T),
    "json": ("application/json", _T),
    # Go
    "go": ("text/x-go", _T),
    # C and C++
    "c": ("text/x-c", _T),
    "h": ("text/x-c", _T),
    "cc": ("text/x-c++", _T),
    "cpp": ("text/x-c++", _T),
    "cxx": ("text/x-c++", _T),
    "c++": ("text/x-c++", _T),
    "hpp": ("text/x-c++", _T),
    "hh": ("text/x-c++", _T),
    "hxx": ("text/x-c++", _T),
    "h++": ("text/x-c++", _T),
    "ipp": ("text/x-c++", _T),
    "inl": ("text/x-c++", _T),
    # Other source languages
    "rs": ("text/x-rust", _T),
    "java": ("text/x-java", _T),
    "kt": ("text/x-kotlin", _T),
    "kts": ("text/x-kotlin", _T),
    "scala": ("text/x-scala", _T),
    "groovy": ("text/x-groovy", _T),
    "gradle": ("text/x-groovy", _T),
    "rb": ("text/x-ruby", _T),
    "php": ("text/x-php", _T),
    "pl": ("text/x-perl", _T),
    "pm": ("text/x-perl", _T),
    "lua": ("text/x-lua", _T),
    "r": ("text/x-r", _T),
    "jl": ("text/x-julia", _T),
    "swift": ("text/x-swift", _T),
    "m": ("text/x-objcsrc", _T),
    "mm": ("text/x-objcsrc", _T),
    "cs": ("text/x-csharp", _T),
    "fs": ("text/x-fsharp", _T),
    "vb": ("text/x-vb", _T),
    "dart": ("text/x-dart", _T),
    "ex": ("text/x-elixir", _T),
    "exs": ("text/x-elixir", _T),
    "erl": ("text/x-erlang", _T),
    "hrl": ("text/x-erlang", _T),
    "hs": ("text/x-haskell", _T),
    "ml": ("text/x-ocaml", _T),
    "mli": ("text/x-ocaml", _T),
    "clj": ("text/x-clojure", _T),
    "cljs": ("text/x-clojure", _T),
    "zig": ("text/x-zig", _T),
    "nim": ("text/x-nim", _T),
    "v": ("text/x-verilog", _T),
    "sv": ("text/x-systemverilog", _T),
    "vhd": ("text/x-vhdl", _T),
    "asm": ("text/x-asm", _T),
    "s": ("text/x-asm", _T),
    "sh": ("text/x-shellscript", _T),
    "bash": ("text/x-shellscript", _T),
    "zsh": ("text/x-shellscript", _T),
    "fish": ("text/x-shellscript", _T),
    "ps1": ("text/x-powershell", _T),
    "psm1": ("text/x-powershell", _T),
    "bat": ("text/x-msdos-batch", _T),
    "cmd": ("text/x-msdos-batch", _T),
    "sql": ("application/sql", _T),
    "proto": ("text/x-protobuf", _T),
    "graphql": ("application/graphql", _T),
    "gql": ("application/graphql", _T),
    "tf": ("text/x-hcl", _T),
    "hcl": ("text/x-hcl", _T),
    "vue": ("text/x-vue", _T),
    "svelte": ("text/x-svelte", _T),
    "cmake": ("text/x-cmake", _T),
    "mk": ("text/x-makefile", _T),
    "mak": ("text/x-makefile", _T),
    "ipynb": ("application/x-ipynb+json", _T),
    # Prose, markup, data and configuration
    "txt": ("text/plain", _T),
    "text": ("text/plain", _T),
    "log": ("text/plain", _T),
    "md": ("text/markdown", _T),
    "markdown": ("text/markdown", _T),
    "mdx": ("text/markdown", _T),
    "rst": ("text/x-rst", _T),
    "adoc": ("text/asciidoc", _T),
    "asciidoc": ("text/asciidoc", _T),
    "org": ("text/x-org", _T),
    "tex": ("text/x-tex", _T),
    "bib": ("text/x-bibtex", _T),
    "csv": ("text/csv", _T),
    "tsv": ("text/tab-separated-values", _T),
    "jsonl": ("application/x-ndjson", _T),
    "ndjson": ("application/x-ndjson", _T),
    "toml": ("application/toml", _T),
    "yaml": ("application/yaml", _T),
    "yml": ("application/yaml", _T),
    "ini": ("text/x-ini", _T),
    "cfg": ("text/plain", _T),
    "conf": ("text/plain", _T),
    "properties": ("text/x-java-properties", _T),
    "env": ("text/plain", _T),
    "lock": ("text/plain", _T),
    "html": ("text/html", _T),
    "htm": ("text/html", _T),
    "xhtml": ("application/xhtml+xml", _T),
    "css": ("text/css", _T),
    "scss": ("text/x-scss", _T),
    "sass": ("text/x-sass", _T),
    "less": ("text/x-less", _T),
    "xml": ("application/xml", _T),
    "xsd": ("application/xml", _T),
    "xsl": ("application/xml", _T),
    "diff": ("text/x-diff", _T),
    "patch": ("text/x-diff", _T),
    # Documents (need a FileIOHandler)
    "pdf": ("application/pdf", _D),
    "docx": ("application/vnd.openxmlformats-officedocument.wordprocessingml.document", _D),
    "docm": ("application/vnd.ms-word.document.macroenabled.12", _D),
    "dotx": ("application/vnd.openxmlformats-officedocument.wordprocessingml.template", _D),
    "xlsx": ("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", _D),
    "xlsm": ("application/vnd.ms-excel.sheet.macroenabled.12", _D),
    "xltx": ("application/vnd.openxmlformats-officedocument.spreadsheetml.template", _D),
    "pptx": ("application/vnd.openxmlformats-officedocument.presentationml.presentation", _D),
    "pptm": ("application/vnd.ms-powerpoint.presentation.macroenabled.12", _D),
    "ppsx": ("application/vnd.openxmlformats-officedocument.presentationml.slideshow", _D),
    "potx": ("application/vnd.openxmlformats-officedocument.presentationml.template", _D),
    "doc": ("application/msword", _D),
    "xls": ("application/vnd.ms-excel", _D),
    "ppt": ("application/vnd.ms-powerpoint", _D),
    "odt": ("application/vnd.oasis.opendocument.text", _D),
    "ods": ("application/vnd.oasis.opendocument.spreadsheet", _D),
    "odp": ("application/vnd.oasis.opendocument.presentation", _D),
    "rtf": ("application/rtf", _D),
    "epub": ("application/epub+zip", _D),
    # Images
    "png": ("image/png", _I),
    "jpg": ("image/jpeg", _I),
    "jpeg": ("image/jpeg", _I),
    "jpe": ("image/jpeg", _I),
    "gif": ("image/gif", _I),
    "webp": ("image/webp", _I),
    "bmp": ("image/bmp", _I),
    "tif": ("image/tiff", _I),
    "tiff": ("image/tiff", _I),
    "svg": ("image/svg+xml", _I),
    "svgz": ("image/svg+xml", _I),
    "ico": ("image/vnd.microsoft.icon", _I),
    "heic": ("image/heic", _I),
    "heif": ("image/heif", _I),
    "avif": ("image/avif", _I),
    "psd": ("image/vnd.adobe.photoshop", _I),
    # Archives and compressed data
    "zip": ("application/zip", _B),
    "tar": ("application/x-tar", _B),
    "gz": ("application/gzip", _B),
    "tgz": ("application/gzip", _B),
    "bz2": ("application/x-bzip2", _B),
    "xz": ("application/x-xz", _B),
    "zst": ("application/zstd", _B),
    "br": ("application/x-brotli", _B),
    "7z": ("application/x-7z-compressed", _B),
    "rar": ("application/vnd.rar", _B),
    "jar": ("application/java-archive", _B),
    "war": ("application/java-archive", _B),
    "whl": ("application/x-wheel+zip", _B),
    "egg": ("application/zip", _B),
    "apk": ("application/vnd.android.package-archive", _B),
    "deb": ("application/vnd.debian.binary-package", _B),
    "rpm": ("application/x-rpm", _B),
    "dmg": ("application/x-apple-diskimage", _B),
    "iso": ("application/x-iso9660-image", _B),
    # Executables and compiled code
    "exe": ("application/vnd.microsoft.portable-executable", _B),
    "dll": ("application/vnd.microsoft.portable-executable", _B),
    "msi": ("application/x-msi", _B),
    "so": ("application/x-sharedlib", _B),
    "dylib": ("application/x-mach-binary", _B),
    "elf": ("application/x-elf", _B),
    "o": ("application/x-object", _B),
    "obj": ("application/x-object", _B),
    "a": ("application/x-archive", _B),
    "lib": ("application/x-archive", _B),
    "bin": (OCTET_STREAM, _B),
    "dat": (OCTET_STREAM, _B),
    "class": ("application/java-vm", _B),
    "pyc": ("application/x-python-code", _B),
    "pyo": ("application/x-python-code", _B),
    "wasm": ("application/wasm", _B),
    # Data stores and model files
    "db": ("application/vnd.sqlite3", _B),
    "sqlite": ("application/vnd.sqlite3", _B),
    "sqlite3": ("application/vnd.sqlite3", _B),
    "parquet": ("application/vnd.apache.parquet", _B),
    "pkl": ("application/x-pickle", _B),
    "pickle": ("application/x-pickle", _B),
    "npy": ("application/x-npy", _B),
    "npz": ("application/x-npz", _B),
    "h5": ("application/x-hdf5", _B),
    "hdf5": ("application/x-hdf5", _B),
    "onnx": ("application/x-onnx", _B),
    "pt": ("application/x-pytorch", _B),
    "safetensors": ("application/x-safetensors", _B),
    # Fonts
    "ttf": ("font/ttf", _B),
    "otf": ("font/otf", _B),
    "woff": ("font/woff", _B),
    "woff2": ("font/woff2", _B),
    # Audio
    "mp3": ("audio/mpeg", _B),
    "wav": ("audio/wav", _B),
    "flac": ("audio/flac", _B),
    "ogg": ("audio/ogg", _B),
    "oga": ("audio/ogg", _B),
    "opus": ("audio/opus", _B),
    "m4a": ("audio/mp4", _B),
    "aac": ("audio/aac", _B),
    "mid": ("audio/midi", _B),
    "midi": ("audio/midi", _B),
    # Video
    "mp4": ("video/mp4", _B),
    "m4v": ("video/mp4", _B),
    "mov": ("video/quicktime", _B),
    "avi": ("video/x-msvideo", _B),
    "mkv": ("video/x-matroska", _B),
    "webm": ("video/webm", _B),
    "wmv": ("video/x-ms-wmv", _B),
    "flv": ("video/x-flv", _B),
    "mpg": ("video/mpeg", _B),
    "mpeg": ("video/mpeg", _B),
}

# --- Table: well-known file names (lower case) that are text without a suffix. ---------
_TEXT_NAMES: dict[str, str] = {
    "makefile": "text/x-makefile",
    "gnumakefile": "text/x-makefile",
    "dockerfile": "text/x-dockerfile",
    "containerfile": "text/x-dockerfile",
    "vagrantfile": "text/x-ruby",
    "gemfile": "text/x-ruby",
    "rakefile": "text/x-ruby",
    "podfile": "text/x-ruby",
    "brewfile": "text/x-ruby",
    "jenkinsfile": "text/x-groovy",
    "procfile": "text/plain",
    "pipfile": "application/toml",
    "justfile": "text/plain",
    "license": "text/plain",
    "licence": "text/plain",
    "copying": "text/plain",
    "notice": "text/plain",
    "authors": "text/plain",
    "contributors": "text/plain",
    "changelog": "text/plain",
    "changes": "text/plain",
    "readme": "text/plain",
    "todo": "text/plain",
    "codeowners": "text/plain",
    "go.mod": "text/plain",
    "go.sum": "text/plain",
    "go.work": "text/plain",
    ".gitignore": "text/plain",
    ".gitattributes": "text/plain",
    ".gitmodules": "text/plain",
    ".dockerignore": "text/plain",
    ".editorconfig": "text/x-ini",
    ".npmrc": "text/plain",
    ".nvmrc": "text/plain",
    ".python-version": "text/plain",
    ".env": "text/plain",
}

# --- Table: media types beyond the suffix table, and prefixes ending in "/". ------------
# Classes of exact media types come first from _SUFFIXES (derived, not copied), then from
# here; a key ending in "/" is a prefix matched after exact types and structured suffixes.
_MEDIA_TYPES: dict[str, MediaClass] = {
    "text/rtf": _D,
    "application/x-rtf": _D,
    "application/ecmascript": _T,
    "application/typescript": _T,
    "application/x-typescript": _T,
    "application/x-yaml": _T,
    "application/x-toml": _T,
    "application/x-sh": _T,
    "application/x-shellscript": _T,
    "application/x-python": _T,
    "application/x-python-script": _T,
    "application/x-httpd-php": _T,
    "application/x-tex": _T,
    "application/x-latex": _T,
    "application/x-perl": _T,
    "application/x-ruby": _T,
    "application/x-sql": _T,
    "application/jsonl": _T,
    "application/x-jsonlines": _T,
    "application/x-empty": _T,
    "inode/x-empty": _T,
    OCTET_STREAM: _B,
    "application/x-zip": _B,
    "application/x-gtar": _B,
    "application/x-bzip": _B,
    "application/x-compress": _B,
    "application/x-rar-compressed": _B,
    "application/x-ole-storage": _B,
    "application/x-executable": _B,
    "application/x-msdownload": _B,
    "application/x-mach-binary": _B,
    "application/x-sqlite3": _B,
    "application/vnd.ms-word": _D,
    "application/vnd.oasis.opendocument.text-template": _D,
    "image/": _I,
    "audio/": _B,
    "video/": _B,
    "font/": _B,
    "model/": _B,
    "multipart/": _B,
    "text/": _T,
}

# --- Table: aliases of media types to the canonical spelling. ---------------------------
_ALIASES: dict[str, str] = {
    "image/jpg": "image/jpeg",
    "image/pjpeg": "image/jpeg",
    "image/x-png": "image/png",
    "image/x-ms-bmp": "image/bmp",
    "image/x-icon": "image/vnd.microsoft.icon",
    "application/x-pdf": "application/pdf",
    "application/x-zip-compressed": "application/zip",
    "application/x-gzip": "application/gzip",
    "application/javascript": "text/javascript",
    "application/x-javascript": "text/javascript",
    "text/x-markdown": "text/markdown",
}

# Structured-syntax suffixes (RFC 6839) under application/ that are text.
_TEXT_STRUCTURED_SUFFIXES = ("+json", "+xml", "+yaml", "+toml")


class _Magic(NamedTuple):
    parts: tuple[tuple[int, bytes], ...]
    media_type: str
    media_class: MediaClass
    name: str


# --- Table: magic numbers at the start of the bytes. -------------------------------------
_MAGIC: tuple[_Magic, ...] = (
    _Magic(((0, b"\x89PNG\r\n\x1a\n"),), "image/png", _I, "PNG"),
    _Magic(((0, b"\xff\xd8\xff"),), "image/jpeg", _I, "JPEG"),
    _Magic(((0, b"GIF87a"),), "image/gif", _I, "GIF"),
    _Magic(((0, b"GIF89a"),), "image/gif", _I, "GIF"),
    _Magic(((0, b"RIFF"), (8, b"WEBP")), "image/webp", _I, "WebP"),
    _Magic(((0, b"II*\x00"),), "image/tiff", _I, "TIFF"),
    _Magic(((0, b"MM\x00*"),), "image/tiff", _I, "TIFF"),
    _Magic(((0, b"%PDF-"),), "application/pdf", _D, "PDF"),
    _Magic(((0, b"PK\x03\x04"),), "application/zip", _B, "ZIP"),
    _Magic(((0, b"PK\x05\x06"),), "application/zip", _B, "ZIP"),
    _Magic(((0, b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"),), "application/x-ole-storage", _B, "OLE2"),
    _Magic(((0, b"\x7fELF"),), "application/x-elf", _B, "ELF"),
    _Magic(((0, b"\xfe\xed\xfa\xce"),), "application/x-mach-binary", _B, "Mach-O"),
    _Magic(((0, b"\xfe\xed\xfa\xcf"),), "application/x-mach-binary", _B, "Mach-O"),
    _Magic(((0, b"\xce\xfa\xed\xfe"),), "application/x-mach-binary", _B, "Mach-O"),
    _Magic(((0, b"\xcf\xfa\xed\xfe"),), "application/x-mach-binary", _B, "Mach-O"),
    _Magic(((0, b"\x00asm"),), "application/wasm", _B, "WebAssembly"),
    _Magic(((0, b"\x1f\x8b"),), "application/gzip", _B, "gzip"),
    _Magic(((0, b"\xfd7zXZ\x00"),), "application/x-xz", _B, "xz"),
    _Magic(((0, b"\x28\xb5\x2f\xfd"),), "application/zstd", _B, "zstd"),
    _Magic(((0, b"7z\xbc\xaf\x27\x1c"),), "application/x-7z-compressed", _B, "7z"),
    _Magic(((0, b"Rar!\x1a\x07"),), "application/vnd.rar", _B, "RAR"),
    _Magic(((0, b"SQLite format 3\x00"),), "application/vnd.sqlite3", _B, "SQLite"),
)

# --- Table: container formats -> media types whose files are such a container. ----------
_ZIP_BASED_SUFFIXES = (
    *("docx", "docm", "dotx", "xlsx", "xlsm", "xltx", "pptx", "pptm", "ppsx", "potx"),
    *("odt", "ods", "odp", "epub", "jar", "war", "whl", "apk"),
)
_OLE_BASED_SUFFIXES = ("doc", "xls", "ppt", "msi")

# --- Table: container formats -> media types whose files are such a container. ----------
_CONTAINERS: dict[str, frozenset[str]] = {
    "application/zip": frozenset(_SUFFIXES[suffix][0] for suffix in _ZIP_BASED_SUFFIXES),
    "application/x-ole-storage": frozenset(_SUFFIXES[suffix][0] for suffix in _OLE_BASED_SUFFIXES),
}

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
