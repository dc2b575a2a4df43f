"""Image preparation: an image brought within what a model takes, or refused with a reason.

:func:`prepare_image` runs after the one safety check every image passes
(:func:`taskctx.images.validate_image`: bombs, corrupt and mislabelled files are refused
before anything else) and then, by an :class:`ImageInputPolicy`:

1. applies the EXIF orientation (an image whose orientation is not 1 is re-encoded
   upright, whatever its size);
2. splits a tall static image into full-width segments ``segment_height`` high that
   overlap by ``segment_overlap`` rows, the last one ending at the bottom;
3. downscales any image or segment over ``max_image_dimension`` on a side (LANCZOS,
   proportionally), and re-encodes one over ``max_image_bytes`` of base64 (PNG
   at zlib's default level, JPEG at quality 85/75/60 for an image without alpha, WebP stays WebP),
   then smaller, :data:`MAX_ROUNDS` sizes at most, before refusing it ``over_limits``.

An image that meets every limit, is not tall and has no orientation to apply passes
through byte for byte (``changed=False``). An animated image is never split nor turned
into a still: within the limits it passes through, over them it is refused. The image is
decoded once; segments are cropped from it and encoded one by one. Pillow's global
settings are never changed.
"""

from __future__ import annotations

import re
from io import BytesIO
from typing import TYPE_CHECKING

from pydantic import Field

from taskctx._imageprep_steps import (
    DEFAULT_IMAGE_POLICY,
    MAX_ROUNDS,
    MAX_SEGMENTS,
    Encoded,
    ImageInputPolicy,
    base64_size,
    fit_and_encode,
    format_bytes,
    has_alpha,
    segment_rows,
)
from taskctx.codes import ProblemCode, StrChoice
from taskctx.errors import MediaError
from taskctx.frozen import FrozenModel
from taskctx.images import (
    ATTACHABLE_IMAGE_MEDIA_TYPES,
    DEFAULT_IMAGE_LIMITS,
    PILLOW_FORMATS,
    ImageInfo,
    sniff_image,
    validate_image,
)
from taskctx.media import _magic_of

if TYPE_CHECKING:
    from PIL.Image import Image

__all__ = [
    "DEFAULT_IMAGE_POLICY",
    "MAX_ROUNDS",
    "MAX_SEGMENTS",
    "ImageInputPolicy",
    "ImagePreparationError",
    "ImageRejection",
    "ImageSegment",
    "PreparedImage",
    "base64_size",
    "explain_rejection",
    "prepare_image",
    "untouched",
]

_ORIENTATION_TAG = 0x0112
_KIND = {"image/png": "PNG", "image/jpeg": "JPEG", "image/gif": "GIF", "image/webp": "WebP"}
_MAX_EXPLANATION = 300
_MAX_LABEL = 120


class ImageRejection(StrChoice):
    """Why :func:`prepare_image` refused an image (``ImagePreparationError.reason``)."""

    CORRUPT = "corrupt"
    """The bytes fail validation: empty, truncated, corrupt, mislabelled, or over a cost
    limit of :class:`taskctx.images.ImageLimits` (file size, frames, scans)."""
    DECOMPRESSION_BOMB = "decompression_bomb"
    """The header declares more pixels, or a longer side, than validation decodes."""
    UNSUPPORTED_FORMAT = "unsupported_format"
    """Not a PNG, JPEG, GIF or WebP image."""
    GIF_UNSUPPORTED = "gif_unsupported"
    """A GIF, and the policy says ``support_gif=False``."""
    OVER_LIMITS = "over_limits"
    """It cannot be brought within the policy's side and byte limits (an animated image
    over them, which is never resized, or one still over them after every attempt)."""


_CODES: dict[ImageRejection, ProblemCode] = {
    ImageRejection.CORRUPT: ProblemCode.INVALID_IMAGE,
    ImageRejection.DECOMPRESSION_BOMB: ProblemCode.INVALID_IMAGE,
    ImageRejection.UNSUPPORTED_FORMAT: ProblemCode.INVALID_IMAGE,
    ImageRejection.GIF_UNSUPPORTED: ProblemCode.INVALID_MEDIA,
    ImageRejection.OVER_LIMITS: ProblemCode.TOO_LARGE,
}
"""The ``MediaError.code`` of each rejection: the three validation refusals are
``invalid_image``, exactly as :func:`~taskctx.images.validate_image` raises them."""


class ImagePreparationError(MediaError):
    """An image :func:`prepare_image` refused; ``reason`` says why, the message what was
    wrong and the limit. ``width``/``height`` are the image's (None when unknown),
    ``limits`` the policy's limits in words."""

    def __init__(
        self,
        message: str,
        reason: ImageRejection,
        *,
        width: int | None = None,
        height: int | None = None,
        animated: bool = False,
        limits: str | None = None,
    ) -> None:
        super().__init__(message, code=_CODES[reason])
        self.reason = reason
        self.width = width
        self.height = height
        self.animated = animated
        self.limits = limits


