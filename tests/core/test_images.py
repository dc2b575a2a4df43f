"""Tests of taskctx.images: the one validation every image passes before it attaches."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import warnings
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from PIL import Image, ImageFile
from pydantic import ValidationError

from taskctx.errors import MediaError
from taskctx.images import (
    DEFAULT_IMAGE_LIMITS,
    PILLOW_FORMATS,
    ImageLimits,
    sniff_image,
    validate_image,
)
from taskctx.testing import make_png
from tests.childpeak import PEAK_RSS_SOURCE
from tests.core import image_samples as samples

VALID: list[tuple[str, Callable[[], bytes], str, tuple[int, int]]] = [
    ("png", lambda: samples.encoded("PNG", (5, 4)), "image/png", (5, 4)),
    ("png palette", lambda: _converted("P", "PNG"), "image/png", (6, 5)),
    ("png 16-bit", lambda: _converted("I;16", "PNG"), "image/png", (6, 5)),
    ("png rgba", lambda: _converted("RGBA", "PNG"), "image/png", (6, 5)),
    ("png by hand", lambda: make_png(3, 2), "image/png", (3, 2)),
    ("png 1-bit", lambda: samples.png_1bit(31, 17), "image/png", (31, 17)),
    ("jpeg", lambda: samples.encoded("JPEG", (5, 4)), "image/jpeg", (5, 4)),
    ("jpeg grey", lambda: _converted("L", "JPEG"), "image/jpeg", (6, 5)),
    ("jpeg cmyk", lambda: _converted("CMYK", "JPEG"), "image/jpeg", (6, 5)),
    (
        "jpeg progressive",
        lambda: samples.encoded("JPEG", (40, 30), progressive=True),
        "image/jpeg",
        (40, 30),
    ),
    ("gif", lambda: samples.encoded("GIF", (5, 4)), "image/gif", (5, 4)),
    ("gif by hand", lambda: samples.gif((4, 4), [(3, 3, 1, 1)]), "image/gif", (4, 4)),
    ("webp lossy", lambda: samples.encoded("WEBP", (5, 4)), "image/webp", (5, 4)),
    (
        "webp lossless",
        lambda: samples.encoded("WEBP", (5, 4), lossless=True),
        "image/webp",
        (5, 4),
    ),
    (
        "webp extended",
        lambda: samples.riff(samples.vp8x(4, 3) + samples.webp_bitstream()),
        "image/webp",
        (4, 3),
    ),
    ("gif animated", lambda: samples.animated("GIF", 5), "image/gif", (8, 6)),
    ("png animated", lambda: samples.animated("PNG", 5), "image/png", (8, 6)),
    ("webp animated", lambda: samples.animated("WEBP", 5), "image/webp", (8, 6)),
]


def _converted(mode: str, fmt: str) -> bytes:
    out = io.BytesIO()
    Image.new(mode, (6, 5)).save(out, format=fmt)
    return out.getvalue()


@pytest.mark.parametrize(
    ("build", "media_type", "size"), [v[1:] for v in VALID], ids=[v[0] for v in VALID]
)
def test_valid_images_pass_with_their_size(
    build: Callable[[], bytes], media_type: str, size: tuple[int, int]
) -> None:
    """Real PNG, JPEG, GIF and WebP files (still and animated) validate with their size."""
    data = build()
    info = validate_image(data)
    assert (info.media_type, (info.width, info.height)) == (media_type, size)
    assert validate_image(data, media_type) == info


def _jpeg() -> bytes:
    return samples.encoded("JPEG", (64, 64))


def _gif() -> bytes:
    return samples.encoded("GIF", (64, 64))


def _webp() -> bytes:
    return samples.encoded("WEBP", (64, 64))


def _png() -> bytes:
    return samples.encoded("PNG", (16, 16))


def _flip(data: bytes, offset: int) -> bytes:
    return data[:offset] + bytes([data[offset] ^ 0xFF]) + data[offset + 1 :]


HOSTILE: list[tuple[str, Callable[[], bytes], str]] = [
    # decompression bombs: a huge declared size, tiny data
    ("png bomb 100000^2", samples.png_bomb, "over the limit"),
    ("png bomb 16000^2 complete", lambda: samples.png_1bit(16000, 16000), "decompression bomb"),
    ("png just over the pixels", lambda: samples.png_1bit(5000, 5001), "25000000 pixels"),
    ("png one side too long", lambda: samples.png_1bit(65536, 1), "side over the limit"),
    ("gif bomb 65535^2", samples.gif_bomb, "over the limit"),
    ("gif frame outside screen", samples.gif_frame_outside, "outside the 1x1 logical screen"),
    ("webp canvas bomb", samples.webp_lying_canvas, "decompression bomb"),
    ("webp bitstream bigger", samples.webp_bitstream_bigger, "bitstream is 300x200"),
    ("webp frame outside canvas", samples.webp_frame_outside, "outside the 4x3 canvas"),
    ("jpeg scan bomb", lambda: samples.jpeg_scan_bomb(1000), "1000 scans"),
    ("gif too many frames", lambda: samples.animated("GIF", 300, (2, 2)), "300 frames"),
    (
        "apng too many pixels",
        lambda: samples.apng_declaring(3, [(5000, 4000, 0, 0)] * 3, (5000, 4000)),
        "3 frames of 5000x4000",
    ),
    # truncated
    ("jpeg cut in half", lambda: _jpeg()[: len(_jpeg()) // 2], "truncated JPEG"),
    ("jpeg without EOI", lambda: _jpeg()[:-2], "truncated JPEG"),
    ("jpeg cut in a header", lambda: _jpeg()[:30], "truncated JPEG|invalid JPEG"),
    ("png cut before IEND", lambda: _png()[:-12], "no IEND"),
    ("png cut in IDAT", lambda: _png()[: len(_png()) - 20], "truncated PNG"),
    ("gif without trailer", lambda: _gif()[:-1], "no trailer"),
    ("gif cut in a frame", lambda: _gif()[: len(_gif()) // 2], "truncated GIF"),
    ("webp cut", lambda: _webp()[: len(_webp()) // 2], "truncated WebP"),
    ("webp riff size lies", samples.webp_riff_too_long, "RIFF header declares"),
    # garbage and corruption
    ("garbage after png signature", lambda: b"\x89PNG\r\n\x1a\ngarbage" * 3, "IHDR"),
    ("png signature only", lambda: b"\x89PNG\r\n\x1a\n", "truncated PNG header"),
    ("png idat not zlib", lambda: make_png(4, 4, idat=b"not zlib data at all"), "does not decode"),
    (
        "png idat too short",
        lambda: make_png(4, 4, idat=zlib.compress(b"\x00" * 5)),
        "does not decode",
    ),
    ("png idat checksum", lambda: _flip(make_png(4, 4), 45), "checksum of chunk IDAT"),
    (
        "png unknown critical chunk",
        lambda: samples.png_with_chunks([samples.png_chunk(b"ZZZZ", b"")]),
        "unknown critical chunk",
    ),
    (
        "png bad chunk type",
        lambda: samples.png_with_chunks([samples.png_chunk(b"a\x00b!", b"")]),
        "bad chunk header",
    ),
    (
        "apng frame count lies",
        lambda: samples.apng_declaring(3, [(4, 4, 0, 0)]),
        "declares 3 frames",
    ),
    (
        "apng frame outside",
        lambda: samples.apng_declaring(1, [(4, 4, 1, 0)]),
        "outside the 4x4 canvas",
    ),
    ("jpeg two frame headers", samples.jpeg_two_frames, "more than one frame header"),
    ("jpeg garbage after SOI", lambda: b"\xff\xd8\xff" + b"\x00" * 40, "invalid JPEG"),
    ("jpeg bogus huffman table", lambda: _jpeg_bad_huffman(), "does not decode"),
    ("gif unknown block", lambda: samples.gif((4, 4), [(0, 0, 1, 1)])[:-1] + b"\x99", "0x99"),
    ("gif without frames", lambda: samples.gif((4, 4), []), "no image"),
    ("webp garbage bitstream", lambda: _webp_garbage(), "does not decode"),
    ("empty", lambda: b"", "empty image data"),
    ("zero bytes", lambda: b"\x00" * 64, "not a PNG, JPEG, GIF or WebP"),
    ("text", lambda: b"definitely not an image", "not a PNG, JPEG, GIF or WebP"),
]


def _jpeg_bad_huffman() -> bytes:
    """A JPEG whose first Huffman table counts more codes than can exist."""
    data = samples.encoded("JPEG", (32, 32))
    table = data.index(b"\xff\xc4")
    return data[: table + 5] + b"\xff" * 16 + data[table + 21 :]


def _webp_garbage() -> bytes:
    """A lossless WebP header over bytes that are no VP8L bitstream."""
    stream = samples.webp_bitstream((4, 3))
    body = stream[8:13] + b"\xff" * 40
    return samples.riff(samples.webp_chunk(b"VP8L", body))


@pytest.mark.parametrize(
    ("build", "message"), [h[1:] for h in HOSTILE], ids=[h[0] for h in HOSTILE]
)
def test_hostile_images_are_refused_as_invalid_image(
    build: Callable[[], bytes], message: str
) -> None:
    """Bombs, truncated, garbage and corrupt images raise MediaError(invalid_image)."""
    with pytest.raises(MediaError, match=message) as caught:
        validate_image(build())
    assert caught.value.code == "invalid_image"


@pytest.mark.parametrize(
    ("build", "declared"),
    [
        (_jpeg, "image/png"),
        (_png, "image/jpeg"),
        (_gif, "image/webp"),
        (_webp, "image/gif"),
        (_png, "text/plain"),
        (_png, "application/octet-stream"),
    ],
)
def test_a_declared_type_must_be_what_the_bytes_are(
    build: Callable[[], bytes], declared: str
) -> None:
    """An image declared as another type (a JPEG labelled image/png, ...) is refused."""
    with pytest.raises(MediaError, match="does not match the bytes") as caught:
        validate_image(build(), declared)
    assert caught.value.code == "invalid_image"


def test_declared_aliases_and_parameters_are_normalised() -> None:
    """image/jpg and parameters on the declared type still match."""
    assert validate_image(_jpeg(), "image/JPG").media_type == "image/jpeg"
    assert validate_image(_png(), "image/png; foo=bar").width == 16


LIMIT_CASES: list[tuple[str, ImageLimits, Callable[[], bytes], Callable[[], bytes]]] = [
    ("max_pixels", ImageLimits(max_pixels=100), lambda: make_png(10, 10), lambda: make_png(11, 10)),
    ("max_side", ImageLimits(max_side=10), lambda: make_png(10, 1), lambda: make_png(11, 1)),
    (
        "max_bytes",
        ImageLimits(max_bytes=len(make_png(3, 3))),
        lambda: make_png(3, 3),
        lambda: make_png(3, 3) + b"\x00",
    ),
    (
        "max_frames",
        ImageLimits(max_frames=4),
        lambda: samples.animated("GIF", 4),
        lambda: samples.animated("GIF", 5),
    ),
    (
        "max_total_pixels",
        ImageLimits(max_total_pixels=8 * 6 * 3),
        lambda: samples.animated("WEBP", 3),
        lambda: samples.animated("WEBP", 4),
    ),
    (
        "max_scans",
        ImageLimits(max_scans=12),
        lambda: samples.jpeg_scan_bomb(12, 16),
        lambda: samples.jpeg_scan_bomb(13, 16),
    ),
    (
        "max_scan_pixels",
        ImageLimits(max_scan_pixels=16 * 16 * 12),
        lambda: samples.jpeg_scan_bomb(12, 16),
        lambda: samples.jpeg_scan_bomb(13, 16),
    ),
    (
        "max_chunks",
        ImageLimits(max_chunks=3 + 10),
        lambda: samples.png_with_chunks([samples.png_chunk(b"tEXt", b"k\x00v")] * 10),
        lambda: samples.png_with_chunks([samples.png_chunk(b"tEXt", b"k\x00v")] * 11),
    ),
]


@pytest.mark.parametrize(
    ("limits", "at_limit", "over_limit"),
    [c[1:] for c in LIMIT_CASES],
    ids=[c[0] for c in LIMIT_CASES],
)
def test_every_limit_admits_its_value_and_refuses_one_more(
    limits: ImageLimits, at_limit: Callable[[], bytes], over_limit: Callable[[], bytes]
) -> None:
    """Each limit is inclusive: exactly at it validates, one unit over is invalid_image."""
    validate_image(at_limit(), limits=limits)
    validate_image(over_limit())  # valid under the defaults
    with pytest.raises(MediaError, match=r"over the limit|more than") as caught:
        validate_image(over_limit(), limits=limits)
    assert caught.value.code == "invalid_image"


def test_the_default_pixel_limit_admits_25_megapixels() -> None:
    """A complete 5000x5000 image decodes; the same plus one row is refused unread."""
    assert DEFAULT_IMAGE_LIMITS.max_pixels == 25_000_000
    assert validate_image(samples.png_1bit(5000, 5000)).height == 5000
    with pytest.raises(MediaError, match="refused as a possible decompression bomb"):
        validate_image(samples.png_1bit(5000, 5001))


@pytest.mark.parametrize("field", sorted(ImageLimits.model_fields))
def test_limits_must_be_positive(field: str) -> None:
    """A zero limit is a ValidationError naming the field; limits are frozen."""
    with pytest.raises(ValidationError, match=field):
        ImageLimits(**{field: 0})
    with pytest.raises(ValidationError):
        DEFAULT_IMAGE_LIMITS.max_pixels = 1  # type: ignore[misc]


def _pillow_settings() -> tuple[object, ...]:
    return (
        Image.MAX_IMAGE_PIXELS,
        ImageFile.LOAD_TRUNCATED_IMAGES,
        tuple(warnings.filters),
    )


def test_pillow_global_settings_are_never_changed() -> None:
    """Validating valid and hostile images leaves Pillow's limits and the filters alone."""
    before = _pillow_settings()
    for _, build, _ in HOSTILE:
        with pytest.raises(MediaError):
            validate_image(build())
    for _, build, _, _ in VALID:
        validate_image(build())
    assert _pillow_settings() == before


