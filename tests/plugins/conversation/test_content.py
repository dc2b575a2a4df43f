"""The content filter: accepted media types (exact and wildcards) and a media count."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

import pytest
from taskctx_conversation.content import (
    ContentFilter,
    accepts_media_type,
    format_size,
    media_type_of,
    removal_note,
)
from taskctx_conversation.history import MessageHistory, Turn
from taskctx_conversation.parts import (
    DocumentPart,
    ImagePart,
    MediaPart,
    Part,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    VideoPart,
)
from taskctx_conversation.pipeline import RequestPipeline
from taskctx_conversation.request import FilterContext, ModelCharacteristics, ModelRequest

from taskctx.plugins import PluginHost
from tests.plugins.conversation.helpers import PNG_1X1, T0

MODEL = ModelCharacteristics(name="m", document_input=True, video_input=True)


def user(*parts: Part) -> Turn:
    return Turn(role="user", parts=parts)


def image(label: str, media_type: str | None = "image/png") -> ImagePart:
    return ImagePart(data=PNG_1X1, media_type=media_type, label=label)


def run(content: ContentFilter, *turns: Turn) -> ModelRequest:
    """``turns`` through the content filter alone (its async entry point)."""
    request = ModelRequest(turns=turns, model=MODEL)
    context = FilterContext(history=MessageHistory(turns=turns), now=T0)
    return asyncio.run(content.async_apply(request, context))


def kinds(request: ModelRequest) -> list[str]:
    """Each part of the request as its label (media), ``text`` or its type."""
    out: list[str] = []
    for turn in request.turns:
        for part in turn.parts:
            if isinstance(part, (ImagePart, DocumentPart, VideoPart)):
                out.append(part.label or part.url or part.type)
            elif isinstance(part, ToolResultPart):
                out.append(f"result[{','.join(i.label or '?' for i in part.images)}]")
            else:
                out.append(part.type)
    return out


def notes(request: ModelRequest) -> list[str]:
    return [
        p.text
        for t in request.turns
        for p in t.parts
        if isinstance(p, TextPart) and p.text.startswith("[")
    ]


def test_no_limits_return_the_request_as_it_is() -> None:
    """With neither rule the very request comes back."""
    turns = (user(image("a.png"), VideoPart(url="https://example.org/v.mp4")),)
    request = ModelRequest(turns=turns, model=MODEL)
    assert ContentFilter().apply(request) is request
    assert ContentFilter.automatic is False
    assert (ContentFilter.name, ContentFilter.order) == ("content", 200)


def test_exact_types_keep_only_those() -> None:
    """An exact type accepts that type only; the others become a note saying why."""
    out = run(
        ContentFilter(accepted_media={"image/png"}),
        user(image("a.png"), image("b.jpg", "image/jpeg")),
    )
    assert kinds(out) == ["a.png", "text"]
    assert notes(out) == [
        f"[image b.jpg ({len(PNG_1X1)} bytes) is not in this request: its media type "
        "image/jpeg is not accepted (accepted: image/png)]"
    ]
    (change,) = out.changes
    assert (change.filter, change.turn, change.action) == ("content", 0, "replaced")
    assert change.detail.startswith("image b.jpg")


def test_wildcards_accept_a_whole_major_type() -> None:
    """``image/*`` takes every image type, and no document or video."""
    turns = (
        user(
            image("a.webp", "image/webp"),
            DocumentPart(data=b"%PDF-1.4", media_type="application/pdf", label="doc.pdf"),
            VideoPart(data=b"\x00" * 10, media_type="video/mp4", label="v.mp4"),
        ),
    )
    out = run(ContentFilter(accepted_media=["image/*"]), *turns)
    assert kinds(out) == ["a.webp", "text", "text"]
    assert "application/pdf is not accepted (accepted: image/*)" in notes(out)[0]
    everything = run(ContentFilter(accepted_media=["*/*"]), *turns)
    assert kinds(everything) == ["a.webp", "doc.pdf", "v.mp4"]


