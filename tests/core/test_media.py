"""Tests of taskctx.media: the one media classification (DESIGN rule 5)."""

from __future__ import annotations

import struct

import pytest
from pydantic import ValidationError

from taskctx import _media_tables, media
from taskctx.errors import MediaError
from taskctx.images import ATTACHABLE_IMAGE_MEDIA_TYPES, ImageInfo, sniff_image
from taskctx.media import (
    MediaClass,
    MediaDecision,
    classify,
    clean_text,
    decode_text,
    guess_media_type,
    is_hidden_path,
    normalize_media_type,
)
from taskctx.model import Representation
from taskctx.testing import make_png

# --- Real tiny images built here ------------------------------------------------------


def make_gif(width: int, height: int) -> bytes:
    """A GIF89a: header, logical screen descriptor, one image descriptor, trailer."""
    header = b"GIF89a" + struct.pack("<HHBBB", width, height, 0, 0, 0)
    descriptor = b"\x2c" + struct.pack("<HHHHB", 0, 0, width, height, 0)
    return header + descriptor + b"\x02\x02\x44\x01\x00" + b"\x3b"


def make_jpeg(width: int, height: int, *, sof: int = 0xC0, fill: bool = False) -> bytes:
    """A minimal baseline JPEG: SOI, APP0 JFIF, DQT, SOF, SOS header, EOI."""
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    dqt = b"\xff\xdb" + struct.pack(">H", 67) + b"\x00" + bytes(range(1, 65))
    components = b"\x01\x22\x00\x02\x11\x00\x03\x11\x00"
    frame = struct.pack(">HBHHB", 8 + len(components), 8, height, width, 3) + components
    marker = (b"\xff\xff" if fill else b"\xff") + bytes([sof])
    sos = b"\xff\xda" + struct.pack(">HB", 12, 3) + b"\x01\x00\x02\x11\x03\x11\x00\x3f\x00"
    return b"\xff\xd8" + app0 + dqt + marker + frame + sos + b"\x00\x00" + b"\xff\xd9"


def _riff_webp(chunk: bytes, body: bytes) -> bytes:
    payload = b"WEBP" + chunk + struct.pack("<I", len(body)) + body
    return b"RIFF" + struct.pack("<I", len(payload)) + payload


def make_webp_vp8x(width: int, height: int) -> bytes:
    """An extended-format WebP (VP8X chunk with canvas size)."""
    body = b"\x00\x00\x00\x00" + (width - 1).to_bytes(3, "little")
    return _riff_webp(b"VP8X", body + (height - 1).to_bytes(3, "little"))


def make_webp_vp8l(width: int, height: int) -> bytes:
    """A lossless WebP (VP8L) header."""
    bits = (width - 1) | ((height - 1) << 14)
    return _riff_webp(b"VP8L", b"\x2f" + struct.pack("<I", bits) + b"\x00" * 4)


def make_webp_vp8(width: int, height: int) -> bytes:
    """A lossy WebP (VP8 key frame) header."""
    body = b"\x10\x02\x00" + b"\x9d\x01\x2a" + struct.pack("<HH", width, height) + b"\x00" * 4
    return _riff_webp(b"VP8 ", body)


