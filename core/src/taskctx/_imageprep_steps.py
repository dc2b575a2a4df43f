"""The image input policy and the Pillow steps it prescribes.

:class:`ImageInputPolicy` is what a consumer declares (:mod:`taskctx.model` names it
without importing Pillow or the validation); the steps below are what
:mod:`taskctx.imageprep` runs on an image it decoded once: segment rows, alpha,
downscaling and the encode ladder. Every step takes what it needs and returns a value
(the caller closes the images it owns). Pillow is imported on first use and its global
settings are never changed.
"""

from __future__ import annotations

import math
from io import BytesIO
from typing import TYPE_CHECKING, Any, NamedTuple

from pydantic import Field, model_validator

from taskctx.frozen import FrozenModel

if TYPE_CHECKING:
    from PIL.Image import Image

__all__ = [
    "DEFAULT_IMAGE_POLICY",
    "MAX_ROUNDS",
    "MAX_SEGMENTS",
    "Encoded",
    "Fitting",
    "ImageInputPolicy",
    "base64_size",
    "fit_and_encode",
    "format_bytes",
    "has_alpha",
    "segment_rows",
]

_KIB = 1024
_MIB = 1024 * 1024


def base64_size(n_bytes: int) -> int:
    """How many characters ``n_bytes`` bytes take in base64 (with padding)."""
    if n_bytes < 0:
        raise ValueError(f"a byte count cannot be negative, got {n_bytes}")
    return 4 * ((n_bytes + 2) // 3)


def format_bytes(n_bytes: int) -> str:
    """A byte count as a person reads it: ``5 MiB``, ``1.5 MiB``, ``300 KiB``, ``90 bytes``."""
    for unit, size in (("MiB", _MIB), ("KiB", _KIB)):
        if n_bytes >= size:
            whole, rest = divmod(n_bytes, size)
            return f"{whole} {unit}" if not rest else f"{n_bytes / size:.1f} {unit}"
    return f"{n_bytes} bytes"


class ImageInputPolicy(FrozenModel):
    """How images are prepared for a model (seed 003).

    A tall static image is split into full-width segments; any image or segment over a
    limit is downscaled and re-encoded until it fits, or refused. A limit of 0 is off.
    """

    segment_height: int = Field(default=4096, ge=1)
    """Height in px of the full-width segments a tall static image is split into."""
    segment_overlap: int = Field(default=50, ge=0)
    """Rows consecutive segments share; less than ``segment_height``."""
    tall_ratio: float = Field(default=2.0, gt=1, allow_inf_nan=False)
    """An image is tall when its height is over ``segment_height`` and at least
    ``tall_ratio`` times its width."""
    max_image_bytes: int = Field(default=5 * _MIB, ge=0)
    """Limit on the base64 size of each image or segment; 0 = no limit."""
    max_image_dimension: int = Field(default=8000, ge=0)
    """Largest width and height of each image or segment in px; 0 = no limit."""
    max_images: int = Field(default=20, ge=0)
    """How many images are kept (the latest of a request, the first in rank order of a
    package); 0 = no limit."""
    support_gif: bool = True
    """False: GIF input, static or animated, is refused (``gif_unsupported``)."""

    @model_validator(mode="after")
    def _overlap_below_height(self) -> ImageInputPolicy:
        if self.segment_overlap >= self.segment_height:
            raise ValueError(
                f"segment_overlap ({self.segment_overlap}) must be less than "
                f"segment_height ({self.segment_height})"
            )
        return self

    def is_tall(self, width: int, height: int) -> bool:
        """Whether a static image of ``width`` x ``height`` px is split into segments."""
        return height > self.segment_height and height >= self.tall_ratio * width

    def fits(self, width: int, height: int, n_bytes: int) -> bool:
        """Whether an image of this size and encoded length meets every limit."""
        side = self.max_image_dimension
        if side and max(width, height) > side:
            return False
        return not self.max_image_bytes or base64_size(n_bytes) <= self.max_image_bytes

    def limits_text(self) -> str:
        """The size limits in words (``8000 px a side and 5 MiB of base64``)."""
        parts = []
        if self.max_image_dimension:
            parts.append(f"{self.max_image_dimension} px a side")
        if self.max_image_bytes:
            parts.append(f"{format_bytes(self.max_image_bytes)} of base64")
        return " and ".join(parts) or "no size limit"


DEFAULT_IMAGE_POLICY = ImageInputPolicy()
"""The policy of a consumer that declares image attachments without an ``image_policy``."""


MAX_ROUNDS = 8
"""Sizes an image or segment is encoded at (its own or the largest within the side
limit, then smaller ones) before it is refused as over the limits."""

MAX_SEGMENTS = 64
"""Segments one image may become; a policy that would cut more is refused (over_limits)."""

_JPEG_QUALITIES = (85, 75, 60)
_SHRINK_MIN, _SHRINK_MAX = 0.3, 0.9
"""Bounds of the factor a side shrinks by between two rounds."""


class _Encoding(NamedTuple):
    pillow_format: str
    media_type: str
    options: dict[str, Any]


class Encoded(NamedTuple):
    """An image or segment encoded within the limits."""

    data: bytes
    media_type: str
    width: int
    height: int


class Fitting(NamedTuple):
    """What fitting one image or segment came to: the encoding that fits (None if none
    did), and the smallest one tried (its width, height and base64 size)."""

    encoded: Encoded | None
    smallest: tuple[int, int, int]


def segment_rows(height: int, policy: ImageInputPolicy) -> list[tuple[int, int]]:
    """``[top, bottom)`` rows of the full-width segments of a tall image: each
    ``segment_height`` high, overlapping the one before by ``segment_overlap``, the last
    one ending at the bottom."""
    step = policy.segment_height - policy.segment_overlap
    rows = []
    top = 0
    while True:
        bottom = min(top + policy.segment_height, height)
        rows.append((top, bottom))
        if bottom >= height:
            return rows
        top += step


def _ladder(source_media_type: str, alpha: bool) -> tuple[_Encoding, ...]:
    """The encodings tried at one size, best first: the source's own kind of format,
    then (for an image without alpha) JPEG at falling quality."""
    jpegs = tuple(
        _Encoding("JPEG", "image/jpeg", {"quality": q, "optimize": True}) for q in _JPEG_QUALITIES
    )
    if source_media_type == "image/jpeg":
        return jpegs
    if source_media_type == "image/webp":
        return tuple(
            _Encoding("WEBP", "image/webp", {"quality": q, "method": 4}) for q in _JPEG_QUALITIES
        )
    # zlib's default level: ``optimize`` (level 9 and a filter search) took 4x the time
    # for 3 % less on a tall screenshot's segment (bench request_filters)
    png = _Encoding("PNG", "image/png", {"compress_level": 6})
    return (png,) if alpha else (png, *jpegs)


def _translucent(band: Image) -> bool:
    """Whether an alpha band has a value below fully opaque."""
    low = band.getextrema()[0]
    return isinstance(low, (int, float)) and low < 255


def has_alpha(image: Image) -> bool:
    """Whether any pixel of ``image`` is not fully opaque."""
    if "transparency" in image.info and image.mode != "P":
        return True  # a colour key (tRNS of an RGB or grey PNG)
    if image.mode == "P" and "transparency" in image.info:
        with image.convert("RGBA") as rgba:
            return _translucent(rgba.getchannel("A"))
    if "A" in image.getbands():
        return _translucent(image.getchannel("A"))
    return False


_MODES = {
    "PNG": frozenset({"1", "L", "LA", "P", "RGB", "RGBA", "I", "I;16"}),
    "JPEG": frozenset({"L", "RGB", "CMYK"}),
    "WEBP": frozenset({"RGB", "RGBA"}),
}


def _encode(image: Image, encoding: _Encoding, alpha: bool) -> bytes:
    """``image`` encoded as ``encoding`` (converted to a mode the format stores)."""
    converted = None
    if image.mode not in _MODES[encoding.pillow_format]:
        target = "L" if image.mode == "1" and encoding.pillow_format == "JPEG" else "RGB"
        if alpha and encoding.pillow_format != "JPEG":
            target = "RGBA"
        converted = image.convert(target)
    out = BytesIO()
    try:
        (converted or image).save(out, format=encoding.pillow_format, **encoding.options)
    finally:
        if converted is not None:
            converted.close()
    return out.getvalue()


def _within_side(width: int, height: int, side: int) -> tuple[int, int]:
    """The size ``width`` x ``height`` scales to proportionally so neither is over
    ``side`` (itself when it fits, or when ``side`` is 0)."""
    if not side or max(width, height) <= side:
        return width, height
    scale = side / max(width, height)
    return max(1, min(side, round(width * scale))), max(1, min(side, round(height * scale)))


def _resized(image: Image, size: tuple[int, int], alpha: bool) -> Image:
    """A LANCZOS-resized copy of ``image`` (palette and bilevel images in full colour)."""
    from PIL import Image as PILImage

    if image.mode in ("1", "P", "PA"):
        target = "RGBA" if alpha else ("L" if image.mode == "1" else "RGB")
        full = image.convert(target)
        try:
            return full.resize(size, PILImage.Resampling.LANCZOS)
        finally:
            full.close()
    return image.resize(size, PILImage.Resampling.LANCZOS)


def _smaller(size: tuple[int, int], b64: int, limit: int) -> tuple[int, int]:
    """The next, smaller size to try after an encoding of ``b64`` base64 bytes was over
    ``limit``: both sides shrink by about the square root of the ratio."""
    factor = math.sqrt(limit / b64) * 0.95 if b64 else _SHRINK_MAX
    factor = min(_SHRINK_MAX, max(_SHRINK_MIN, factor))
    return max(1, int(size[0] * factor)), max(1, int(size[1] * factor))


def fit_and_encode(
    image: Image, source_media_type: str, policy: ImageInputPolicy, alpha: bool
) -> Fitting:
    """Encode ``image`` within the policy's side and byte limits: downscaled to the side
    limit, each encoding of the ladder tried, then smaller sizes, :data:`MAX_ROUNDS`
    sizes in all. ``image`` stays the caller's; the copies made here are closed."""
    ladder = _ladder(source_media_type, alpha)
    size = _within_side(image.width, image.height, policy.max_image_dimension)
    smallest = (size[0], size[1], 0)
    limit = policy.max_image_bytes
    current = image
    try:
        for _ in range(MAX_ROUNDS):
            if current.size != size:
                if current is not image:
                    current.close()
                current = _resized(image, size, alpha)
            best = 0
            for encoding in ladder:
                data = _encode(current, encoding, alpha)
                b64 = base64_size(len(data))
                if not limit or b64 <= limit:
                    return Fitting(Encoded(data, encoding.media_type, *size), smallest)
                best = min(best, b64) if best else b64
            smallest = (size[0], size[1], best)
            if size == (1, 1):
                break
            size = _smaller(size, best, limit)
        return Fitting(None, smallest)
    finally:
        if current is not image:
            current.close()