class ImageSegment(FrozenModel):
    """One encoded image a prepared image became: the whole of it, or one segment."""

    index: int = Field(ge=0)
    """0-based position among the image's segments."""
    count: int = Field(ge=1)
    """How many segments the image became (1 when it was not split)."""
    media_type: str
    data: bytes
    width: int
    height: int
    top: int
    """First pixel row of the (orientation-corrected) original this covers."""
    bottom: int
    """One past the last row it covers."""

    @property
    def base64_size(self) -> int:
        """The length of ``data`` in base64."""
        return base64_size(len(self.data))


class PreparedImage(FrozenModel):
    """An image prepared by a policy: what the original is, and what it became."""

    media_type: str
    """The original's real media type."""
    width: int
    """The original's width after its EXIF orientation."""
    height: int
    bytes: int
    """The original's encoded size."""
    animated: bool
    changed: bool
    """False: the one segment is the original bytes, untouched."""
    segments: tuple[ImageSegment, ...]


def prepare_image(
    data: bytes, policy: ImageInputPolicy | None = None, *, media_type: str | None = None
) -> PreparedImage:
    """``data`` validated and brought within ``policy`` (the default policy if None).

    ``media_type``, if given, must agree with the bytes. Raises
    :class:`ImagePreparationError` with the reason the image cannot be prepared.
    """
    policy = policy or DEFAULT_IMAGE_POLICY
    info = _validated(data, media_type)
    if info.media_type == "image/gif" and not policy.support_gif:
        raise ImagePreparationError(
            f"GIF image of {info.width}x{info.height} px: this policy takes no GIF "
            "(support_gif=False)",
            ImageRejection.GIF_UNSUPPORTED,
            width=info.width,
            height=info.height,
        )
    from PIL import Image as PILImage  # on first use: `import taskctx` stays light
    from PIL import ImageOps

    with PILImage.open(BytesIO(data), formats=[PILLOW_FORMATS[info.media_type]]) as image:
        frames = getattr(image, "n_frames", 1)
        if frames > 1:
            return _animated(data, info, frames, policy)
        orientation = _orientation(image)
        if (
            orientation == 1
            and not policy.is_tall(info.width, info.height)
            and policy.fits(info.width, info.height, len(data))
        ):
            return untouched(data, info)
        image.load()
        upright = image
        if orientation != 1:
            upright = ImageOps.exif_transpose(image)
            image.close()  # its pixels are the upright copy's now: one decoded image held
        try:
            return _prepared(upright, data, info.media_type, policy)
        finally:
            if upright is not image:
                upright.close()


def _validated(data: bytes, media_type: str | None) -> ImageInfo:
    """The validated image's real type and size, or why it is refused."""
    try:
        return validate_image(data, media_type)
    except MediaError as exc:
        reason, width, height = _rejection_of(data, media_type)
        raise ImagePreparationError(str(exc), reason, width=width, height=height) from None


def _rejection_of(
    data: bytes, media_type: str | None
) -> tuple[ImageRejection, int | None, int | None]:
    """Why validation refused ``data``, from its signature and header alone."""
    magic = _magic_of(data) if data else None
    if data and (magic is None or magic.media_type not in ATTACHABLE_IMAGE_MEDIA_TYPES):
        return ImageRejection.UNSUPPORTED_FORMAT, None, None
    try:
        info = sniff_image(data, media_type)
    except MediaError:
        return ImageRejection.CORRUPT, None, None
    limits = DEFAULT_IMAGE_LIMITS
    pixels = info.width * info.height
    if max(info.width, info.height) > limits.max_side or pixels > limits.max_pixels:
        return ImageRejection.DECOMPRESSION_BOMB, info.width, info.height
    return ImageRejection.CORRUPT, info.width, info.height


def _orientation(image: Image) -> int:
    """The EXIF orientation (2-8) that changes how ``image`` shows; 1 for any other."""
    try:
        value = image.getexif().get(_ORIENTATION_TAG, 1)
    except Exception:  # a malformed EXIF block: nothing to apply
        return 1
    return value if isinstance(value, int) and 2 <= value <= 8 else 1


def untouched(data: bytes, info: ImageInfo, *, animated: bool = False) -> PreparedImage:
    """The original, validated as ``info`` says, as its own one segment (``changed=False``)."""
    segment = ImageSegment(
        index=0,
        count=1,
        media_type=info.media_type,
        data=data,
        width=info.width,
        height=info.height,
        top=0,
        bottom=info.height,
    )
    return PreparedImage(
        media_type=info.media_type,
        width=info.width,
        height=info.height,
        bytes=len(data),
        animated=animated,
        changed=False,
        segments=(segment,),
    )