SOURCE_SUFFIXES = (
    *("py", "js", "mjs", "cjs", "ts", "tsx", "jsx", "json", "go"),
    *("c", "h", "cc", "cpp", "cxx", "hpp", "hh", "hxx"),
)
COMMON_TEXT_PATHS = (
    *("a.txt", "a.md", "a.rst", "a.csv", "a.tsv", "a.toml", "a.yaml", "a.yml", "a.ini"),
    *("a.cfg", "a.html", "a.css", "a.xml", "a.sh", "a.sql", "a.rs", "a.java", "a.rb"),
    *("Makefile", "Dockerfile", "LICENSE", "README", "src/pkg/Makefile", "GNUmakefile"),
    *("go.mod", "docs/README.MD", "UPPER.PY", "dir.with.dots/file.txt", "types.d.ts"),
)
DOCUMENT_PATHS = (
    *("a.pdf", "a.docx", "a.xlsx", "a.pptx", "a.pptm", "a.xlsm", "a.docm"),
    *("a.doc", "a.xls", "a.ppt", "a.odt", "a.ods", "a.odp", "a.rtf", "a.epub"),
)
REFERENCE_ONLY_PATHS = (
    *(("a.png", MediaClass.IMAGE), ("a.jpg", MediaClass.IMAGE), ("a.jpeg", MediaClass.IMAGE)),
    *(("a.gif", MediaClass.IMAGE), ("a.webp", MediaClass.IMAGE), ("a.bmp", MediaClass.IMAGE)),
    *(("a.tiff", MediaClass.IMAGE), ("a.svg", MediaClass.IMAGE), ("a.ico", MediaClass.IMAGE)),
    *(("a.zip", MediaClass.BINARY), ("a.tar", MediaClass.BINARY), ("a.gz", MediaClass.BINARY)),
    *(("a.tar.gz", MediaClass.BINARY), ("a.7z", MediaClass.BINARY), ("a.rar", MediaClass.BINARY)),
    *(("a.exe", MediaClass.BINARY), ("a.dll", MediaClass.BINARY), ("a.so", MediaClass.BINARY)),
    *(("a.dylib", MediaClass.BINARY), ("a.elf", MediaClass.BINARY), ("a.mp3", MediaClass.BINARY)),
    *(("a.wav", MediaClass.BINARY), ("a.mp4", MediaClass.BINARY), ("a.mov", MediaClass.BINARY)),
    *(("a.pyc", MediaClass.BINARY), ("a.woff2", MediaClass.BINARY), ("a.bin", MediaClass.BINARY)),
)

MAGIC_HEADS = (
    (make_png(2, 2), "image/png", MediaClass.IMAGE),
    (make_jpeg(4, 3), "image/jpeg", MediaClass.IMAGE),
    (make_gif(3, 2), "image/gif", MediaClass.IMAGE),
    (make_webp_vp8x(5, 7), "image/webp", MediaClass.IMAGE),
    (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", "application/pdf", MediaClass.DOCUMENT),
    (b"PK\x03\x04\x14\x00\x00\x00", "application/zip", MediaClass.BINARY),
    (b"\x7fELF\x02\x01\x01\x00", "application/x-elf", MediaClass.BINARY),
    (b"\x1f\x8b\x08\x00\x00\x00\x00\x00", "application/gzip", MediaClass.BINARY),
)


# --- classify: text ---------------------------------------------------------------------


@pytest.mark.parametrize("suffix", SOURCE_SUFFIXES)
@pytest.mark.parametrize("head", [None, b"", b"x = 1\n"])
def test_source_suffixes_are_text(suffix: str, head: bytes | None) -> None:
    """Python/Node/Go/C/C++ source suffixes are text, empty files included."""
    decision = classify(f"pkg/module.{suffix}", head=head)
    assert decision.media_class is MediaClass.TEXT
    assert decision.enters_as_text
    assert not decision.needs_handler
    assert decision.representation() is Representation.TEXT


@pytest.mark.parametrize("path", COMMON_TEXT_PATHS)
def test_common_text_suffixes_and_names_are_text(path: str) -> None:
    """Common prose/config/markup suffixes and suffix-less well-known names are text."""
    assert classify(path).media_class is MediaClass.TEXT


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("a.py", "text/x-python"),
        ("a.json", "application/json"),
        ("a.cpp", "text/x-c++"),
        ("a.PNG", "image/png"),
        ("a.pdf", "application/pdf"),
        ("Makefile", "text/x-makefile"),
        ("archive.tar.gz", "application/gzip"),
        ("no_suffix", None),
        ("dir/", None),
        ("a.definitely-not-a-suffix", None),
    ],
)
def test_guess_media_type(path: str, expected: str | None) -> None:
    """guess_media_type answers from the one suffix/name table, or None when unknown."""
    assert guess_media_type(path) == expected


