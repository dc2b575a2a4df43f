"""Image input in the request: segments, limits, the latest 20, explanations, no fetch."""

from __future__ import annotations

import base64
from io import BytesIO

import pytest
from PIL import Image
from taskctx_conversation.history import MessageHistory, Turn
from taskctx_conversation.images import ImageInputFilter, PreparedImageCache
from taskctx_conversation.parts import ImagePart, Part, TextPart, ToolCallPart, ToolResultPart
from taskctx_conversation.pipeline import RequestPipeline
from taskctx_conversation.request import ModelCharacteristics, ModelRequest

from taskctx import PluginHost
from taskctx.imageprep import ImageInputPolicy
from tests.plugins.conversation.helpers import png


def user(*parts: Part) -> Turn:
    return Turn(role="user", parts=parts)


def build(history: MessageHistory, **options: object) -> ModelRequest:
    options.setdefault("filters", [ImageInputFilter(cache=PreparedImageCache())])
    pipeline = RequestPipeline(host=PluginHost(allow=[]), **options)  # type: ignore[arg-type]
    return pipeline.build(history)


def images_of(request: ModelRequest) -> list[ImagePart]:
    return [p for turn in request.turns for p in turn.images()]


def texts_of(request: ModelRequest) -> list[str]:
    return [p.text for turn in request.turns for p in turn.parts if isinstance(p, TextPart)]


def gif(frames: int, size: tuple[int, int] = (40, 30)) -> bytes:
    out = BytesIO()
    images = [Image.new("RGB", size, (i * 80 % 256, 40, 200)) for i in range(frames)]
    images[0].save(out, format="GIF", save_all=frames > 1, append_images=images[1:], duration=80)
    return out.getvalue()


TALL = png(200, 12000)


def test_a_tall_image_becomes_ordered_segments_in_its_place() -> None:
    stored = MessageHistory(
        turns=(
            user(
                TextPart(text="before"),
                ImagePart(data=TALL, media_type="image/png", label="page.png"),
                TextPart(text="after"),
            ),
        )
    )
    request = build(stored)
    parts = request.turns[0].parts
    assert [type(p).__name__ for p in parts] == [
        "TextPart",
        "ImagePart",
        "ImagePart",
        "ImagePart",
        "TextPart",
    ]
    segments = [p for p in parts if isinstance(p, ImagePart)]
    assert [(s.segment, s.segments) for s in segments] == [(1, 3), (2, 3), (3, 3)]
    assert {(s.original_width, s.original_height, s.label) for s in segments} == {
        (200, 12000, "page.png")
    }
    heights = [Image.open(BytesIO(s.data or b"")).size for s in segments]
    assert heights == [(200, 4096), (200, 4096), (200, 12000 - 8092)]
    assert [(c.action, c.detail) for c in request.changes] == [
        ("split", "page.png (200x12000) in 3 segments")
    ]
    assert stored.turns[0].parts[1].data == TALL  # type: ignore[union-attr]


def test_only_the_latest_twenty_images_are_kept() -> None:
    turns = [user(ImagePart(data=png(10 + n, 10), label=f"shot-{n}.png")) for n in range(26)]
    request = build(MessageHistory(turns=tuple(turns)))
    kept = [p.label for p in images_of(request)]
    assert kept == [f"shot-{n}.png" for n in range(6, 26)]
    assert texts_of(request) == [
        f"[shot-{n}.png is not in this request: only the latest 20 images are kept]"
        for n in range(6)
    ]


def test_segments_count_toward_the_limit_and_older_images_go_first() -> None:
    history = MessageHistory(
        turns=(
            user(ImagePart(data=png(20, 20), label="old.png")),
            user(ImagePart(data=TALL, label="tall.png")),
        )
    )
    request = build(history, filters=[], image_input_policy={"max_images": 3})
    assert [p.label for p in images_of(request)] == ["tall.png"] * 3
    assert texts_of(request) == [
        "[old.png is not in this request: only the latest 3 images are kept]"
    ]
    tight = build(history, filters=[], image_input_policy={"max_images": 2})
    assert images_of(tight) == []
    assert texts_of(tight)[1].startswith("[tall.png is not in this request: its 3 segments")


def test_image_urls_count_but_are_never_fetched_or_changed() -> None:
    url = ImagePart(url="http://127.0.0.1:9/never-fetched.png")
    history = MessageHistory(
        turns=(user(ImagePart(data=png(8, 8), label="a.png")), user(url), user(url))
    )
    request = build(history, filters=[], image_input_policy={"max_images": 2})
    assert images_of(request) == [url, url]
    assert texts_of(request) == [
        "[a.png is not in this request: only the latest 2 images are kept]"
    ]


def test_a_corrupt_image_becomes_text_in_this_request_only() -> None:
    broken = png(50, 50)[:-30]
    stored = MessageHistory(turns=(user(ImagePart(data=broken, label="broken.png")),))
    request = build(stored)
    (text,) = texts_of(request)
    assert text.startswith("[image omitted from this request: broken.png is not a valid image")
    assert request.changes[0].action == "replaced"
    assert stored.turns[0].parts[0].data == broken  # type: ignore[union-attr]


