"""Video input (seed 003): what of a request's video goes to the model, and as what.

Downloads go to a real HTTP server on 127.0.0.1 (:class:`LocalServer`); the server's
``hits`` prove when nothing was fetched.
"""

from __future__ import annotations

import asyncio
from http.server import BaseHTTPRequestHandler

import pytest
from taskctx_conversation.history import MessageHistory, Turn
from taskctx_conversation.parts import Part, TextPart, VideoPart
from taskctx_conversation.pipeline import RequestPipeline
from taskctx_conversation.request import FilterContext, ModelCharacteristics, ModelRequest
from taskctx_conversation.video import VideoInputFilter, is_youtube_url, on_youtube

from taskctx.plugins import PluginHost
from taskctx.policy import RunConfiguration
from tests.plugins.conversation.helpers import T0
from tests.plugins.conversation.localserver import CLIP, LocalServer, body, redirect, send

VIDEO_MODEL = ModelCharacteristics(name="vid", video_input=True)
URL_MODEL = ModelCharacteristics(name="vid-urls", video_input=True, video_urls=True)
YOUTUBE_MODEL = ModelCharacteristics(name="yt", video_input=True, youtube_urls=True)
BLIND = ModelCharacteristics(name="text-only", video_input=False)
LOCAL = RunConfiguration(allowed_hosts=["127.0.0.1"])


def clip(size: int, label: str | None = None, media_type: str | None = "video/mp4") -> VideoPart:
    """An inline video part of ``size`` bytes."""
    return VideoPart(data=b"v" * size, media_type=media_type, label=label)


def user(*parts: Part) -> Turn:
    return Turn(role="user", parts=parts)


def run(
    model: ModelCharacteristics,
    *turns: Turn,
    video: VideoInputFilter | None = None,
    configuration: RunConfiguration = LOCAL,
) -> ModelRequest:
    """The request of ``turns`` for ``model`` through the video filter alone."""
    chosen = video if video is not None else VideoInputFilter()
    request = ModelRequest(turns=turns, model=model)
    context = FilterContext(
        history=MessageHistory(turns=turns), now=T0, configuration=configuration
    )
    return asyncio.run(chosen.async_apply(request, context))


def texts(request: ModelRequest) -> list[str]:
    return [p.text for t in request.turns for p in t.parts if isinstance(p, TextPart)]


def videos(request: ModelRequest) -> list[VideoPart]:
    return [p for t in request.turns for p in t.parts if isinstance(p, VideoPart)]


def test_a_request_without_video_is_returned_as_it_is() -> None:
    """No video part: the very same request comes back."""
    turns = (Turn.text("user", "hello"),)
    request = ModelRequest(turns=turns, model=VIDEO_MODEL)
    context = FilterContext(history=MessageHistory(turns=turns), now=T0)
    assert asyncio.run(VideoInputFilter().async_apply(request, context)) is request


def test_a_model_without_video_input_gets_no_video_and_nothing_is_fetched() -> None:
    """Inline and URL videos are replaced for a text-only model; the URL is not fetched;
    the stored turns are untouched."""
    with LocalServer({"/clip.mp4": body(CLIP)}) as server:
        turns = (
            user(TextPart(text="look"), clip(100, "a.mp4")),
            user(VideoPart(url=server.url("/clip.mp4"))),
        )
        out = run(BLIND, *turns)
        assert server.hits == []
    assert videos(out) == []
    assert texts(out)[1:] == [
        "[video a.mp4 (100 bytes) is not in this request: the model text-only takes "
        "no video input]",
        f"[video {server.url('/clip.mp4')} is not in this request: the model text-only takes "
        "no video input]",
    ]
    assert [(c.filter, c.turn, c.action) for c in out.changes] == [
        ("video_input", 0, "replaced"),
        ("video_input", 1, "replaced"),
    ]
    assert isinstance(turns[0].parts[1], VideoPart)


def test_inline_video_of_a_type_the_model_does_not_take_is_replaced() -> None:
    """Only the model's video media types go inline; others become text."""
    out = run(VIDEO_MODEL, user(clip(10, "a.avi", "video/x-msvideo"), clip(10, "b.mp4")))
    assert [v.label for v in videos(out)] == ["b.mp4"]
    assert "not video/x-msvideo" in texts(out)[0]
    assert "video/mp4, video/mpeg, video/quicktime, video/webm" in texts(out)[0]