@pytest.mark.parametrize(
    ("path", "declared", "expected"),
    [
        ("a.py", "text/plain", "text/x-python"),
        ("a.md", "text/markdown; charset=utf-8", "text/markdown"),
        (None, "TEXT/X-Python", "text/x-python"),
        (None, "application/ld+json", "application/ld+json"),
        (None, "application/javascript", "text/javascript"),
        ("a.xml", "application/atom+xml", "application/atom+xml"),
    ],
)
def test_agreeing_text_signals_pick_the_specific_type(
    path: str | None, declared: str, expected: str
) -> None:
    """Text suffix and text media type agree: text, with the more specific media type."""
    decision = classify(path, declared)
    assert decision.media_class is MediaClass.TEXT
    assert decision.media_type == expected


# --- classify: documents and reference-only media -------------------------------------


@pytest.mark.parametrize("path", DOCUMENT_PATHS)
def test_documents_need_a_handler(path: str) -> None:
    """Office/PDF/OpenDocument files are documents: handler needed, never raw text."""
    decision = classify(path, content_kind="text")
    assert decision.media_class is MediaClass.DOCUMENT
    assert decision.needs_handler
    assert not decision.enters_as_text
    assert decision.representation() is Representation.REFERENCE_ONLY
    assert decision.representation(handler_available=True) is Representation.PARSED_TEXT


@pytest.mark.parametrize(("path", "expected"), REFERENCE_ONLY_PATHS)
def test_images_archives_executables_media_are_reference_only(
    path: str, expected: MediaClass
) -> None:
    """Images, archives, executables, audio and video are reference only, never text."""
    decision = classify(path)
    assert decision.media_class is expected
    assert not decision.enters_as_text
    assert not decision.needs_handler
    assert decision.representation(handler_available=True) is Representation.REFERENCE_ONLY


def test_svg_is_an_image_that_is_not_attachable() -> None:
    """SVG is image/svg+xml (reference only), not text and not an attachable raster type."""
    decision = classify("logo.svg", head=b"<svg xmlns='http://www.w3.org/2000/svg'/>")
    assert decision.media_class is MediaClass.IMAGE
    assert decision.media_type == "image/svg+xml"
    assert decision.media_type not in ATTACHABLE_IMAGE_MEDIA_TYPES
    with pytest.raises(MediaError, match="not a PNG, JPEG, GIF or WebP"):
        sniff_image(b"<svg xmlns='http://www.w3.org/2000/svg'/>", "image/svg+xml")


# --- classify: claims and conflicts ---------------------------------------------------


@pytest.mark.parametrize(
    ("path", "declared", "head", "expected"),
    [
        ("a.png", None, None, MediaClass.IMAGE),
        ("a.zip", None, None, MediaClass.BINARY),
        ("a.exe", None, None, MediaClass.BINARY),
        ("a.mp4", None, b"plain words", MediaClass.BINARY),
        (None, "application/pdf", None, MediaClass.DOCUMENT),
        (None, "image/png", None, MediaClass.IMAGE),
        (None, "application/x-made-up", None, MediaClass.UNKNOWN),
        ("a.weird", "application/x-made-up", b"utf8 text", MediaClass.UNKNOWN),
        (None, None, make_png(1, 1), MediaClass.IMAGE),
        ("a.txt", None, b"PK\x03\x04rest", MediaClass.BINARY),
        ("a.md", "text/markdown", b"%PDF-1.4", MediaClass.DOCUMENT),
        ("a.weird", None, b"\x00\x01\x02", MediaClass.BINARY),
    ],
)
def test_text_claim_cannot_override_non_text(
    path: str | None, declared: str | None, head: bytes | None, expected: MediaClass
) -> None:
    """content_kind='text' never beats a non-text suffix, media type or magic bytes."""
    decision = classify(path, declared, content_kind="text", head=head)
    assert decision.media_class is expected
    assert not decision.enters_as_text
    assert any("claim ignored" in reason for reason in decision.reasons)