def test_tool_result_top_level_images_are_prepared_nested_json_is_not() -> None:
    nested = {"screenshot": base64.b64encode(TALL).decode(), "note": "kept as the tool gave it"}
    result = ToolResultPart(call_id="c", content=nested, images=(ImagePart(data=TALL),))
    history = MessageHistory(
        turns=(
            Turn(role="assistant", parts=(ToolCallPart(call_id="c", name="shot"),)),
            Turn(role="tool", parts=(result,)),
        )
    )
    request = build(history)
    prepared = request.turns[1].parts[0]
    assert isinstance(prepared, ToolResultPart)
    assert [i.segment for i in prepared.images] == [1, 2, 3]
    assert prepared.content == nested


def test_a_rejected_tool_result_image_becomes_text_after_the_result() -> None:
    result = ToolResultPart(call_id="c", images=(ImagePart(data=b"not an image at all"),))
    call = Turn(role="assistant", parts=(ToolCallPart(call_id="c", name="shot"),))
    history = MessageHistory(turns=(call, Turn(role="tool", parts=(result,))))
    request = build(history)
    first, second = request.turns[1].parts
    assert isinstance(first, ToolResultPart)
    assert first.images == ()
    assert isinstance(second, TextPart)
    assert "image 1" in second.text


def test_gif_can_be_refused_and_animations_are_never_split_or_stilled() -> None:
    animation = gif(3)
    assert getattr(Image.open(BytesIO(animation)), "n_frames", 1) == 3
    history = MessageHistory(turns=(user(ImagePart(data=animation, label="spin.gif")),))
    assert images_of(build(history))[0].data == animation  # within limits: untouched
    no_gif = build(history, filters=[], image_input_policy={"support_gif": False})
    assert texts_of(no_gif) == [
        "[image omitted from this request: spin.gif is a GIF, which this model does not take "
        "(gif_unsupported)]"
    ]
    big = gif(2, size=(300, 40))
    over = build(
        MessageHistory(turns=(user(ImagePart(data=big, label="wide.gif")),)),
        filters=[],
        image_input_policy={"max_image_dimension": 100},
    )
    assert "is an animation of 300x40 px" in texts_of(over)[0]


def test_a_model_without_image_input_gets_text() -> None:
    history = MessageHistory(turns=(user(ImagePart(data=png(8, 8), label="a.png")),))
    request = build(history, model=ModelCharacteristics(name="text-only", image_input=False))
    assert texts_of(request) == ["[a.png is not in this request: text-only takes no images]"]


def test_policy_omitted_partial_and_off() -> None:
    history = MessageHistory(turns=(user(ImagePart(data=TALL)),))
    host = PluginHost(allow=["taskctx-conversation"])
    default = RequestPipeline(host=host)
    assert len(images_of(default.build(history))) == 3
    partial = RequestPipeline(host=host, image_input_policy={"segment_height": 6000})
    assert [p.segments for p in images_of(partial.build(history))] == [3, 3, 3]
    taller = RequestPipeline(
        host=host, image_input_policy={"segment_height": 7000, "segment_overlap": 0}
    )
    assert [p.segments for p in images_of(taller.build(history))] == [2, 2]
    off = RequestPipeline(host=host, image_input_policy=None)
    assert "image_input" not in [f.name for f in off.active_filters]
    assert off.build(history).turns == history.turns


def test_a_bad_policy_names_the_field() -> None:
    with pytest.raises(ValueError, match="max_images"):
        RequestPipeline(host=PluginHost(allow=[]), image_input_policy={"max_images": -1})
    with pytest.raises(ValueError, match="segment_overlap"):
        ImageInputFilter(policy=ImageInputPolicy(segment_height=10, segment_overlap=10))


def test_an_image_is_prepared_once_across_requests() -> None:
    cache = PreparedImageCache()
    history = MessageHistory(turns=(user(ImagePart(data=TALL)),))
    pipeline = RequestPipeline(host=PluginHost(allow=[]), filters=[ImageInputFilter(cache=cache)])
    first = pipeline.build(history)
    assert len(cache._entries) == 1
    assert pipeline.build(history) == first
    assert len(cache._entries) == 1


def test_a_full_page_screenshot_is_split_not_refused() -> None:
    """A 1,280 x 19,000 px screenshot (a side over 16,384, under 25 megapixels) becomes
    five full-width segments, each within the limits."""
    page = png(1280, 19000, color=(255, 255, 255))
    request = build(MessageHistory(turns=(user(ImagePart(data=page, label="page.png")),)))
    segments = images_of(request)
    assert [s.segment for s in segments] == [1, 2, 3, 4, 5]
    assert all(Image.open(BytesIO(s.data or b"")).size[0] == 1280 for s in segments)
