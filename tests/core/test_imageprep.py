"""taskctx.imageprep: the policy, pass-through, tall segments, downscaling, re-encoding
and EXIF orientation, each on real images made by Pillow."""

from __future__ import annotations

import math
from typing import Any

import pytest
from PIL import Image
from pydantic import ValidationError

from taskctx.imageprep import (
    DEFAULT_IMAGE_POLICY,
    ImageInputPolicy,
    ImageSegment,
    PreparedImage,
    base64_size,
    prepare_image,
)
from tests.core.imageprep_samples import (
    decoded,
    halves,
    noise,
    oriented_jpeg,
    row_of,
    rows,
    save,
    translucent,
)

# --- the policy ------------------------------------------------------------------------


def test_the_policy_defaults_are_the_documented_ones() -> None:
    """segment 4096 px, overlap 50, ratio 2, 5 MiB of base64, 8000 px, 20 images, GIF on."""
    policy = ImageInputPolicy()
    assert policy == DEFAULT_IMAGE_POLICY
    assert policy.model_dump() == {
        "segment_height": 4096,
        "segment_overlap": 50,
        "tall_ratio": 2.0,
        "max_image_bytes": 5 * 1024 * 1024,
        "max_image_dimension": 8000,
        "max_images": 20,
        "support_gif": True,
    }


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"segment_height": 0}, "segment_height"),
        ({"segment_overlap": -1}, "segment_overlap"),
        ({"tall_ratio": 1.0}, "tall_ratio"),
        ({"tall_ratio": math.nan}, "tall_ratio"),
        ({"max_image_bytes": -1}, "max_image_bytes"),
        ({"max_image_dimension": -5}, "max_image_dimension"),
        ({"max_images": -1}, "max_images"),
        ({"max_imgs": 3}, "max_imgs"),
    ],
)
def test_a_bad_policy_field_is_refused_by_name(fields: dict[str, Any], named: str) -> None:
    """Out-of-range values and unknown fields raise a ValidationError naming the field."""
    with pytest.raises(ValidationError, match=named):
        ImageInputPolicy.model_validate(fields)


@pytest.mark.parametrize("overlap", [100, 150])
def test_the_overlap_must_be_below_the_segment_height(overlap: int) -> None:
    """An overlap of the segment height or more is refused, naming both fields."""
    with pytest.raises(ValidationError) as caught:
        ImageInputPolicy(segment_height=100, segment_overlap=overlap)
    message = str(caught.value)
    assert f"segment_overlap ({overlap})" in message
    assert "segment_height (100)" in message


@pytest.mark.parametrize(("n", "size"), [(0, 0), (1, 4), (2, 4), (3, 4), (4, 8), (5, 8), (6, 8)])
def test_base64_size_counts_padded_base64(n: int, size: int) -> None:
    """4 characters per started 3 bytes, as base64 with padding takes."""
    assert base64_size(n) == size
    segment = ImageSegment(
        index=0, count=1, media_type="image/png", data=b"x" * n, width=1, height=1, top=0, bottom=1
    )
    assert segment.base64_size == size


def test_a_prepared_image_round_trips_as_json() -> None:
    """PreparedImage is a frozen boundary value: its bytes travel as base64 and back."""
    prepared = prepare_image(save(noise((30, 20)), "PNG"))
    assert PreparedImage.model_validate_json(prepared.model_dump_json()) == prepared
    with pytest.raises(ValidationError):
        prepared.segments[0].__class__.model_validate({"index": -1})


# --- pass-through ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fmt", "media_type", "image"),
    [
        ("PNG", "image/png", noise((120, 80))),
        ("PNG", "image/png", translucent((50, 40))),
        ("JPEG", "image/jpeg", noise((120, 80))),
        ("WEBP", "image/webp", noise((60, 40))),
        ("GIF", "image/gif", noise((60, 40))),
    ],
    ids=["png", "png-alpha", "jpeg", "webp", "gif"],
)
def test_an_image_within_every_limit_passes_through_byte_for_byte(
    fmt: str, media_type: str, image: Image.Image
) -> None:
    """Not tall, within the limits, upright: one segment holding the original bytes."""
    data = save(image, fmt)
    prepared = prepare_image(data)
    assert prepared.changed is False
    assert prepared.animated is False
    assert (prepared.media_type, prepared.width, prepared.height) == (media_type, *image.size)
    assert prepared.bytes == len(data)
    (segment,) = prepared.segments
    assert segment.data == data
    assert (segment.index, segment.count, segment.media_type) == (0, 1, media_type)
    assert (segment.width, segment.height, segment.top, segment.bottom) == (
        *image.size,
        0,
        image.height,
    )


