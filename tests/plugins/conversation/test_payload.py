"""Payload-too-large replay: one retry without inline media, only when it can help.

The provider is a real HTTP server on 127.0.0.1 that answers 413 to a JSON body over
its limit; ``send`` posts ``request.model_dump_json()`` to it with urllib.
"""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from taskctx_conversation.errors import PayloadTooLargeError
from taskctx_conversation.history import MessageHistory, Turn
from taskctx_conversation.parts import (
    DocumentPart,
    ImagePart,
    Part,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    VideoPart,
)
from taskctx_conversation.payload import (
    FILTER_NAME,
    async_send_with_payload_replay,
    is_payload_too_large,
    send_with_payload_replay,
    without_inline_media,
)
from taskctx_conversation.request import ModelCharacteristics, ModelRequest

from tests.plugins.conversation.helpers import png
from tests.plugins.conversation.localserver import LocalServer, send

Reply = dict[str, Any]
MODEL = ModelCharacteristics(name="m", video_input=True)
IMAGE = png(300, 300)
DROPPED = "dropped because the request was too large for the provider"


def provider(limit: int, received: list[Reply]) -> Callable[[BaseHTTPRequestHandler], None]:
    """A route that takes a JSON request of at most ``limit`` bytes, else answers 413."""

    def route(handler: BaseHTTPRequestHandler) -> None:
        data = handler.rfile.read(int(handler.headers["Content-Length"]))
        received.append(json.loads(data))
        if len(data) > limit:
            error = {"type": "error", "error": {"type": "request_too_large"}}
            send(handler, json.dumps(error).encode(), "application/json", status=413)
        else:
            reply = {"bytes": len(data), "attempt": received[-1]["attempt"]}
            send(handler, json.dumps(reply).encode(), "application/json")

    return route