def test_inline_video_of_no_known_type_is_replaced() -> None:
    """An inline video with no media type (and bytes nothing recognises) is replaced."""
    mystery = VideoPart(data=bytes(range(40)), label="mystery")
    out = run(VIDEO_MODEL, user(mystery, clip(10, "text", media_type=None)))
    assert videos(out) == []
    assert "not an unknown media type" in texts(out)[0]
    assert texts(out)[1].endswith("not text/plain]")


def test_inline_video_over_the_per_item_limit_is_replaced() -> None:
    """A video over max_inline_bytes is replaced; one at the limit is kept."""
    video = VideoInputFilter(max_inline_bytes=1024, max_total_inline_bytes=10_000)
    out = run(VIDEO_MODEL, user(clip(1025, "big.mp4"), clip(1024, "fits.mp4")), video=video)
    assert [v.label for v in videos(out)] == ["fits.mp4"]
    assert texts(out) == [
        "[video big.mp4 (1.0 KiB) is not in this request: over the 1 KiB limit for an inline video]"
    ]


def test_total_inline_budget_keeps_the_latest_that_fit() -> None:
    """Latest first: each older video stays only if it fits what later ones left."""
    video = VideoInputFilter(max_inline_bytes=1000, max_total_inline_bytes=1000)
    turns = (
        user(clip(300, "oldest.mp4")),
        user(clip(800, "middle.mp4")),
        user(clip(300, "latest.mp4")),
    )
    out = run(VIDEO_MODEL, *turns, video=video)
    assert [v.label for v in videos(out)] == ["oldest.mp4", "latest.mp4"]
    assert texts(out) == [
        "[video middle.mp4 (800 bytes) is not in this request: over the 1000 bytes total for "
        "inline video in one request (700 bytes left after later videos)]"
    ]
    assert [c.turn for c in out.changes] == [1]


@pytest.mark.parametrize(
    "url",
    [
        "https://www.youtube.com/watch?v=dQw4w9WgXcQ",
        "https://youtube.com/watch?v=dQw4w9WgXcQ&t=42",
        "https://youtu.be/dQw4w9WgXcQ",
        "https://www.youtube.com/shorts/abc123",
        "https://m.youtube.com/watch?v=dQw4w9WgXcQ",
    ],
)
def test_youtube_urls_pass_only_where_the_model_takes_them(url: str) -> None:
    """A YouTube URL is passed as it is to a model with youtube_urls, else replaced,
    even for a model that takes other video URLs, and never downloaded."""
    assert is_youtube_url(url)
    kept = run(YOUTUBE_MODEL, user(VideoPart(url=url)))
    assert videos(kept) == [VideoPart(url=url)]
    assert kept.changes == ()
    for model in (URL_MODEL, VIDEO_MODEL):
        out = run(model, user(VideoPart(url=url)), configuration=RunConfiguration(allowed_hosts=[]))
        assert videos(out) == []
        assert texts(out) == [
            f"[video {url} is not in this request: the model {model.name} takes no YouTube URLs]"
        ]


@pytest.mark.parametrize(
    ("url", "video", "youtube"),
    [
        ("https://www.youtube.com/channel/UC123", False, True),
        ("https://www.youtube.com/watch", False, True),
        ("https://youtu.be/", False, True),
        ("https://www.youtube-nocookie.com/embed/abc", True, True),
        ("https://notyoutube.com/watch?v=x", False, False),
        ("ftp://youtube.com/watch?v=x", False, False),
    ],
)
def test_youtube_url_forms(url: str, video: bool, youtube: bool) -> None:
    """Which URLs are YouTube videos, and which are merely on YouTube."""
    assert is_youtube_url(url) is video
    assert on_youtube(url) is youtube


def test_a_youtube_page_that_is_not_a_video_is_replaced() -> None:
    """A YouTube URL that names no video is not passed, nor downloaded."""
    out = run(YOUTUBE_MODEL, user(VideoPart(url="https://www.youtube.com/channel/UC123")))
    assert "it is not the URL of a YouTube video" in texts(out)[0]