@pytest.mark.parametrize(
    ("path", "declared", "expected_class", "expected_type"),
    [
        ("a.png", "text/plain", MediaClass.IMAGE, "image/png"),
        ("a.txt", "application/zip", MediaClass.BINARY, "application/zip"),
        ("a.txt", "image/png", MediaClass.IMAGE, "image/png"),
        ("a.py", "application/octet-stream", MediaClass.BINARY, "application/octet-stream"),
        ("a.py", "application/x-made-up", MediaClass.UNKNOWN, "application/x-made-up"),
        ("a.png", "application/pdf", MediaClass.UNKNOWN, "application/octet-stream"),
        ("a.exe", "image/gif", MediaClass.UNKNOWN, "application/octet-stream"),
        ("a.pdf", "text/plain", MediaClass.DOCUMENT, "application/pdf"),
    ],
)
def test_conflicting_signals_close_to_non_text(
    path: str, declared: str, expected_class: MediaClass, expected_type: str
) -> None:
    """Suffix and media type that disagree close to non-text/unknown, with a reason."""
    decision = classify(path, declared)
    assert decision.media_class is expected_class
    assert decision.media_type == expected_type
    assert not decision.enters_as_text
    assert len(decision.reasons) >= 2


def test_generic_octet_stream_defers_to_a_specific_non_text_suffix() -> None:
    """application/octet-stream with a .png suffix stays an image (both say non-text)."""
    decision = classify("a.png", "application/octet-stream")
    assert decision.media_class is MediaClass.IMAGE
    assert decision.media_type == "image/png"


@pytest.mark.parametrize(("head", "media_type", "expected"), MAGIC_HEADS)
@pytest.mark.parametrize("path", ["notes.txt", "main.py", "file.unknownsuffix", None])
def test_magic_bytes_win_over_names_and_claims(
    path: str | None, head: bytes, media_type: str, expected: MediaClass
) -> None:
    """PNG/JPEG/GIF/WebP/PDF/ZIP/ELF/gzip signatures decide, whatever the name says."""
    decision = classify(path, "text/plain", content_kind="text", head=head)
    assert decision.media_type == media_type
    assert decision.media_class is expected
    assert not decision.enters_as_text


@pytest.mark.parametrize(("head", "media_type", "_expected"), MAGIC_HEADS[:4])
def test_magic_bytes_correct_a_wrong_image_suffix(
    head: bytes, media_type: str, _expected: MediaClass
) -> None:
    """An image whose suffix names another image format gets the type its bytes have."""
    decision = classify("picture.bmp", head=head)
    assert decision.media_class is MediaClass.IMAGE
    assert decision.media_type == media_type
    assert any("the bytes win" in reason for reason in decision.reasons)


