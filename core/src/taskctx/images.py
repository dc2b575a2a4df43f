"""Image validation: the one check every image passes before it becomes an attachment.

The reader calls :func:`validate_image` on every image it attaches, whatever source the
bytes came from (direct entries, a workspace, records, a repository, skills, a
third-party source). Four steps, cheapest first, each refusing with
``MediaError(code=ProblemCode.INVALID_IMAGE)`` and a message naming what is wrong:

1. the byte count against :attr:`ImageLimits.max_bytes`;
2. the header (:func:`sniff_image`): a PNG, JPEG, GIF or WebP signature, agreement with
   the declared media type, and the declared size against the pixel and side limits,
   so a decompression bomb is refused before anything is allocated for its pixels;
3. a walk of the whole file's structure (chunks and checksums, segments and scans,
   blocks, frame extents, the end marker) that counts frames and JPEG scans, so the
   cost of the decode is known and bounded before it starts;
4. a full decode of every frame with Pillow, its own reading of the size re-checked.

Pillow is imported on first use only, and its global settings (``MAX_IMAGE_PIXELS``,
``LOAD_TRUNCATED_IMAGES``, warning filters) are never changed: the limits here are the
kernel's own, and the stricter of them and Pillow's ``MAX_IMAGE_PIXELS`` applies.
"""

from __future__ import annotations

from io import BytesIO

from pydantic import Field

from taskctx._image_formats import HEADER_PARSERS, STRUCTURE_WALKS, Structure, invalid
from taskctx.errors import MediaError
from taskctx.media import _magic_of, normalize_media_type
from taskctx.model import FrozenModel

__all__ = [
    "ATTACHABLE_IMAGE_MEDIA_TYPES",
    "DEFAULT_IMAGE_LIMITS",
    "PILLOW_FORMATS",
    "ImageInfo",
    "ImageLimits",
    "sniff_image",
    "validate_image",
]

# --- Table: attachable media type -> Pillow format name. -------------------------------
PILLOW_FORMATS: dict[str, str] = {
    "image/png": "PNG",
    "image/jpeg": "JPEG",
    "image/gif": "GIF",
    "image/webp": "WEBP",
}

ATTACHABLE_IMAGE_MEDIA_TYPES: frozenset[str] = frozenset(PILLOW_FORMATS)
"""Raster image types :func:`validate_image` knows; only these can become attachments."""


class ImageInfo(FrozenModel):
    """A raster image as its bytes declare it: its real media type and pixel dimensions."""

    media_type: str
    width: int
    height: int


class ImageLimits(FrozenModel):
    """What one image may cost to validate; over any of them it is ``invalid_image``.

    With the defaults the costliest valid images measured (a 25-megapixel WebP, a
    20-scan progressive JPEG, 50 megapixels of GIF frames) decode in under 2 s with a
    peak of under 500 MB; a bomb is refused from its header in well under a millisecond.
    """

    max_bytes: int = Field(default=20 * 1024 * 1024, ge=1)
    """Size of the encoded file."""
    max_pixels: int = Field(default=25_000_000, ge=1)
    """Width times height of the canvas, from the header, before any decode."""
    max_side: int = Field(default=65_535, ge=1)
    """Width and height each. The pixel limits bound the cost; this only refuses sides
    no PNG, JPEG or GIF encoder writes, so a full-page screenshot (1,280 x 19,000 px)
    passes and is split by :mod:`taskctx.imageprep`."""
    max_frames: int = Field(default=256, ge=1)
    """Frames of an animated GIF, PNG (APNG) or WebP."""
    max_total_pixels: int = Field(default=50_000_000, ge=1)
    """Canvas pixels times frames: what decoding every frame costs."""
    max_scans: int = Field(default=64, ge=1)
    """Scans of a progressive JPEG."""
    max_scan_pixels: int = Field(default=500_000_000, ge=1)
    """Canvas pixels times JPEG scans: each scan is a pass over the whole image."""
    max_chunks: int = Field(default=200_000, ge=1)
    """Chunks, segments or blocks the structure walk may meet."""


DEFAULT_IMAGE_LIMITS = ImageLimits()