def test_the_declared_media_type_must_agree() -> None:
    """``media_type=`` that matches the bytes passes; other checks are the refusal tests'."""
    data = save(noise((10, 10)), "PNG")
    assert prepare_image(data, media_type="image/png").segments[0].data == data


# --- tall images -----------------------------------------------------------------------


def test_a_tall_png_is_split_into_overlapping_full_width_segments() -> None:
    """200x12000: rows [0,4096), [4046,8142), [8092,12000), each the original's rows."""
    data = save(rows((200, 12000)), "PNG")
    prepared = prepare_image(data)
    assert prepared.changed is True
    assert (prepared.width, prepared.height, prepared.bytes) == (200, 12000, len(data))
    spans = [(s.top, s.bottom) for s in prepared.segments]
    assert spans == [(0, 4096), (4046, 8142), (8092, 12000)]
    for index, segment in enumerate(prepared.segments):
        assert (segment.index, segment.count, segment.media_type) == (index, 3, "image/png")
        assert (segment.width, segment.height) == (200, segment.bottom - segment.top)
        with decoded(segment.data) as image:
            assert image.size == (segment.width, segment.height)
            assert row_of(image.getpixel((0, 0))) == segment.top
            last = image.getpixel((199, image.height - 1))
            assert row_of(last) == segment.bottom - 1
        assert segment.base64_size <= DEFAULT_IMAGE_POLICY.max_image_bytes


def test_consecutive_segments_share_exactly_the_overlap() -> None:
    """With overlap 0 segments tile the image; with 30 each starts 30 rows early."""
    data = save(rows((20, 1000)), "PNG")
    tiled = prepare_image(data, ImageInputPolicy(segment_height=300, segment_overlap=0))
    assert [(s.top, s.bottom) for s in tiled.segments] == [
        (0, 300),
        (300, 600),
        (600, 900),
        (900, 1000),
    ]
    overlapped = prepare_image(data, ImageInputPolicy(segment_height=300, segment_overlap=30))
    spans = [(s.top, s.bottom) for s in overlapped.segments]
    assert spans == [(0, 300), (270, 570), (540, 840), (810, 1000)]
    for before, after in zip(overlapped.segments, overlapped.segments[1:], strict=False):
        assert before.bottom - after.top == 30


@pytest.mark.parametrize(
    ("size", "split"),
    [
        ((1000, 5000), True),  # 5000 > 4096 and 5000 >= 2 * 1000
        ((2500, 5000), True),  # exactly the ratio
        ((2600, 5000), False),  # 5000 < 2 * 2600: not tall
        ((100, 4096), False),  # not over the segment height
    ],
)
def test_tall_means_over_the_segment_height_and_at_least_the_ratio(
    size: tuple[int, int], split: bool
) -> None:
    """Only an image higher than segment_height and tall_ratio times its width is split."""
    data = save(Image.new("L", size, 200), "PNG")
    prepared = prepare_image(data)
    assert (len(prepared.segments) > 1) is split
    assert prepared.changed is split
    if not split:
        assert prepared.segments[0].data == data


def test_the_tall_ratio_is_the_policys() -> None:
    """A 1000x5000 image is not tall under tall_ratio=6."""
    data = save(Image.new("L", (1000, 5000), 200), "PNG")
    assert len(prepare_image(data, ImageInputPolicy(tall_ratio=6)).segments) == 1


