"""taskctx.imageprep refusals: validation first, animations never stills, GIF off,
attempts bounded, and the one line a request shows instead of a refused image."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from PIL import Image, ImageFile

from taskctx import _imageprep_steps as steps
from taskctx.errors import MediaError
from taskctx.imageprep import (
    MAX_ROUNDS,
    MAX_SEGMENTS,
    ImageInputPolicy,
    ImagePreparationError,
    ImageRejection,
    explain_rejection,
    prepare_image,
)
from taskctx.images import validate_image
from taskctx.testing import make_png
from tests.core import image_samples
from tests.core.imageprep_samples import animation, noise, save


def _refused(data: bytes, policy: ImageInputPolicy | None = None) -> ImagePreparationError:
    with pytest.raises(ImagePreparationError) as caught:
        prepare_image(data, policy)
    return caught.value


# --- validation comes first ----------------------------------------------------------

INVALID: list[tuple[str, Callable[[], bytes], ImageRejection]] = [
    ("empty", lambda: b"", ImageRejection.CORRUPT),
    ("truncated png", lambda: save(noise((40, 40)), "PNG")[:300], ImageRejection.CORRUPT),
    ("truncated jpeg", lambda: save(noise((64, 64)), "JPEG")[:200], ImageRejection.CORRUPT),
    ("signature only", lambda: b"\x89PNG\r\n\x1a\n", ImageRejection.CORRUPT),
    ("bomb header", image_samples.png_bomb, ImageRejection.DECOMPRESSION_BOMB),
    ("bmp", lambda: save(noise((8, 8)), "BMP"), ImageRejection.UNSUPPORTED_FORMAT),
    ("text", lambda: b"hello, not an image at all", ImageRejection.UNSUPPORTED_FORMAT),
]


@pytest.mark.parametrize(("case", "make", "reason"), INVALID, ids=[c for c, _, _ in INVALID])
def test_validation_refuses_first_and_its_message_is_kept(
    case: str, make: Callable[[], bytes], reason: ImageRejection
) -> None:
    """Corrupt, truncated, bomb or foreign bytes: the reason, and validate_image's own
    message and ``invalid_image`` code, whatever the policy."""
    data = make()
    with pytest.raises(MediaError) as validated:
        validate_image(data)
    error = _refused(data, ImageInputPolicy(max_image_bytes=0, max_image_dimension=0))
    assert error.reason is reason, case
    assert str(error) == str(validated.value)
    assert error.code == "invalid_image"
    assert isinstance(error, MediaError)


def test_a_decompression_bomb_says_its_declared_size() -> None:
    """A PNG declaring 100000x100000 is refused from its header, sizes on the error."""
    error = _refused(image_samples.png_bomb(100_000))
    assert error.reason is ImageRejection.DECOMPRESSION_BOMB
    assert (error.width, error.height) == (100_000, 100_000)
    assert "decoding" in str(error)


def test_a_mislabelled_image_is_corrupt() -> None:
    """``media_type=`` that the bytes contradict is refused as validation refuses it."""
    with pytest.raises(ImagePreparationError, match="does not match") as caught:
        prepare_image(save(noise((8, 8)), "PNG"), media_type="image/jpeg")
    assert caught.value.reason is ImageRejection.CORRUPT


def test_pillow_settings_are_never_changed() -> None:
    """Preparing (and refusing) images leaves Pillow's global settings as they were."""
    before = (Image.MAX_IMAGE_PIXELS, ImageFile.LOAD_TRUNCATED_IMAGES)
    prepare_image(save(noise((900, 200)), "PNG"), ImageInputPolicy(max_image_dimension=100))
    _refused(image_samples.png_bomb())
    assert before == (Image.MAX_IMAGE_PIXELS, ImageFile.LOAD_TRUNCATED_IMAGES)