@pytest.mark.parametrize(
    ("path", "head", "expected_type"),
    [
        (
            "report.docx",
            b"PK\x03\x04\x14\x00",
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        ),
        (
            "sheet.xlsx",
            b"PK\x03\x04\x14\x00",
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        ),
        (
            "deck.pptm",
            b"PK\x03\x04\x14\x00",
            "application/vnd.ms-powerpoint.presentation.macroenabled.12",
        ),
        ("text.odt", b"PK\x03\x04\x14\x00", "application/vnd.oasis.opendocument.text"),
        ("old.doc", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1\x00", "application/msword"),
        ("old.xls", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1\x00", "application/vnd.ms-excel"),
        ("paper.pdf", b"%PDF-1.5", "application/pdf"),
    ],
)
def test_container_magic_keeps_a_compatible_document_type(
    path: str, head: bytes, expected_type: str
) -> None:
    """ZIP (OOXML/ODF) and OLE2 (legacy Office) bytes keep the document type of the name."""
    for declared in (None, "application/zip", "application/octet-stream"):
        decision = classify(path, declared, head=head)
        assert decision.media_class is MediaClass.DOCUMENT
        assert decision.media_type == expected_type
        assert decision.needs_handler


def test_pdf_bytes_under_a_docx_name_are_pdf() -> None:
    """A PDF signature in a .docx file makes it a PDF document, not a Word one."""
    decision = classify("fake.docx", head=b"%PDF-1.7")
    assert decision.media_type == "application/pdf"
    assert decision.media_class is MediaClass.DOCUMENT


# --- classify: sniffing ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (b"plain ascii\n", MediaClass.TEXT),
        ("unicode ✓ façade\n".encode(), MediaClass.TEXT),
        (b"\xef\xbb\xbfwith bom", MediaClass.TEXT),
        ("cut inside a character: ✓".encode()[:-1], MediaClass.TEXT),
        (b"", MediaClass.TEXT),
        (b"text\x00with nul", MediaClass.BINARY),
        (b"\x00", MediaClass.BINARY),
        (b"latin-1 caf\xe9 bytes", MediaClass.BINARY),
        (b"\xff\xfe\x00t\x00e", MediaClass.BINARY),
        (b"\xc0\x80 overlong", MediaClass.BINARY),
    ],
)
@pytest.mark.parametrize("path", ["data.unknownsuffix", "no_suffix_name", None])
def test_unknown_suffix_sniffs_the_leading_bytes(
    path: str | None, head: bytes, expected: MediaClass
) -> None:
    """Unknown suffix, no media type: UTF-8 without NUL is text; NUL/invalid UTF-8 binary."""
    decision = classify(path, head=head)
    assert decision.media_class is expected
    assert decision.enters_as_text is (expected is MediaClass.TEXT)


@pytest.mark.parametrize(
    ("content_kind", "expected"),
    [(None, MediaClass.UNKNOWN), ("text", MediaClass.TEXT), ("binary", MediaClass.BINARY)],
)
@pytest.mark.parametrize("path", ["data.unknownsuffix", "no_suffix_name", None])
def test_without_bytes_only_a_claim_decides(
    path: str | None, content_kind: str | None, expected: MediaClass
) -> None:
    """Unknown suffix, no type, no bytes: unknown unless a claim says text or binary."""
    decision = classify(path, content_kind=content_kind)
    assert decision.media_class is expected
    assert decision.reasons


@pytest.mark.parametrize("head", [b"x = 1\x00\x00", b"\xff\xfe\xfd"])
def test_binary_bytes_close_a_text_suffix(head: bytes) -> None:
    """A .py file whose bytes hold NUL or invalid UTF-8 is binary, not text."""
    decision = classify("main.py", content_kind="text", head=head)
    assert decision.media_class is MediaClass.BINARY
    assert any("not text" in reason for reason in decision.reasons)


@pytest.mark.parametrize(
    ("path", "head"),
    [("main.py", None), ("main.py", b"x = 1\n"), ("data.unknownsuffix", b"hello")],
)
def test_binary_claim_closes_text(path: str, head: bytes | None) -> None:
    """content_kind='binary' turns would-be text into binary (claims may only close)."""
    decision = classify(path, content_kind="binary", head=head)
    assert decision.media_class is MediaClass.BINARY
    assert not decision.enters_as_text


@pytest.mark.parametrize("content_kind", ["TEXT", "image", "", "document"])
def test_unknown_content_kind_is_refused(content_kind: str) -> None:
    """content_kind other than 'text', 'binary' or None raises ValueError."""
    with pytest.raises(ValueError, match="content_kind"):
        classify("a.py", content_kind=content_kind)


# --- tables and values ----------------------------------------------------------------


