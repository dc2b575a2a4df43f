"""Registers the first-party request filters through the ordinary hook."""

from __future__ import annotations

from collections.abc import Callable

from taskctx.hookspecs import hookimpl
from taskctx.protocols import RequestFilter

__all__ = ["register_request_filters"]


@hookimpl
def register_request_filters(register: Callable[[RequestFilter], None]) -> None:
    """The automatic filters with their defaults: message integrity, image input, cold
    start and video input; and the content filter, which runs only where a pipeline
    composes it with a provider's limits."""
    from taskctx_conversation.coldstart import ColdStartFilter
    from taskctx_conversation.content import ContentFilter
    from taskctx_conversation.images import ImageInputFilter
    from taskctx_conversation.integrity import MessageIntegrityFilter
    from taskctx_conversation.video import VideoInputFilter

    register(MessageIntegrityFilter())
    register(ImageInputFilter())
    register(ColdStartFilter())
    register(VideoInputFilter())
    register(ContentFilter())