# --- animations ------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["GIF", "PNG", "WEBP"])
def test_an_animation_within_the_limits_passes_through_untouched(fmt: str) -> None:
    """An animated GIF, APNG or WebP is never made a still: the original bytes, whole."""
    data = animation(fmt, (30, 20), frames=4)
    prepared = prepare_image(data)
    assert (prepared.animated, prepared.changed) == (True, False)
    (segment,) = prepared.segments
    assert segment.data == data
    assert (segment.width, segment.height) == (30, 20)


@pytest.mark.parametrize("fmt", ["GIF", "PNG", "WEBP"])
def test_a_tall_animation_is_never_split(fmt: str) -> None:
    """A 20x500 animation is tall under a 100 px segment height, and stays whole."""
    data = animation(fmt, (20, 500))
    prepared = prepare_image(data, ImageInputPolicy(segment_height=100, segment_overlap=0))
    assert len(prepared.segments) == 1
    assert prepared.segments[0].data == data


@pytest.mark.parametrize(
    "policy",
    [ImageInputPolicy(max_image_dimension=100), ImageInputPolicy(max_image_bytes=64)],
    ids=["side", "bytes"],
)
@pytest.mark.parametrize("fmt", ["GIF", "PNG", "WEBP"])
def test_an_animation_over_the_limits_is_refused_as_animated(
    fmt: str, policy: ImageInputPolicy
) -> None:
    """Over a limit, an animation is refused over_limits, the message saying why."""
    error = _refused(animation(fmt, (300, 20)), policy)
    assert error.reason is ImageRejection.OVER_LIMITS
    assert error.code == "too_large"
    assert error.animated is True
    assert "animated" in str(error)
    assert "300x20 px" in str(error)
    assert policy.limits_text() in str(error)


# --- GIF -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [lambda: save(noise((20, 10)).convert("P"), "GIF"), lambda: animation("GIF")],
    ids=["static", "animated"],
)
def test_support_gif_false_refuses_every_gif(make: Callable[[], bytes]) -> None:
    """A static or animated GIF under support_gif=False: gif_unsupported."""
    error = _refused(make(), ImageInputPolicy(support_gif=False))
    assert error.reason is ImageRejection.GIF_UNSUPPORTED
    assert "support_gif=False" in str(error)


def test_support_gif_false_leaves_other_formats_alone() -> None:
    """A PNG and an animated WebP still pass when GIF is off."""
    policy = ImageInputPolicy(support_gif=False)
    for data in (save(noise((20, 10)), "PNG"), animation("WEBP")):
        assert prepare_image(data, policy).segments[0].data == data


# --- bounded attempts ----------------------------------------------------------------