def test_url_parts_without_a_type_are_guessed_from_the_suffix() -> None:
    """A URL's suffix gives its type; a URL with no known suffix is not accepted."""
    turns = (
        user(
            ImagePart(url="https://example.org/img/a.png?size=large"),
            ImagePart(url="https://example.org/b.svg"),
            ImagePart(url="https://example.org/render?id=3"),
        ),
    )
    out = run(ContentFilter(accepted_media=["image/png"]), *turns)
    assert kinds(out) == ["https://example.org/img/a.png?size=large", "text", "text"]
    assert "its media type image/svg+xml is not accepted" in notes(out)[0]
    assert "its media type (unknown) is not accepted" in notes(out)[1]


def test_inline_media_without_a_type_is_sniffed() -> None:
    """Inline bytes with no declared type are recognised by their magic number."""
    out = run(ContentFilter(accepted_media=["image/png"]), user(image("untyped", media_type=None)))
    assert kinds(out) == ["untyped"]
    assert media_type_of(image("x", None)) == "image/png"


def test_tool_result_images_are_filtered_like_user_images() -> None:
    """A tool result's top-level image of a refused type is replaced; the note follows
    the result; images inside its JSON content are the tool's and stay."""
    nested = {"screenshot": {"type": "image", "media_type": "image/gif"}}
    turns = (
        Turn(role="assistant", parts=(ToolCallPart(call_id="c1", name="shot"),)),
        Turn(
            role="tool",
            parts=(
                ToolResultPart(
                    call_id="c1",
                    content=nested,
                    images=(image("keep.png"), image("drop.gif", "image/gif")),
                ),
            ),
        ),
    )
    out = run(ContentFilter(accepted_media=["image/png"]), *turns)
    assert kinds(out) == ["tool_call", "result[keep.png]", "text"]
    result = out.turns[1].parts[0]
    assert isinstance(result, ToolResultPart)
    assert result.content == nested
    assert notes(out)[0].startswith("[image drop.gif")
    assert [c.turn for c in out.changes] == [1]


def test_media_beyond_the_limit_keep_the_latest() -> None:
    """Over max_media_items, the oldest items are replaced and the latest kept; tool
    result images count; changes are in request order."""
    turns = (
        user(image("1.png"), TextPart(text="between")),
        user(DocumentPart(data=b"%PDF-1.4", media_type="application/pdf", label="2.pdf")),
        Turn(role="assistant", parts=(ToolCallPart(call_id="c", name="t"),)),
        Turn(role="tool", parts=(ToolResultPart(call_id="c", images=(image("3.png"),)),)),
        user(image("4.png")),
    )
    out = run(ContentFilter(max_media_items=2), *turns)
    assert kinds(out) == ["text", "text", "text", "tool_call", "result[3.png]", "4.png"]
    assert notes(out) == [
        f"[image 1.png ({len(PNG_1X1)} bytes) is not in this request: over the limit of 2 "
        "media items per request (the latest are kept)]",
        "[document 2.pdf (8 bytes) is not in this request: over the limit of 2 media items "
        "per request (the latest are kept)]",
    ]
    assert [c.turn for c in out.changes] == [0, 1]
    assert isinstance(turns[0].parts[0], ImagePart)


def test_a_limit_of_zero_removes_every_media_item() -> None:
    """max_media_items=0 takes no media at all."""
    out = run(ContentFilter(max_media_items=0), user(image("a.png"), image("b.png")))
    assert kinds(out) == ["text", "text"]


def test_items_refused_by_type_do_not_count_toward_the_limit() -> None:
    """The count applies to what the type rule kept."""
    turns = (
        user(image("1.png"), VideoPart(data=b"\x00", media_type="video/mp4", label="v.mp4")),
        user(image("2.png"), image("3.png")),
    )
    out = run(ContentFilter(accepted_media=["image/*"], max_media_items=2), *turns)
    assert kinds(out) == ["text", "text", "2.png", "3.png"]
    assert "video/mp4 is not accepted" in notes(out)[1]
    assert "over the limit of 2 media items" in notes(out)[0]


