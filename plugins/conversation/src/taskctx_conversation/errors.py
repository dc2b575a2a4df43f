"""The errors of taskctx-conversation, under the kernel's ``TaskCtxError``."""

from __future__ import annotations

from taskctx.errors import TaskCtxError

__all__ = ["ConversationError", "PayloadTooLargeError", "RequestFilterError"]


class ConversationError(TaskCtxError):
    """Base of this distribution's errors."""


class RequestFilterError(ConversationError):
    """A request filter failed or returned something that is not a ``ModelRequest``."""


class PayloadTooLargeError(ConversationError):
    """The provider refused a request as too large (HTTP 413 or its payload-limit error).

    Provider adapters raise it (or let an error with ``status_code == 413`` through) so
    :func:`taskctx_conversation.payload.send_with_payload_replay` can replay once without
    inline media.
    """