def test_an_image_that_cannot_fit_is_refused_after_bounded_attempts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An 80-byte limit no encoding meets: at most MAX_ROUNDS sizes of the ladder (4
    encodings each), then over_limits naming the sizes and the limits."""
    encodes = []
    real = steps._encode

    def counting(*args: object, **kwargs: object) -> bytes:
        encodes.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(steps, "_encode", counting)
    error = _refused(save(noise((400, 300)), "PNG"), ImageInputPolicy(max_image_bytes=80))
    assert 0 < len(encodes) <= MAX_ROUNDS * 4
    assert error.reason is ImageRejection.OVER_LIMITS
    assert error.animated is False
    message = str(error)
    assert message.startswith("PNG image of 400x300 px cannot be brought within")
    assert "8000 px a side and 80 bytes of base64" in message
    assert f"the smallest of {MAX_ROUNDS} sizes tried" in message


def test_a_segment_that_cannot_fit_names_its_rows() -> None:
    """The refusal of a tall image names the segment that could not be brought within."""
    policy = ImageInputPolicy(segment_height=100, segment_overlap=0, max_image_bytes=80)
    error = _refused(save(noise((40, 300)), "PNG"), policy)
    assert error.reason is ImageRejection.OVER_LIMITS
    assert "segment 1 of 3 (rows 0-100) of a PNG image of 40x300 px" in str(error)


def test_a_policy_cutting_too_many_segments_is_refused() -> None:
    """More than MAX_SEGMENTS segments: refused before any is encoded."""
    policy = ImageInputPolicy(segment_height=2, segment_overlap=0)
    error = _refused(save(Image.new("L", (1, 2 * MAX_SEGMENTS + 2), 9), "PNG"), policy)
    assert error.reason is ImageRejection.OVER_LIMITS
    assert f"{MAX_SEGMENTS + 1} segments" in str(error)


# --- explain_rejection -------------------------------------------------------------------


def test_the_explanation_of_an_image_over_the_limits() -> None:
    """One line naming the label, the size, the limits and the reason code."""
    error = _refused(save(noise((400, 300)), "PNG"), ImageInputPolicy(max_image_bytes=80))
    assert explain_rejection(error, "shots/screen.png") == (
        "[image omitted from this request: shots/screen.png is 400x300 px; it cannot be "
        "brought within 8000 px a side and 80 bytes of base64 (over_limits)]"
    )


def test_the_explanation_uses_mib_for_the_default_limit() -> None:
    """The default byte limit reads as 5 MiB."""
    error = ImagePreparationError(
        "x",
        ImageRejection.OVER_LIMITS,
        width=200,
        height=90000,
        limits=ImageInputPolicy().limits_text(),
    )
    assert explain_rejection(error, "tall.png") == (
        "[image omitted from this request: tall.png is 200x90000 px; it cannot be brought "
        "within 8000 px a side and 5 MiB of base64 (over_limits)]"
    )


EXPLAINED: list[tuple[str, Callable[[], ImagePreparationError], str]] = [
    (
        "animated",
        lambda: _refused(animation("GIF", (300, 20)), ImageInputPolicy(max_image_dimension=100)),
        "is an animation of 300x20 px over 100 px a side and 5 MiB of base64; it is never "
        "resized (over_limits)",
    ),
    (
        "gif",
        lambda: _refused(animation("GIF"), ImageInputPolicy(support_gif=False)),
        "is a GIF, which this model does not take (gif_unsupported)",
    ),
    (
        "bomb",
        lambda: _refused(image_samples.png_bomb()),
        "declares 100000x100000 px, refused as a possible decompression bomb (decompression_bomb)",
    ),
    (
        "format",
        lambda: _refused(save(noise((8, 8)), "BMP")),
        "is not a PNG, JPEG, GIF or WebP image (unsupported_format)",
    ),
    (
        "corrupt",
        lambda: _refused(make_png(4, 4, idat=b"not zlib data")),
        "is not a valid image (corrupt)",
    ),
]


@pytest.mark.parametrize(("case", "make", "tail"), EXPLAINED, ids=[c for c, _, _ in EXPLAINED])
def test_every_rejection_has_its_explanation(
    case: str, make: Callable[[], ImagePreparationError], tail: str
) -> None:
    """Each reason reads as its own sentence, ending in its code."""
    assert explain_rejection(make(), "pic") == (f"[image omitted from this request: pic {tail}]"), (
        case
    )


def test_the_explanation_is_one_bounded_line_without_raw_bytes() -> None:
    """A hostile label (newlines, controls, bidi, 10,000 chars) gives one line of at most
    300 characters; the image's bytes never appear."""
    data = save(noise((400, 300)), "PNG")
    error = _refused(data, ImageInputPolicy(max_image_bytes=80))
    label = "evil\nname\x1b[2J\u202e" + "x" * 10_000
    text = explain_rejection(error, label)
    assert len(text) <= 300
    assert "\n" not in text
    assert not re.search(r"[\x00-\x1f\x7f\u202e]", text)
    assert text.startswith("[image omitted from this request: evil?name?[2J?xxx")
    assert text.endswith("]")
    assert data[:40].decode("latin-1") not in text
    assert explain_rejection(error, "").startswith("[image omitted from this request: an image")