def test_suffix_table_and_media_type_table_agree() -> None:
    """Each suffix's media type, declared alone, classifies to the suffix's class."""
    for suffix, (media_type, media_class) in _media_tables._SUFFIXES.items():
        assert suffix == suffix.lower()
        assert classify(f"x.{suffix}").media_class is media_class, suffix
        assert classify(None, media_type).media_class is media_class, suffix
        assert classify(f"x.{suffix}", media_type).media_class is media_class, suffix


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Text/Plain; charset=UTF-8", "text/plain"),
        (" image/JPG ", "image/jpeg"),
        ("application/x-zip-compressed", "application/zip"),
        ("application/pdf", "application/pdf"),
    ],
)
def test_normalize_media_type(raw: str, expected: str) -> None:
    """Media types are lower-cased, stripped of parameters and de-aliased."""
    assert normalize_media_type(raw) == expected


@pytest.mark.parametrize(
    ("media_class", "enters_as_text", "needs_handler"),
    [
        (MediaClass.TEXT, False, False),
        (MediaClass.IMAGE, True, False),
        (MediaClass.DOCUMENT, False, False),
        (MediaClass.BINARY, False, True),
    ],
)
def test_decision_flags_must_agree_with_the_class(
    media_class: MediaClass, enters_as_text: bool, needs_handler: bool
) -> None:
    """A MediaDecision whose flags contradict its class cannot be built."""
    with pytest.raises(ValidationError):
        MediaDecision(
            media_type="x/y",
            media_class=media_class,
            enters_as_text=enters_as_text,
            needs_handler=needs_handler,
            reasons=(),
        )


def test_decision_is_frozen_and_round_trips_json() -> None:
    """A decision is immutable and survives a JSON round trip."""
    decision = classify("a.png", "text/plain")
    with pytest.raises(ValidationError):
        decision.media_class = MediaClass.TEXT  # type: ignore[misc]
    assert MediaDecision.model_validate_json(decision.model_dump_json()) == decision
    assert MediaClass("text") is MediaClass.TEXT
    assert MediaClass.IMAGE.value == "image"


# --- sniff_image ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "media_type", "width", "height"),
    [
        (make_png(1, 1), "image/png", 1, 1),
        (make_png(7, 3), "image/png", 7, 3),
        (make_png(5, 4, color_type=6, depth=16), "image/png", 5, 4),
        (make_png(2, 9, color_type=0, depth=1), "image/png", 2, 9),
        (make_gif(1, 1), "image/gif", 1, 1),
        (make_gif(640, 480), "image/gif", 640, 480),
        (b"GIF87a" + make_gif(3, 5)[6:], "image/gif", 3, 5),
        (make_jpeg(4, 3), "image/jpeg", 4, 3),
        (make_jpeg(1920, 1080, sof=0xC2), "image/jpeg", 1920, 1080),
        (make_jpeg(33, 17, fill=True), "image/jpeg", 33, 17),
        (make_webp_vp8x(5, 7), "image/webp", 5, 7),
        (make_webp_vp8x(16384, 1), "image/webp", 16384, 1),
        (make_webp_vp8l(300, 200), "image/webp", 300, 200),
        (make_webp_vp8(64, 48), "image/webp", 64, 48),
    ],
)
def test_sniff_image_reads_real_dimensions(
    data: bytes, media_type: str, width: int, height: int
) -> None:
    """Real PNG/GIF/JPEG/WebP headers parse to the right type and width/height."""
    expected = ImageInfo(media_type=media_type, width=width, height=height)
    assert sniff_image(data) == expected
    assert sniff_image(data, media_type) == expected
    assert media_type in ATTACHABLE_IMAGE_MEDIA_TYPES
    decision = classify("upload.bin", head=data[:64])
    assert decision.media_type == media_type
    assert decision.media_class is MediaClass.IMAGE


def test_sniff_image_accepts_declared_aliases_and_parameters() -> None:
    """image/jpg and parameters on the declared type are normalised before comparing."""
    assert sniff_image(make_jpeg(2, 2), "image/JPG").media_type == "image/jpeg"
    assert sniff_image(make_png(2, 2), "image/png; foo=bar").width == 2


