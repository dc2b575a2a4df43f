"""Image validation before an image becomes an attachment: header checks and a real decode.

The kernel's :func:`taskctx.media.sniff_image` checks the magic bytes and header (PNG,
JPEG, GIF, WebP) and the declared type; Pillow then verifies and fully decodes the
pixels. Anything empty, truncated, garbage, inconsistent or a decompression bomb raises
``MediaError(code="invalid_image")``. Pillow's global settings are never changed.
"""

from __future__ import annotations

import warnings
from io import BytesIO

from PIL import Image

from taskctx.errors import MediaError
from taskctx.media import ImageInfo, sniff_image

__all__ = ["PILLOW_FORMATS", "validate_image"]

# --- Table: media type -> Pillow format name (keys: the kernel's attachable types). ----
PILLOW_FORMATS: dict[str, str] = {
    "image/png": "PNG",
    "image/jpeg": "JPEG",
    "image/gif": "GIF",
    "image/webp": "WEBP",
}


def _invalid(message: str) -> MediaError:
    return MediaError(message, code="invalid_image")


def validate_image(data: bytes, declared_media_type: str | None = None) -> ImageInfo:
    """The validated media type and size of ``data``, or ``MediaError("invalid_image")``."""
    try:
        info = sniff_image(data, declared_media_type)
    except MediaError as exc:
        raise _invalid(str(exc)) from None
    expected = PILLOW_FORMATS[info.media_type]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(BytesIO(data), formats=[expected]) as image:
                image.verify()
            with Image.open(BytesIO(data), formats=[expected]) as image:
                image.load()
                decoded = (image.format, image.width, image.height)
    except (Image.DecompressionBombWarning, Image.DecompressionBombError) as exc:
        raise _invalid(f"image refused as a decompression bomb: {exc}") from None
    except Exception as exc:  # Pillow raises many types on bad data; all mean invalid
        raise _invalid(f"{expected} image does not decode: {type(exc).__name__}: {exc}") from None
    if decoded != (expected, info.width, info.height):
        raise _invalid(
            f"the header says {expected} {info.width}x{info.height} but Pillow decoded "
            f"{decoded[0]} {decoded[1]}x{decoded[2]}"
        )
    return info