def _animated(data: bytes, info: ImageInfo, frames: int, policy: ImageInputPolicy) -> PreparedImage:
    """An animated image passes through whole within the limits; over them it is refused."""
    if policy.fits(info.width, info.height, len(data)):
        return untouched(data, info, animated=True)
    raise ImagePreparationError(
        f"animated {_KIND[info.media_type]} image of {info.width}x{info.height} px "
        f"({frames} frames, {format_bytes(base64_size(len(data)))} of base64) is over "
        f"{policy.limits_text()}; an animation is never resized, split or made a still",
        ImageRejection.OVER_LIMITS,
        width=info.width,
        height=info.height,
        animated=True,
        limits=policy.limits_text(),
    )


def _prepared(
    upright: Image, data: bytes, media_type: str, policy: ImageInputPolicy
) -> PreparedImage:
    """The segments of a decoded, upright static image, each within the limits."""
    width, height = upright.size
    alpha = has_alpha(upright)
    rows = segment_rows(height, policy) if policy.is_tall(width, height) else [(0, height)]
    if len(rows) > MAX_SEGMENTS:
        raise _over_limits(
            f"{_KIND[media_type]} image of {width}x{height} px would be split into "
            f"{len(rows)} segments of {policy.segment_height} px, over the limit of "
            f"{MAX_SEGMENTS} segments",
            width,
            height,
            policy,
        )
    segments = []
    for index, (top, bottom) in enumerate(rows):
        encoded = _fitted(upright, media_type, policy, alpha, (index, len(rows), top, bottom))
        segments.append(
            ImageSegment(
                index=index,
                count=len(rows),
                media_type=encoded.media_type,
                data=encoded.data,
                width=encoded.width,
                height=encoded.height,
                top=top,
                bottom=bottom,
            )
        )
    return PreparedImage(
        media_type=media_type,
        width=width,
        height=height,
        bytes=len(data),
        animated=False,
        changed=True,
        segments=tuple(segments),
    )


def _fitted(
    upright: Image,
    media_type: str,
    policy: ImageInputPolicy,
    alpha: bool,
    at: tuple[int, int, int, int],
) -> Encoded:
    """Segment ``at`` = (index, count, top, bottom) of ``upright``, encoded within the
    limits, or the error saying it cannot be."""
    index, count, top, bottom = at
    width, height = upright.size
    whole = count == 1
    piece = upright if whole else upright.crop((0, top, width, bottom))
    try:
        fitting = fit_and_encode(piece, media_type, policy, alpha)
    finally:
        if piece is not upright:
            piece.close()
    if fitting.encoded is not None:
        return fitting.encoded
    what = f"{_KIND[media_type]} image of {width}x{height} px"
    if not whole:
        what = f"segment {index + 1} of {count} (rows {top}-{bottom}) of a {what}"
    small_w, small_h, small_b64 = fitting.smallest
    raise _over_limits(
        f"{what} cannot be brought within {policy.limits_text()}: at {small_w}x{small_h} "
        f"px, the smallest of {MAX_ROUNDS} sizes tried, it still takes "
        f"{format_bytes(small_b64)} of base64",
        width,
        height,
        policy,
    )


def _over_limits(
    message: str, width: int, height: int, policy: ImageInputPolicy
) -> ImagePreparationError:
    return ImagePreparationError(
        message,
        ImageRejection.OVER_LIMITS,
        width=width,
        height=height,
        limits=policy.limits_text(),
    )


_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u200b-\u200f\u202a-\u202e]")


def _one_line(label: str) -> str:
    """``label`` on one line of at most :data:`_MAX_LABEL` characters."""
    text = _UNPRINTABLE.sub("?", label).strip() or "an image"
    return text if len(text) <= _MAX_LABEL else text[: _MAX_LABEL - 1] + "\u2026"


def explain_rejection(error: ImagePreparationError, label: str) -> str:
    """The one line a request shows instead of the image ``label`` names (at most 300
    characters; never the image's bytes)."""
    name = _one_line(label)
    size = f"{error.width}x{error.height} px" if error.width and error.height else None
    reason = error.reason
    if reason is ImageRejection.OVER_LIMITS and error.animated:
        why = f"{name} is an animation of {size} over {error.limits}; it is never resized"
    elif reason is ImageRejection.OVER_LIMITS:
        why = f"{name} is {size}; it cannot be brought within {error.limits}"
    elif reason is ImageRejection.GIF_UNSUPPORTED:
        why = f"{name} is a GIF, which this model does not take"
    elif reason is ImageRejection.DECOMPRESSION_BOMB:
        why = f"{name} declares {size}, refused as a possible decompression bomb"
    elif reason is ImageRejection.UNSUPPORTED_FORMAT:
        why = f"{name} is not a PNG, JPEG, GIF or WebP image"
    else:
        why = f"{name} is not a valid image"
    text = f"[image omitted from this request: {why} ({reason.value})]"
    if len(text) > _MAX_EXPLANATION:  # limits are kernel words: only a long label gets here
        text = text[: _MAX_EXPLANATION - 2] + "\u2026]"
    return text