@pytest.mark.parametrize(
    ("data", "declared"),
    [
        (make_png(2, 2), "image/jpeg"),
        (make_jpeg(2, 2), "image/png"),
        (make_gif(2, 2), "image/webp"),
        (make_webp_vp8x(2, 2), "image/gif"),
        (make_png(2, 2), "text/plain"),
    ],
)
def test_sniff_image_refuses_mislabelled_images(data: bytes, declared: str) -> None:
    """A declared media type that disagrees with the bytes raises MediaError."""
    with pytest.raises(MediaError, match="does not match the bytes"):
        sniff_image(data, declared)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty image data"),
        (b"plain text, not an image", "not a PNG, JPEG, GIF or WebP"),
        (b"%PDF-1.7", "PDF"),
        (b"PK\x03\x04" + b"\x00" * 40, "ZIP"),
        (b"BM" + b"\x00" * 60, "not a PNG, JPEG, GIF or WebP"),
    ],
)
def test_sniff_image_refuses_empty_and_non_images(data: bytes, message: str) -> None:
    """Empty data and bytes of other formats raise MediaError with a clear message."""
    with pytest.raises(MediaError, match=message):
        sniff_image(data)


def _sof_end(jpeg: bytes) -> int:
    return jpeg.index(b"\xff\xc0") + 9


@pytest.mark.parametrize(
    ("data", "header_size"),
    [
        (make_png(3, 3), 33),
        (make_gif(3, 3), 13),
        (make_jpeg(3, 3), _sof_end(make_jpeg(3, 3))),
        (make_webp_vp8x(3, 3), 30),
        (make_webp_vp8l(3, 3), 25),
        (make_webp_vp8(3, 3), 30),
    ],
)
def test_sniff_image_refuses_truncated_headers(data: bytes, header_size: int) -> None:
    """Any cut of an image before the end of its size header raises MediaError."""
    assert sniff_image(data[:header_size]).width == 3
    for size in range(1, header_size):
        with pytest.raises(MediaError):
            sniff_image(data[:size])


@pytest.mark.parametrize(
    "data",
    [
        make_png(0, 4),
        make_png(4, 0),
        make_gif(0, 4),
        make_gif(4, 0),
        make_jpeg(4, 0),
        make_jpeg(0, 4),
        make_webp_vp8(0, 4),
        make_webp_vp8(4, 0),
    ],
)
def test_sniff_image_refuses_zero_dimensions(data: bytes) -> None:
    """Zero width or height raises MediaError."""
    with pytest.raises(MediaError, match="zero dimension"):
        sniff_image(data)


def _corrupt(data: bytes, offset: int, value: int) -> bytes:
    return data[:offset] + bytes([value]) + data[offset + 1 :]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (_corrupt(make_png(3, 3), 20, 0x01), "checksum"),
        (_corrupt(make_png(3, 3), 12, ord("X")), "IHDR"),
        (make_png(3, 3, color_type=2, depth=4), "bit depth"),
        (make_png(3, 3, color_type=5), "bit depth"),
        (b"\xff\xd8\xff\xd9", "before a frame header"),
        (b"\xff\xd8\xff\xe0\x00\x01", "segment length"),
        (b"\xff\xd8\xff\xe0\x00\x04\x00\x00X", "expected a marker"),
        (_corrupt(make_webp_vp8l(3, 3), 20, 0x00), "VP8L"),
        (_corrupt(make_webp_vp8(3, 3), 23, 0x00), "key frame"),
        (_riff_webp(b"ABCD", b"\x00" * 12), "unknown first chunk"),
    ],
)
def test_sniff_image_refuses_invalid_headers(data: bytes, message: str) -> None:
    """Corrupt checksums, chunk types, bit depths and markers raise MediaError."""
    with pytest.raises(MediaError, match=message):
        sniff_image(data)


