"""The tables behind :mod:`taskctx.media`: one table per fact, no logic.

Suffixes, well-known file names, media types, aliases and magic numbers. Edit a fact
here and every source and the reader follow.
"""

from __future__ import annotations

from enum import Enum
from typing import NamedTuple

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
_MAGIC_BY_LEAD: dict[int, tuple[_Magic, ...]] = {
    lead: tuple(m for m in _MAGIC if all(offset or part[0] == lead for offset, part in m.parts))
    for lead in range(256)
}
"""The magic numbers bytes starting with each byte value may have, in table order."""

# --- Table: container formats -> media types whose files are such a container. ----------
_ZIP_BASED_SUFFIXES = (
    *("docx", "docm", "dotx", "xlsx", "xlsm", "xltx", "pptx", "pptm", "ppsx", "potx"),
    *("odt", "ods", "odp", "epub", "jar", "war", "whl", "apk"),
)
# An encrypted OOXML file (ECMA-376 standard or agile encryption) is an OLE container
# under its usual name: it keeps its document type so its handler can say "encrypted".
_OLE_BASED_SUFFIXES = ("doc", "xls", "ppt", "msi", "docx", "docm", "xlsx", "xlsm", "pptx", "pptm")

# --- Table: container formats -> media types whose files are such a container. ----------
_CONTAINERS: dict[str, frozenset[str]] = {
    "application/zip": frozenset(_SUFFIXES[suffix][0] for suffix in _ZIP_BASED_SUFFIXES),
    "application/x-ole-storage": frozenset(_SUFFIXES[suffix][0] for suffix in _OLE_BASED_SUFFIXES),
}