@pytest.mark.parametrize(
    ("accepted", "media_type", "expected"),
    [
        (None, None, True),
        (frozenset({"image/png"}), "image/png", True),
        (frozenset({"image/png"}), "image/jpeg", False),
        (frozenset({"image/*"}), "image/jpeg", True),
        (frozenset({"image/*"}), "video/mp4", False),
        (frozenset({"*/*"}), "video/mp4", True),
        (frozenset({"*/*"}), None, False),
        (frozenset(), "image/png", False),
    ],
)
def test_accepts_media_type(
    accepted: frozenset[str] | None, media_type: str | None, expected: bool
) -> None:
    """Matching exact types and wildcards; an unknown type matches no list."""
    assert accepts_media_type(accepted, media_type) is expected


@pytest.mark.parametrize(
    ("accepted", "normal"),
    [
        (["IMAGE/PNG; q=0.9", "video/*"], frozenset({"image/png", "video/*"})),
        ((t for t in ["image/jpg"]), frozenset({"image/jpeg"})),
        (frozenset({"application/vnd.ms-excel"}), frozenset({"application/vnd.ms-excel"})),
        ([], frozenset()),
    ],
)
def test_accepted_media_is_normalised(accepted: Iterable[str], normal: frozenset[str]) -> None:
    """Entries are lower-cased, stripped of parameters and resolved from aliases."""
    assert ContentFilter(accepted_media=accepted).accepted_media == normal


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"accepted_media": "image/png"}, TypeError, "not one string"),
        ({"accepted_media": ["png"]}, ValueError, "'png' is not a media type"),
        ({"accepted_media": ["image/"]}, ValueError, "is not a media type"),
        ({"accepted_media": ["*/png"]}, ValueError, "is not a media type"),
        ({"accepted_media": [3]}, TypeError, "is not a string"),
        ({"max_media_items": -1}, ValueError, "0 or more"),
        ({"max_media_items": True}, TypeError, "an int or None"),
        ({"max_media_items": 2.0}, TypeError, "an int or None"),
    ],
)
def test_arguments_are_validated(
    options: dict[str, object], error: type[Exception], message: str
) -> None:
    """Bad accepted types and limits are refused at construction."""
    with pytest.raises(error, match=message):
        ContentFilter(**options)  # type: ignore[arg-type]


def test_removal_notes_are_short_and_hold_no_bytes() -> None:
    """A long label or URL is cut; the note never carries the data."""
    parts: list[MediaPart] = [
        ImagePart(data=b"SECRET" * 1000, media_type="image/png", label="l" * 3000 + "\n]"),
        VideoPart(url="https://example.org/" + "p" * 3000),
        DocumentPart(data=b"SECRET", media_type="application/pdf"),
    ]
    for part in parts:
        text = removal_note(part, "r" * 3000).text
        assert len(text) <= 400
        assert "SECRET" not in text
        assert "\n" not in text
        assert text.count("]") == 1
    assert removal_note(parts[2], "why").text == (
        "[an inline document (application/pdf, 6 bytes) is not in this request: why]"
    )


@pytest.mark.parametrize(
    ("size", "words"),
    [
        (90, "90 bytes"),
        (1024, "1 KiB"),
        (1536, "1.5 KiB"),
        (14_889_779, "14.2 MiB"),
        (10 * 1024**2, "10 MiB"),
    ],
)
def test_format_size(size: int, words: str) -> None:
    """Sizes read as a person says them."""
    assert format_size(size) == words


def test_the_filter_runs_when_composed_into_a_pipeline() -> None:
    """Composed explicitly, the content filter runs in the pipeline; not composed, it
    does not (it is not automatic)."""
    history = MessageHistory(turns=(user(image("a.png"), image("b.gif", "image/gif")),))
    pipeline = RequestPipeline(
        model=MODEL,
        host=PluginHost(allow=[]),
        filters=[ContentFilter(accepted_media=["image/png"])],
    )
    out = pipeline.build(history, now=T0)
    assert kinds(out) == ["a.png", "text"]
    assert len(out.changes_by("content")) == 1
    bare = RequestPipeline(model=MODEL, host=PluginHost(allow=[]))
    assert "content" not in [f.name for f in bare.active_filters]
    assert kinds(bare.build(history, now=T0)) == ["a.png", "b.gif"]