# --- clean_text and decode_text --------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("a\nb\tc", "a\nb\tc"),
        ("a\r\nb\rc\n", "a\nb\nc\n"),
        ("\ufeffheading", "heading"),
        ("mid\ufeffword", "mid\ufeffword"),
        ("nul\x00byte", "nulbyte"),
        ("bell\x07 esc\x1b[0m vt\x0b ff\x0c", "bell esc[0m vt ff"),
        ("del\x7f c1\x85\x9f", "del c1"),
        ("unicode ✓ façade — ok", "unicode ✓ façade — ok"),
        ("", ""),
    ],
)
def test_clean_text_keeps_newline_and_tab_and_drops_controls(raw: str, expected: str) -> None:
    """clean_text keeps \\n and \\t, normalises \\r, drops NUL, C0/C1 controls and a BOM."""
    assert clean_text(raw) == expected


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"hello\n", "hello\n"),
        (b"\xef\xbb\xbfwith bom", "with bom"),
        ("façade ✓".encode(), "façade ✓"),
        (b"", ""),
    ],
)
def test_decode_text_decodes_utf8_and_strips_bom(data: bytes, expected: str) -> None:
    """decode_text is strict UTF-8 and drops a leading BOM."""
    assert decode_text(data) == expected


@pytest.mark.parametrize(
    ("data", "offset"),
    [
        (b"abc\xffdef", 3),
        (b"\xef\xbb\xbfab\xc3", 5),
        (b"caf\xe9", 3),
        (b"\x80", 0),
    ],
)
def test_decode_text_names_the_bad_byte_offset(data: bytes, offset: int) -> None:
    """Invalid UTF-8 raises MediaError naming the byte offset in the original data."""
    with pytest.raises(MediaError, match=f"byte offset {offset}\\b"):
        decode_text(data)


# --- is_hidden_path -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "hidden"),
    [
        (".env", True),
        (".git/config", True),
        ("a/.cache/x", True),
        ("a/b/.hidden", True),
        ("a\\.secret\\x", True),
        ("./a", False),
        ("../a/b.txt", False),
        ("a/./b/../c", False),
        ("a/b.c/d", False),
        ("visible.txt", False),
        ("", False),
        ("a/..b", True),
        ("a..b/c.", False),
        ("a\\b/.c", True),
        ("a.\\b", False),
    ],
)
def test_is_hidden_path(path: str, hidden: bool) -> None:
    """Any component starting with '.' is hidden; '.' and '..' components are not."""
    assert is_hidden_path(path) is hidden


def test_every_signature_in_the_table_is_found_by_its_bytes_alone() -> None:
    """Each magic number of the table decides bytes that hold it (whatever their first
    byte leads to), and the same bytes cut one byte short of it carry no signature."""
    for magic in _media_tables._MAGIC:
        blob = bytearray(b"x" * 64)
        for offset, part in magic.parts:
            blob[offset : offset + len(part)] = part
        found = media._magic_of(bytes(blob))
        assert found is not None, magic.name
        assert found.media_type == magic.media_type, magic.name
        end = max(offset + len(part) for offset, part in magic.parts)
        assert media._magic_of(bytes(blob[: end - 1])) is not magic, magic.name
    assert media._magic_of(b"") is None
    assert media._magic_of(b"plain text") is None


@pytest.mark.parametrize("name", ["notes.txt", "README", "blob.bin", "noext", "page.md"])
def test_shared_decisions_still_follow_each_files_bytes(name: str) -> None:
    """Decisions are shared by name and sniffed bytes: text, a NUL, invalid UTF-8 and a
    signature each still decide for themselves, in any order."""
    samples = [b"plain words\n", b"a\x00b", b"\xff\xfe\xfd", b"\x89PNG\r\n\x1a\n" + bytes(8), b""]
    first = [media.classify_bytes(name, data) for data in samples]
    again = [media.classify_bytes(name, data) for data in reversed(samples)]
    assert again == list(reversed(first))
    assert first[1].media_class is MediaClass.BINARY
    assert first[2].media_class is MediaClass.BINARY
    assert first[3].media_type == "image/png"
    assert media.classify_bytes(name, b"a\x00b").reasons == first[1].reasons