def poster(url: str) -> Callable[[ModelRequest], Reply]:
    """A send that posts the request as JSON to ``url`` and returns the JSON reply."""

    def post(request: ModelRequest) -> Reply:
        body = request.model_dump_json().encode()
        headers = {"Content-Type": "application/json"}
        call = urllib.request.Request(url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(call, timeout=10) as response:
                reply: Reply = json.loads(response.read())
                return reply
        except urllib.error.HTTPError as exc:
            exc.close()
            raise

    return post


def media_request() -> ModelRequest:
    """A request holding inline image, tool-result image and video, and URL media."""
    turns = (
        Turn(
            role="user",
            parts=(
                TextPart(text="compare these"),
                ImagePart(data=IMAGE, media_type="image/png", label="chart.png"),
                ImagePart(url="https://example.org/photo.jpg", media_type="image/jpeg"),
                VideoPart(data=b"\x00" * 4000, media_type="video/mp4", label="clip.mp4"),
                DocumentPart(data=b"%PDF-1.4 tiny", media_type="application/pdf"),
            ),
        ),
        Turn(role="assistant", parts=(ToolCallPart(call_id="c1", name="screenshot"),)),
        Turn(
            role="tool",
            parts=(
                ToolResultPart(
                    call_id="c1",
                    content="taken",
                    images=(ImagePart(data=IMAGE, media_type="image/png"),),
                ),
            ),
        ),
    )
    return ModelRequest(turns=turns, model=MODEL)


def text_only_request() -> ModelRequest:
    """A request with nothing inline to drop (a URL image only)."""
    parts: tuple[Part, ...] = (
        TextPart(text="x" * 5000),
        ImagePart(url="https://example.org/a.png", media_type="image/png"),
    )
    return ModelRequest(turns=(Turn(role="user", parts=parts),), model=MODEL)


def inline_data(body: Reply) -> list[str]:
    """The types of the parts of a posted request that still carry inline data."""
    found = []
    for turn in body["turns"]:
        for part in turn["parts"]:
            if part.get("data"):
                found.append(part["type"])
            found.extend("image" for image in part.get("images", ()) if image.get("data"))
    return found


def test_a_413_replays_once_without_inline_media() -> None:
    """The provider's 413 is answered by one replay with the inline images and video
    dropped (URL media and documents stay); the replay is attempt 2 and succeeds."""
    received: list[Reply] = []
    with LocalServer() as server:
        server.routes["/v1/messages"] = provider(limit=5000, received=received)
        reply = send_with_payload_replay(poster(server.url("/v1/messages")), media_request())
    assert reply["attempt"] == 2
    assert [body["attempt"] for body in received] == [1, 2]
    assert inline_data(received[0]) == ["image", "video", "document", "image"]
    assert inline_data(received[1]) == ["document"]
    replayed = received[1]["turns"]
    user_parts = replayed[0]["parts"]
    assert user_parts[1] == {
        "type": "text",
        "text": f"[image chart.png ({len(IMAGE)} bytes) is not in this request: {DROPPED}]",
    }
    assert user_parts[2]["url"] == "https://example.org/photo.jpg"
    assert user_parts[3]["text"].startswith("[video clip.mp4 (3.9 KiB) is not in this request")
    tool_parts = replayed[2]["parts"]
    assert tool_parts[0]["images"] == []
    assert tool_parts[1]["text"].startswith("[an inline image (image/png, ")


def test_without_inline_media_records_its_changes_and_bumps_the_attempt() -> None:
    """Each dropped part is recorded under payload_too_large; attempt goes up by one;
    the request it was made from is unchanged."""
    request = media_request()
    replay = without_inline_media(request)
    assert replay.attempt == request.attempt + 1
    changes = replay.changes_by(FILTER_NAME)
    assert [(c.turn, c.action) for c in changes] == [
        (0, "replaced"),
        (0, "replaced"),
        (2, "replaced"),
    ]
    assert all(DROPPED in c.detail for c in changes)
    assert isinstance(request.turns[0].parts[1], ImagePart)
    assert MessageHistory(turns=request.turns).turns[2].images()[0].data == IMAGE


def test_an_explicit_payload_too_large_error_is_replayed() -> None:
    """A PayloadTooLargeError from an adapter triggers the replay too."""
    sent: list[ModelRequest] = []

    def adapter(request: ModelRequest) -> int:
        sent.append(request)
        if len(sent) == 1:
            raise PayloadTooLargeError("the provider refused 2.1 MB")
        return request.attempt

    assert send_with_payload_replay(adapter, media_request()) == 2
    assert len(sent) == 2
    assert sent[1].changes_by(FILTER_NAME)


def test_an_unrelated_error_is_not_replayed() -> None:
    """A 500 is not a size refusal: raised as it is, after one call."""
    calls: list[int] = []

    def broken(handler: BaseHTTPRequestHandler) -> None:
        calls.append(1)
        handler.rfile.read(int(handler.headers["Content-Length"]))
        send(handler, b"{}", "application/json", status=500)

    with (
        LocalServer({"/v1/messages": broken}) as server,
        pytest.raises(urllib.error.HTTPError) as info,
    ):
        send_with_payload_replay(poster(server.url("/v1/messages")), media_request())
    assert info.value.code == 500
    assert calls == [1]


def test_a_second_413_is_raised_chained_from_the_first() -> None:
    """When the replay is refused too, its error is raised, caused by the first."""
    received: list[Reply] = []
    with LocalServer() as server:
        server.routes["/v1/messages"] = provider(limit=100, received=received)
        with pytest.raises(urllib.error.HTTPError) as info:
            send_with_payload_replay(poster(server.url("/v1/messages")), media_request())
    assert [body["attempt"] for body in received] == [1, 2]
    assert info.value.code == 413
    first = info.value.__cause__
    assert isinstance(first, urllib.error.HTTPError)
    assert first is not info.value
    assert first.code == 413


def test_a_request_without_inline_media_is_not_replayed() -> None:
    """Nothing inline to drop: the original 413 is raised after a single call."""
    received: list[Reply] = []
    with LocalServer() as server:
        server.routes["/v1/messages"] = provider(limit=1000, received=received)
        with pytest.raises(urllib.error.HTTPError) as info:
            send_with_payload_replay(poster(server.url("/v1/messages")), text_only_request())
    assert info.value.code == 413
    assert info.value.__cause__ is None
    assert len(received) == 1


def test_the_async_form_replays_the_same_way() -> None:
    """async_send_with_payload_replay replays once, and raises what is not a size refusal."""
    received: list[Reply] = []
    with LocalServer() as server:
        server.routes["/v1/messages"] = provider(limit=5000, received=received)
        post = poster(server.url("/v1/messages"))

        async def send_async(request: ModelRequest) -> Reply:
            return await asyncio.to_thread(post, request)

        reply = asyncio.run(async_send_with_payload_replay(send_async, media_request()))

    async def fails(request: ModelRequest) -> Reply:
        raise KeyError("no such model")

    assert reply["attempt"] == 2
    assert len(received) == 2
    with pytest.raises(KeyError, match="no such model"):
        asyncio.run(async_send_with_payload_replay(fails, media_request()))


class _StatusError(Exception):
    """An SDK-style error carrying a status."""

    def __init__(self, message: str, **attributes: object) -> None:
        super().__init__(message)
        for name, value in attributes.items():
            setattr(self, name, value)


class _Response:
    """An SDK-style response object."""

    def __init__(self, status_code: int) -> None:
        self.status_code = status_code


def _caused(error: BaseException, cause: BaseException) -> BaseException:
    error.__cause__ = cause
    return error


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (PayloadTooLargeError("too big"), True),
        (_StatusError("refused", status_code=413), True),
        (_StatusError("refused", status=413), True),
        (_StatusError("refused", response=_Response(413)), True),
        (RuntimeError("Error code: 413 - {'error': {'type': 'request_too_large'}}"), True),
        (RuntimeError("HTTP Error 413: Request Entity Too Large"), True),
        (RuntimeError("Payload Too Large"), True),
        (RuntimeError("input exceeds the maximum request size of 20 MB"), True),
        (_caused(RuntimeError("provider call failed"), PayloadTooLargeError("x")), True),
        (ValueError("bad tool schema"), False),
        (_StatusError("server error", status_code=500), False),
        (_StatusError("odd", status=True, code="413"), False),
        (_StatusError("refused", response=_Response(429)), False),
        (RuntimeError("Request too large for gpt-4o on tokens per min (TPM)"), False),
    ],
)
def test_is_payload_too_large(error: BaseException, expected: bool) -> None:
    """Which errors count as a provider refusing a request as too large."""
    assert is_payload_too_large(error) is expected
