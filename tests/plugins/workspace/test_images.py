"""Image validation: the kernel's header check plus a real decode with Pillow."""

from __future__ import annotations

import io
import zlib

import pytest
from PIL import Image
from taskctx_workspace.images import PILLOW_FORMATS, validate_image

from taskctx.errors import MediaError
from taskctx.testing import make_png
from tests.plugins.workspace.helpers import png_bytes


def _encoded(fmt: str, size: tuple[int, int] = (5, 4)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, (30, 60, 90)).save(out, format=fmt)
    return out.getvalue()


@pytest.mark.parametrize(("fmt", "media_type"), [(v, k) for k, v in PILLOW_FORMATS.items()])
def test_valid_images_pass(fmt: str, media_type: str) -> None:
    """Real PNG, JPEG, GIF and WebP files made by Pillow validate with their size."""
    info = validate_image(_encoded(fmt), media_type)
    assert (info.media_type, info.width, info.height) == (media_type, 5, 4)
    assert validate_image(_encoded(fmt)).media_type == media_type


VALID = png_bytes(16, 16)
BROKEN: list[tuple[str, bytes]] = [
    ("empty", b""),
    ("signature only", b"\x89PNG\r\n\x1a\n"),
    ("garbage after signature", b"\x89PNG\r\n\x1a\ngarbage" * 3),
    ("truncated", VALID[: len(VALID) // 2]),
    ("truncated before IEND", VALID[:-12]),
    ("garbage", b"definitely not an image"),
    ("zero bytes", b"\x00" * 64),
    ("corrupt pixels", make_png(4, 4, idat=zlib.compress(b"\x00" * 5))),
    ("bad zlib", make_png(4, 4, idat=b"not zlib data at all")),
    ("truncated JPEG", _encoded("JPEG", (64, 64))[:200]),
    ("truncated GIF", _encoded("GIF", (64, 64))[:30]),
]


@pytest.mark.parametrize(("case", "data"), BROKEN, ids=[case for case, _ in BROKEN])
def test_broken_images_fail_with_invalid_image(case: str, data: bytes) -> None:
    """Empty, truncated, garbage or undecodable images raise MediaError(invalid_image)."""
    with pytest.raises(MediaError) as info:
        validate_image(data, "image/png")
    assert info.value.code == "invalid_image", case


def test_declared_type_must_match_the_bytes() -> None:
    """A PNG declared as JPEG is refused."""
    with pytest.raises(MediaError) as info:
        validate_image(png_bytes(), "image/jpeg")
    assert info.value.code == "invalid_image"


@pytest.mark.parametrize("side", [10_000, 30_000])
def test_decompression_bombs_are_refused(side: int) -> None:
    """Pillow's bomb warning (and error) become invalid_image; nothing is decoded."""
    with pytest.raises(MediaError, match="decompression bomb") as info:
        validate_image(make_png(side, side, idat=zlib.compress(b"\x00" * 10)), "image/png")
    assert info.value.code == "invalid_image"