def test_a_segment_too_wide_is_downscaled_proportionally() -> None:
    """Segments 300x100 of a 300x700 image under a 200 px limit are 200x67; a segment
    over the limit in both sides fits both (300x400 under 100 px: 75x100)."""
    data = save(rows((300, 700)), "PNG")
    policy = ImageInputPolicy(segment_height=100, segment_overlap=0, max_image_dimension=200)
    prepared = prepare_image(data, policy)
    assert [(s.top, s.bottom) for s in prepared.segments] == [
        (n, n + 100) for n in range(0, 700, 100)
    ]
    assert {(s.width, s.height) for s in prepared.segments} == {(200, 67)}
    policy = ImageInputPolicy(segment_height=400, segment_overlap=0, max_image_dimension=100)
    prepared = prepare_image(save(rows((300, 1000)), "PNG"), policy)
    assert [(s.width, s.height) for s in prepared.segments] == [(75, 100), (75, 100), (100, 67)]


def test_every_segment_meets_the_byte_limit() -> None:
    """Segments of photo-like noise are each re-encoded within max_image_bytes."""
    data = save(noise((150, 700)), "PNG")
    policy = ImageInputPolicy(segment_height=300, segment_overlap=20, max_image_bytes=60_000)
    prepared = prepare_image(data, policy)
    assert len(prepared.segments) == 3
    assert all(s.base64_size <= 60_000 for s in prepared.segments)
    assert {s.media_type for s in prepared.segments} == {"image/jpeg"}  # no alpha: JPEG


# --- the side limit ------------------------------------------------------------------


def test_an_image_over_the_side_limit_is_downscaled_proportionally() -> None:
    """1200x300 under a 600 px limit becomes 600x150 (not tall: never split)."""
    data = save(noise((1200, 300)), "PNG")
    prepared = prepare_image(data, ImageInputPolicy(max_image_dimension=600, max_image_bytes=0))
    assert prepared.changed is True
    (segment,) = prepared.segments
    assert (segment.width, segment.height, segment.top, segment.bottom) == (600, 150, 0, 300)
    with decoded(segment.data) as image:
        assert image.size == (600, 150)


def test_a_wide_image_over_the_default_side_is_downscaled() -> None:
    """9000x100 is over 8000 px: 8000x89."""
    data = save(Image.new("RGB", (9000, 100), (10, 20, 30)), "PNG")
    (segment,) = prepare_image(data).segments
    assert (segment.width, segment.height) == (8000, 89)


def test_max_image_dimension_0_switches_the_side_limit_off() -> None:
    """The same 9000x100 image passes untouched when the side limit is 0."""
    data = save(Image.new("RGB", (9000, 100), (10, 20, 30)), "PNG")
    prepared = prepare_image(data, ImageInputPolicy(max_image_dimension=0))
    assert prepared.changed is False
    assert prepared.segments[0].data == data


# --- the byte limit ------------------------------------------------------------------


def test_max_image_bytes_0_switches_the_byte_limit_off() -> None:
    """1400x1400 of noise (over 5 MiB of base64) passes untouched when the limit is 0,
    and is re-encoded within 5 MiB by default."""
    data = save(noise((1400, 1400)), "PNG")
    assert base64_size(len(data)) > 5 * 1024 * 1024
    untouched = prepare_image(data, ImageInputPolicy(max_image_bytes=0))
    assert untouched.changed is False
    assert untouched.segments[0].data == data
    fitted = prepare_image(data)
    assert fitted.changed is True
    assert fitted.segments[0].base64_size <= 5 * 1024 * 1024


def test_an_opaque_png_over_the_byte_limit_becomes_jpeg() -> None:
    """Noise without alpha: PNG cannot shrink it, JPEG at full size does."""
    data = save(noise((400, 400)), "PNG")
    (segment,) = prepare_image(data, ImageInputPolicy(max_image_bytes=200_000)).segments
    assert segment.media_type == "image/jpeg"
    assert (segment.width, segment.height) == (400, 400)
    assert segment.base64_size <= 200_000


def test_a_png_with_alpha_stays_png_and_shrinks() -> None:
    """Alpha is kept: PNG at a smaller size, still translucent."""
    data = save(translucent((400, 400)), "PNG")
    (segment,) = prepare_image(data, ImageInputPolicy(max_image_bytes=200_000)).segments
    assert segment.media_type == "image/png"
    assert segment.width < 400
    assert segment.width == segment.height  # proportional
    assert segment.base64_size <= 200_000
    with decoded(segment.data) as image:
        assert image.mode == "RGBA"
        assert image.getchannel("A").getextrema()[0] < 255