def test_a_stricter_pillow_pixel_limit_also_applies(monkeypatch: pytest.MonkeyPatch) -> None:
    """An application's lower MAX_IMAGE_PIXELS refuses the image cleanly, with no warning."""
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 20)
    validate_image(make_png(4, 5))
    with pytest.raises(MediaError, match="MAX_IMAGE_PIXELS") as caught:
        validate_image(make_png(5, 5))
    assert caught.value.code == "invalid_image"


@pytest.mark.parametrize(
    "build",
    [
        lambda: _png()[:-12],
        lambda: _png()[: len(_png()) - 20],
        lambda: _jpeg()[:-2],
        lambda: _jpeg()[: len(_jpeg()) // 2],
        lambda: _gif()[:-1],
        lambda: _webp()[: len(_webp()) // 2],
    ],
    ids=["png-iend", "png-idat", "jpeg-eoi", "jpeg-half", "gif-trailer", "webp-half"],
)
def test_truncation_is_refused_even_if_pillow_loads_truncated_images(
    monkeypatch: pytest.MonkeyPatch, build: Callable[[], bytes]
) -> None:
    """LOAD_TRUNCATED_IMAGES=True in the application does not let a cut image through."""
    monkeypatch.setattr(ImageFile, "LOAD_TRUNCATED_IMAGES", True)
    with pytest.raises(MediaError, match=r"truncated|no IEND|no trailer"):
        validate_image(build())


def test_sniff_image_reads_only_the_header() -> None:
    """sniff_image gives the declared size of a bomb; validate_image refuses it."""
    info = sniff_image(samples.png_bomb())
    assert (info.width, info.height) == (100_000, 100_000)
    with pytest.raises(MediaError):
        validate_image(samples.png_bomb())


def test_pillow_formats_cover_the_attachable_types() -> None:
    """Every attachable media type has a Pillow format."""
    assert set(PILLOW_FORMATS) == {"image/png", "image/jpeg", "image/gif", "image/webp"}


BOMBS: dict[str, Callable[[], bytes]] = {
    "png": samples.png_bomb,
    "png-complete": lambda: samples.png_1bit(16000, 16000),
    "gif": samples.gif_bomb,
    "gif-frame": samples.gif_frame_outside,
    "webp": samples.webp_lying_canvas,
    "jpeg-scans": lambda: samples.jpeg_scan_bomb(5000),
}
_BOMB_PROBE = (
    """
import json, resource, sys, time
from pathlib import Path
"""
    + PEAK_RSS_SOURCE
    + """
from taskctx.errors import MediaError
from taskctx.images import validate_image
bombs = {path.name: path.read_bytes() for path in sorted(Path(sys.argv[1]).iterdir())}
seconds = {}
for name, data in bombs.items():
    start = time.perf_counter()
    try:
        validate_image(data)
    except MediaError:
        seconds[name] = time.perf_counter() - start
print(json.dumps(
    {"seconds": seconds, "rss_mb": peak_rss_kib() / 1024, "pillow": "PIL" in sys.modules}
))
"""
)


def test_bombs_are_refused_fast_without_memory(tmp_path: Path) -> None:
    """In a child process every bomb is refused in under 1 s and peak RSS stays < 100 MB."""
    for name, build in BOMBS.items():
        (tmp_path / name).write_bytes(build())
    done = subprocess.run(
        [sys.executable, "-c", _BOMB_PROBE, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    report = json.loads(done.stdout)
    assert sorted(report["seconds"]) == sorted(BOMBS), report
    # a few ms when idle; decoding any of them would take seconds (the bound holds under load)
    assert max(report["seconds"].values()) < 1.0, report
    assert report["rss_mb"] < 100, report
    assert report["pillow"] is False, report  # refused from the header: nothing decoded


def test_import_taskctx_does_not_import_pillow() -> None:
    """Pillow is imported on the first decode, not by `import taskctx` or a refused bomb."""
    probe = (
        "import sys, taskctx, taskctx.images\n"
        "from taskctx.testing import make_png\n"
        "try:\n"
        "    taskctx.images.validate_image(make_png(100000, 100000, idat=b''))\n"
        "except taskctx.MediaError:\n"
        "    pass\n"
        "print('PIL' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "False"


_DECODE_PROBE = (
    """
import json, resource, sys, time
"""
    + PEAK_RSS_SOURCE
    + """
from taskctx.images import validate_image
data = open(sys.argv[1], "rb").read()
start = time.perf_counter()
info = validate_image(data)
print(json.dumps({"seconds": time.perf_counter() - start, "width": info.width,
                  "rss_mb": peak_rss_kib() / 1024}))
"""
)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("fmt", "size", "frames"),
    [("WEBP", (5000, 5000), 1), ("PNG", (5000, 5000), 1), ("GIF", (2500, 2000), 10)],
)
def test_the_largest_valid_images_decode_within_bounds(
    tmp_path: Path, fmt: str, size: tuple[int, int], frames: int
) -> None:
    """At the default limits a valid image decodes in a child in < 10 s and < 512 MB."""
    mode = "P" if fmt == "GIF" else "RGB"  # a palette GIF needs no quantising to build
    images = [Image.new(mode, size, n if mode == "P" else (n * 20, 9, 9)) for n in range(frames)]
    path = tmp_path / f"big.{fmt.lower()}"
    images[0].save(path, format=fmt, save_all=frames > 1, append_images=images[1:])
    del images
    done = subprocess.run(
        [sys.executable, "-c", _DECODE_PROBE, str(path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    report = json.loads(done.stdout)
    assert report["width"] == size[0]
    assert report["seconds"] < 10, report
    assert report["rss_mb"] < 512, report