def test_other_video_urls_pass_where_the_model_takes_video_urls() -> None:
    """A non-YouTube video URL goes as it is to a model with video_urls: no download."""
    with LocalServer({"/clip.mp4": body(CLIP)}) as server:
        part = VideoPart(url=server.url("/clip.mp4"))
        out = run(URL_MODEL, user(part))
        assert server.hits == []
    assert videos(out) == [part]
    assert out.changes == ()


def test_video_url_is_downloaded_and_inlined() -> None:
    """A video URL the model cannot take is downloaded (bounded) and inlined, labelled
    with its URL, with the response's media type; the change is recorded."""
    with LocalServer({"/clip": body(CLIP, "video/webm")}) as server:
        url = server.url("/clip")
        out = run(VIDEO_MODEL, user(TextPart(text="see"), VideoPart(url=url)))
        assert server.hits == ["/clip"]
    assert videos(out) == [VideoPart(data=CLIP, media_type="video/webm", label=url)]
    (change,) = out.changes
    assert (change.filter, change.turn, change.action) == ("video_input", 0, "replaced")
    assert change.detail == f"video {url}: downloaded ({len(CLIP)} bytes) and inlined"


def test_downloaded_octet_stream_takes_the_type_of_the_url_suffix() -> None:
    """A response of no useful type is typed by the URL's suffix when that is a video."""
    with LocalServer({"/v/clip.mp4": body(CLIP, "application/octet-stream")}) as server:
        out = run(VIDEO_MODEL, user(VideoPart(url=server.url("/v/clip.mp4"))))
    assert [v.media_type for v in videos(out)] == ["video/mp4"]


def test_download_that_is_not_a_video_is_replaced() -> None:
    """A page where a video was expected is not inlined."""
    with LocalServer({"/watch": body(b"<html></html>", "text/html")}) as server:
        out = run(VIDEO_MODEL, user(VideoPart(url=server.url("/watch"))))
    assert videos(out) == []
    assert "the download is text/html, not video/mp4" in texts(out)[0]


def test_download_refused_by_policy_is_replaced_without_a_request() -> None:
    """allowed_hosts governs the download: a refused host is named, nothing is fetched."""
    with LocalServer({"/clip.mp4": body(CLIP)}) as server:
        out = run(
            VIDEO_MODEL,
            user(VideoPart(url=server.url("/clip.mp4"))),
            configuration=RunConfiguration(allowed_hosts=["example.org"]),
        )
        assert server.hits == []
    assert videos(out) == []
    assert "its download was refused: host '127.0.0.1'" in texts(out)[0]


def test_download_redirected_to_a_disallowed_host_is_replaced() -> None:
    """Every hop is authorised: a redirect to another host is refused before it."""
    with LocalServer() as first, LocalServer({"/clip.mp4": body(CLIP)}) as second:
        first.routes["/go"] = redirect(second.url("/clip.mp4", host="localhost"))
        out = run(VIDEO_MODEL, user(VideoPart(url=first.url("/go"))))
        assert second.hits == []
    assert videos(out) == []
    note = texts(out)[0]
    assert "its download was refused: redirect from" in note
    assert "host 'localhost'" in note
    assert len(note) <= 400


def test_download_over_the_download_limit_is_replaced() -> None:
    """A download over max_download_bytes fails and the URL is replaced, saying why."""
    video = VideoInputFilter(max_download_bytes=1000)
    with LocalServer({"/big.mp4": body(b"x" * 2000)}) as server:
        out = run(VIDEO_MODEL, user(VideoPart(url=server.url("/big.mp4"))), video=video)
    assert videos(out) == []
    assert "its download failed: " in texts(out)[0]
    assert "Content-Length 2000 is over the limit of 1000 bytes" in texts(out)[0]