def sniff_image(data: bytes, declared_media_type: str | None = None) -> ImageInfo:
    """Read a PNG, GIF, JPEG or WebP header; ``MediaError`` unless it is a valid header.

    Empty data, an unknown or truncated header, a zero dimension, or a declared media
    type that disagrees with the bytes all raise :class:`~taskctx.errors.MediaError`
    (code ``invalid_image``). Only the header is read: :func:`validate_image` checks
    the whole image.
    """
    if not data:
        raise invalid("empty image data")
    magic = _magic_of(data)
    if magic is None or magic.media_type not in HEADER_PARSERS:
        found = f"{magic.name} data" if magic is not None else f"unrecognised bytes {data[:8]!r}"
        raise invalid(f"not a PNG, JPEG, GIF or WebP image: {found}")
    if declared_media_type is not None:
        declared = normalize_media_type(declared_media_type)
        if declared != magic.media_type:
            raise invalid(
                f"declared media type {declared!r} does not match the bytes ({magic.media_type})"
            )
    width, height = HEADER_PARSERS[magic.media_type](data)
    if width <= 0 or height <= 0:
        raise invalid(f"{magic.name} image has a zero dimension ({width}x{height})")
    return ImageInfo(media_type=magic.media_type, width=width, height=height)


def validate_image(
    data: bytes,
    declared_media_type: str | None = None,
    *,
    limits: ImageLimits = DEFAULT_IMAGE_LIMITS,
) -> ImageInfo:
    """The real media type and size of a fully valid image, or ``MediaError``.

    Every refusal is ``MediaError(code=ProblemCode.INVALID_IMAGE)``: empty, over a limit,
    mislabelled, truncated, corrupt, or a decompression bomb (refused from its header,
    before any pixel is decoded).
    """
    if not data:
        raise invalid("empty image data")
    if len(data) > limits.max_bytes:
        raise invalid(f"image of {len(data)} bytes is over the limit of {limits.max_bytes} bytes")
    info = sniff_image(data, declared_media_type)
    _check_canvas(info, limits)
    structure = STRUCTURE_WALKS[info.media_type](data, info.width, info.height, limits.max_chunks)
    _check_cost(info, structure, limits)
    _decode(data, info, structure)
    return info


def _check_canvas(info: ImageInfo, limits: ImageLimits) -> None:
    size = f"{info.width}x{info.height}"
    if max(info.width, info.height) > limits.max_side:
        raise invalid(
            f"image of {size} pixels has a side over the limit of {limits.max_side}: "
            "refused before decoding"
        )
    pixels = info.width * info.height
    if pixels > limits.max_pixels:
        raise invalid(
            f"image of {size} ({pixels} pixels) is over the limit of {limits.max_pixels} "
            "pixels: refused as a possible decompression bomb before decoding"
        )


def _check_cost(info: ImageInfo, structure: Structure, limits: ImageLimits) -> None:
    if structure.frames > limits.max_frames:
        raise invalid(
            f"image of {structure.frames} frames is over the limit of {limits.max_frames} "
            "frames: refused before decoding"
        )
    total = structure.frames * info.width * info.height
    if total > limits.max_total_pixels:
        raise invalid(
            f"{structure.frames} frames of {info.width}x{info.height} make {total} pixels "
            f"to decode, over the limit of {limits.max_total_pixels}: refused before decoding"
        )
    if structure.scans > limits.max_scans:
        raise invalid(
            f"JPEG of {structure.scans} scans is over the limit of {limits.max_scans} scans: "
            "refused before decoding"
        )
    passes = structure.scans * info.width * info.height
    if passes > limits.max_scan_pixels:
        raise invalid(
            f"{structure.scans} scans of {info.width}x{info.height} make {passes} pixels to "
            f"decode, over the limit of {limits.max_scan_pixels}: refused before decoding"
        )


def _decode(data: bytes, info: ImageInfo, structure: Structure) -> None:
    """Decode every frame with Pillow; its size must stay the one the header declared."""
    from PIL import Image  # imported on first use: `import taskctx` stays light

    pillow_limit = Image.MAX_IMAGE_PIXELS
    if pillow_limit is not None and info.width * info.height > pillow_limit:
        raise invalid(
            f"image of {info.width}x{info.height} is over Pillow's MAX_IMAGE_PIXELS "
            f"({pillow_limit}): refused before decoding"
        )
    expected = PILLOW_FORMATS[info.media_type]
    try:
        with Image.open(BytesIO(data), formats=[expected]) as image:
            for frame in range(structure.frames):
                if frame:
                    image.seek(frame)
                if image.size != (info.width, info.height):
                    raise invalid(
                        f"the header says {info.width}x{info.height} but Pillow reads frame "
                        f"{frame + 1} as {image.size[0]}x{image.size[1]}"
                    )
                image.load()
            try:
                image.seek(structure.frames)
            except EOFError:
                pass
            else:
                raise invalid(f"Pillow finds more than the {structure.frames} frame(s) walked")
    except MediaError:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise invalid(f"image refused as a decompression bomb: {exc}") from None
    except Exception as exc:  # Pillow raises many types on bad data; all mean invalid
        raise invalid(f"{expected} image does not decode: {type(exc).__name__}: {exc}") from None
