"""The package side of image preparation: an image candidate's read becomes attachments.

The :class:`~taskctx.assembly.PageAssembler` decides whether an image may join a page
(how many images it holds, the blocks left); :func:`read_image` reads and validates or
prepares one by the consumer's policy (in a worker thread), and :func:`attachments_of`
makes the attachments of what it became, one per segment, in order.
"""

from __future__ import annotations

import asyncio
import base64

import attrs

from taskctx.aliases import AliasTable
from taskctx.candidates import Candidate
from taskctx.codes import OmissionReason, ProblemCode
from taskctx.errors import MediaError
from taskctx.imageprep import (
    ImageInputPolicy,
    ImagePreparationError,
    ImageRejection,
    PreparedImage,
    prepare_image,
    untouched,
)
from taskctx.images import sniff_image, validate_image
from taskctx.media import OCTET_STREAM, normalize_media_type
from taskctx.model import Attachment
from taskctx.readback import Readback

__all__ = ["ImageOmission", "attachments_of", "read_image", "segment_ref_scope"]

_OMITTED: dict[ImageRejection, OmissionReason] = {
    ImageRejection.OVER_LIMITS: OmissionReason.IMAGE_OVER_LIMITS,
    ImageRejection.GIF_UNSUPPORTED: OmissionReason.IMAGE_UNSUPPORTED,
}
"""Rejections that omit an image; any other (corrupt, a bomb, another format) fails the
read with ``invalid_image``, as validation always has."""


@attrs.define(slots=True, frozen=True)
class ImageOmission:
    """Why a valid image cannot be attached for this consumer: its omission."""

    reason: OmissionReason
    detail: str


def segment_ref_scope(segment: int, segments: int) -> str:
    """The scope of segment ``segment`` (1-based) of ``segments``: ``segment:2/3``."""
    return f"segment:{segment}/{segments}"


def _check_declared(data: bytes, declared: list[str]) -> None:
    """What the descriptor and the read each say the image is must be what it is."""
    real = sniff_image(data).media_type
    for said in declared:
        if said not in (real, OCTET_STREAM):
            raise MediaError(
                f"the source declares {said} but the bytes are {real}",
                code=ProblemCode.INVALID_IMAGE,
            )


async def read_image(
    readback: Readback, candidate: Candidate, policy: ImageInputPolicy | None
) -> PreparedImage | ImageOmission:
    """The candidate's image validated and prepared by ``policy`` (validated only when
    None), or the omission that replaces it; ``MediaError`` (``invalid_image``, naming
    the ref) when it is not a valid image of the type declared for it."""
    read = await readback.read(candidate, None)
    if read.data is None:  # text under an image claim is never OCR to show: it fails
        came = "text" if read.text is not None else "no content"
        raise MediaError(
            f"{candidate.ref}: the descriptor claims an image but the read returned {came}",
            code=ProblemCode.INVALID_IMAGE,
        )
    data = read.data
    declared = [normalize_media_type(t) for t in (candidate.media_type, read.media_type)]
    try:
        _check_declared(data, declared)
        if policy is None:
            return await asyncio.to_thread(lambda: untouched(data, validate_image(data)))
        return await asyncio.to_thread(prepare_image, data, policy)
    except ImagePreparationError as exc:
        reason = _OMITTED.get(exc.reason)
        if reason is not None:
            return ImageOmission(reason, str(exc))
        raise MediaError(f"{candidate.ref}: {exc}", code=ProblemCode.INVALID_IMAGE) from None
    except MediaError as exc:
        raise MediaError(f"{candidate.ref}: {exc}", code=ProblemCode.INVALID_IMAGE) from None


def attachments_of(
    prepared: PreparedImage, candidate: Candidate, aliases: AliasTable
) -> list[Attachment]:
    """The attachments of a prepared image in order: the image itself under the
    candidate's ref, or one per segment under ``segment:<i>/<n>`` scopes of it."""
    count = len(prepared.segments)
    split = count > 1
    attachments = []
    for segment in prepared.segments:
        number = segment.index + 1
        ref = candidate.ref
        if split:
            ref = ref.with_scope(segment_ref_scope(number, count))
        attachments.append(
            Attachment(
                ref=ref,
                alias=aliases.alias(ref),
                media_type=segment.media_type,
                data_base64=base64.b64encode(segment.data).decode("ascii"),
                bytes=len(segment.data),
                width=segment.width,
                height=segment.height,
                original_width=prepared.width,
                original_height=prepared.height,
                original_bytes=prepared.bytes,
                segment=number if split else None,
                segments=count if split else None,
                top=segment.top if split else None,
                bottom=segment.bottom if split else None,
                prepared=prepared.changed,
            )
        )
    return attachments