def test_downloads_count_toward_the_total_inline_budget() -> None:
    """An older URL may only take what later inline videos left of the total."""
    video = VideoInputFilter(max_inline_bytes=1000, max_total_inline_bytes=1000)
    with LocalServer({"/clip.mp4": body(b"x" * 500)}) as server:
        url = server.url("/clip.mp4")
        out = run(VIDEO_MODEL, user(VideoPart(url=url)), user(clip(800, "latest.mp4")), video=video)
        small = run(
            VIDEO_MODEL, user(VideoPart(url=url)), user(clip(500, "latest.mp4")), video=video
        )
    assert [v.label for v in videos(out)] == ["latest.mp4"]
    assert (
        "over the 1000 bytes total for inline video in one request (200 bytes left" in texts(out)[0]
    )
    assert [v.label for v in videos(small)] == [url, "latest.mp4"]


def test_a_spent_budget_fetches_nothing() -> None:
    """When later videos used the whole budget, an older URL is not fetched at all."""
    video = VideoInputFilter(max_inline_bytes=1000, max_total_inline_bytes=1000)
    with LocalServer({"/clip.mp4": body(CLIP)}) as server:
        out = run(
            VIDEO_MODEL, user(VideoPart(url=server.url("/clip.mp4"))), user(clip(1000)), video=video
        )
        assert server.hits == []
    assert "(0 bytes left after later videos)" in texts(out)[0]


def test_downloading_off_replaces_the_url_without_a_request() -> None:
    """download_urls=False: a URL the model cannot take is replaced, never fetched."""
    with LocalServer({"/clip.mp4": body(CLIP)}) as server:
        out = run(
            VIDEO_MODEL,
            user(VideoPart(url=server.url("/clip.mp4"))),
            video=VideoInputFilter(download_urls=False),
        )
        assert server.hits == []
    assert "takes no video URLs and downloading is off" in texts(out)[0]


def test_a_declared_type_the_model_does_not_take_is_not_fetched() -> None:
    """A URL declared as a type the model cannot take is replaced before any request."""
    with LocalServer({"/clip.flv": body(CLIP, "video/x-flv")}) as server:
        part = VideoPart(url=server.url("/clip.flv"), media_type="video/x-flv")
        out = run(VIDEO_MODEL, user(part))
        assert server.hits == []
    assert "not video/x-flv" in texts(out)[0]


def test_a_failed_download_names_the_status() -> None:
    """An HTTP error is the reason given."""

    def gone(handler: BaseHTTPRequestHandler) -> None:
        send(handler, b"gone", "text/plain", status=410)

    with LocalServer({"/clip.mp4": gone}) as server:
        out = run(VIDEO_MODEL, user(VideoPart(url=server.url("/clip.mp4"))))
    assert "its download failed: " in texts(out)[0]
    assert "HTTP 410 Gone" in texts(out)[0]


def test_notes_are_bounded_and_hold_no_bytes() -> None:
    """However long the label, the note stays short and never carries the bytes."""
    out = run(
        BLIND, user(VideoPart(data=b"SECRET" * 100, media_type="video/mp4", label="x" * 5000))
    )
    (note,) = texts(out)
    assert len(note) <= 400
    assert "SECRET" not in note


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"max_inline_bytes": 0}, ValueError),
        ({"max_total_inline_bytes": -1}, ValueError),
        ({"max_download_bytes": "10"}, TypeError),
        ({"max_inline_bytes": True}, TypeError),
    ],
)
def test_limits_are_validated(options: dict[str, object], error: type[Exception]) -> None:
    """Sizes must be positive ints."""
    with pytest.raises(error):
        VideoInputFilter(**options)  # type: ignore[arg-type]


def test_the_filter_runs_in_a_pipeline() -> None:
    """Composed into a RequestPipeline, the filter runs with the run's configuration."""
    video = VideoInputFilter(max_inline_bytes=1000, max_total_inline_bytes=1000)
    with LocalServer({"/clip.mp4": body(CLIP)}) as server:
        history = MessageHistory(
            turns=(user(VideoPart(url=server.url("/clip.mp4"))), user(clip(2000, "huge.mp4")))
        )
        pipeline = RequestPipeline(
            model=VIDEO_MODEL, host=PluginHost(allow=[]), filters=[video], configuration=LOCAL
        )
        assert "video_input" in [f.name for f in pipeline.active_filters]
        out = pipeline.build(history, now=T0)
    assert [v.data for v in videos(out)] == [CLIP]
    assert len(out.changes_by("video_input")) == 2
    assert history.turns[1].parts[0] == clip(2000, "huge.mp4")