def test_a_webp_with_alpha_stays_webp() -> None:
    """A lossless translucent WebP over the limit becomes a lossy WebP with its alpha."""
    data = save(translucent((400, 400)), "WEBP", lossless=True)
    (segment,) = prepare_image(data, ImageInputPolicy(max_image_bytes=200_000)).segments
    assert segment.media_type == "image/webp"
    assert segment.base64_size <= 200_000
    with decoded(segment.data) as image:
        assert image.mode == "RGBA"


def test_a_jpeg_over_the_byte_limit_is_reencoded_as_jpeg() -> None:
    """A quality-98 JPEG photo is re-encoded at a lower quality within the limit."""
    data = save(noise((400, 400)), "JPEG", quality=98)
    (segment,) = prepare_image(data, ImageInputPolicy(max_image_bytes=100_000)).segments
    assert segment.media_type == "image/jpeg"
    assert segment.base64_size <= 100_000


def test_an_opaque_rgba_png_may_become_jpeg() -> None:
    """An alpha channel that is fully opaque everywhere is no alpha."""
    image = noise((300, 300), "RGBA")
    image.putalpha(255)
    data = save(image, "PNG")
    (segment,) = prepare_image(data, ImageInputPolicy(max_image_bytes=120_000)).segments
    assert segment.media_type == "image/jpeg"


def test_a_static_gif_over_the_limits_becomes_png() -> None:
    """A GIF still is re-encoded as PNG (its palette kept when only cropped)."""
    data = save(noise((300, 100)).convert("P"), "GIF")
    (segment,) = prepare_image(data, ImageInputPolicy(max_image_dimension=150)).segments
    assert (segment.media_type, segment.width, segment.height) == ("image/png", 150, 50)


# --- EXIF orientation ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("orientation", "top", "bottom"),
    [(6, (255, 0, 0), (0, 0, 255)), (8, (0, 0, 255), (255, 0, 0))],
)
def test_an_exif_orientation_is_applied_before_measuring(
    orientation: int, top: tuple[int, int, int], bottom: tuple[int, int, int]
) -> None:
    """A 40x20 JPEG tagged 6 (turn clockwise) or 8 (counter-clockwise) becomes an
    upright 20x40 JPEG without the tag, though it was within every limit."""
    data = oriented_jpeg(orientation)
    prepared = prepare_image(data)
    assert prepared.changed is True
    assert (prepared.width, prepared.height) == (20, 40)
    (segment,) = prepared.segments
    assert (segment.media_type, segment.width, segment.height) == ("image/jpeg", 20, 40)
    with decoded(segment.data) as image:
        assert image.size == (20, 40)
        assert image.getexif().get(0x0112, 1) == 1
        for (x, y), expected in (((10, 5), top), ((10, 35), bottom)):
            pixel = image.getpixel((x, y))
            assert isinstance(pixel, tuple)
            assert all(abs(a - b) < 40 for a, b in zip(pixel, expected, strict=True))


def test_orientation_1_leaves_the_bytes_alone() -> None:
    """A JPEG tagged 1 (upright) passes through."""
    data = oriented_jpeg(1)
    prepared = prepare_image(data)
    assert prepared.changed is False
    assert prepared.segments[0].data == data


def test_a_png_exif_orientation_is_applied_too() -> None:
    """An eXIf chunk with orientation 6 turns a PNG upright, still a PNG."""
    exif = Image.Exif()
    exif[0x0112] = 6
    data = save(halves(), "PNG", exif=exif.tobytes())
    prepared = prepare_image(data)
    assert (prepared.changed, prepared.width, prepared.height) == (True, 20, 40)
    assert prepared.segments[0].media_type == "image/png"


def test_the_orientation_is_applied_before_a_tall_split() -> None:
    """A 900x100 JPEG tagged 6 is a 100x900 image: tall under a 400 px segment height."""
    exif = Image.Exif()
    exif[0x0112] = 6
    data = save(halves((900, 100)), "JPEG", exif=exif.tobytes())
    prepared = prepare_image(data, ImageInputPolicy(segment_height=400, segment_overlap=0))
    assert (prepared.width, prepared.height) == (100, 900)
    assert [(s.top, s.bottom) for s in prepared.segments] == [(0, 400), (400, 800), (800, 900)]
    assert all(s.width == 100 for s in prepared.segments)
