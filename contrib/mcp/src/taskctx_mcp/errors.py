"""Kernel and source errors as MCP errors: a reason code, a JSON-RPC code, the message.

The sources and the kernel decide what is refused; this module only names the refusal
for the wire. Nothing here formats a traceback: an unexpected exception becomes
``internal`` with its type and message.
"""

from __future__ import annotations

from enum import Enum

import attrs
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS
from pydantic import ValidationError

from taskctx import ContextPackage, OmissionReason, Representation
from taskctx.errors import (
    CursorError,
    MediaError,
    NotFoundError,
    PolicyError,
    RequiredOverflowError,
    SourceUnavailableError,
    StaleReaderError,
    TaskCtxError,
    UnknownAliasError,
    UnknownBindingError,
    UnknownSourceKindError,
    UnsupportedScopeError,
)
from taskctx_mcp.config import ConfigError
from taskctx_mcp.uris import URIError

__all__ = [
    "ErrorReason",
    "NotDeliveredError",
    "ServiceError",
    "WireError",
    "check_delivered",
    "wire_error",
]


class ErrorReason(str, Enum):
    """What was wrong, as the ``reason`` of an error's data (the program branches on it)."""

    INVALID_ARGUMENTS = "invalid_arguments"
    INVALID_URI = "invalid_uri"
    UNKNOWN_BINDING = "unknown_binding"
    UNKNOWN_SOURCE_KIND = "unknown_source_kind"
    UNKNOWN_ALIAS = "unknown_alias"
    NOT_FOUND = "not_found"
    POLICY_REFUSED = "policy_refused"
    INVALID_CURSOR = "invalid_cursor"
    STALE = "stale"
    OVER_BUDGET = "over_budget"
    REFERENCE_ONLY = "reference_only"
    UNSUPPORTED_SCOPE = "unsupported_scope"
    SOURCE_UNAVAILABLE = "source_unavailable"
    UNKNOWN_TOOL = "unknown_tool"
    INTERNAL = "internal"


class ServiceError(TaskCtxError):
    """Bad input the kernel has no error of its own for (an alias with no read, say)."""


class NotDeliveredError(TaskCtxError):
    """The one ref a read asked for is not in its package; ``reason`` says why."""

    def __init__(self, message: str, reason: ErrorReason) -> None:
        super().__init__(message)
        self.reason = reason


_OMITTED_AS = {
    OmissionReason.NOT_FOUND: ErrorReason.NOT_FOUND,
    OmissionReason.READ_FAILED: ErrorReason.NOT_FOUND,
    OmissionReason.UNSUPPORTED_SCOPE: ErrorReason.UNSUPPORTED_SCOPE,
}


def check_delivered(package: ContextPackage, what: str) -> None:
    """Raise NotDeliveredError unless ``package`` holds a block or an attachment.

    The kernel decided, and said why in an omission: a missing item or a scope nobody
    serves is bad input; anything else (an image for a consumer without image
    attachments, a document without a handler) is reference only, never guessed text.
    """
    if any(b.representation is not Representation.REFERENCE_ONLY for b in package.blocks):
        return
    if package.attachments:
        return
    details = "; ".join(
        f"{o.reason.value}{': ' + o.detail if o.detail else ''}" for o in package.omissions
    )
    reason = next(
        (_OMITTED_AS[o.reason] for o in package.omissions if o.reason in _OMITTED_AS),
        ErrorReason.REFERENCE_ONLY,
    )
    if reason is ErrorReason.REFERENCE_ONLY:
        message = f"{what} is delivered as a reference only, never as guessed text"
    else:
        message = f"{what} was not delivered"
    raise NotDeliveredError(message + (f" ({details})" if details else ""), reason)


@attrs.define(slots=True, frozen=True)
class WireError:
    """An error as it goes on the wire: JSON-RPC code, reason and message."""

    code: int
    reason: ErrorReason
    message: str

    @property
    def data(self) -> dict[str, str]:
        """The JSON-RPC error's ``data``."""
        return {"reason": self.reason.value}


# most specific first: the first class an exception is an instance of decides
_REASONS: tuple[tuple[type[BaseException], ErrorReason], ...] = (
    (UnknownAliasError, ErrorReason.UNKNOWN_ALIAS),
    (UnknownBindingError, ErrorReason.UNKNOWN_BINDING),
    (UnknownSourceKindError, ErrorReason.UNKNOWN_SOURCE_KIND),
    (URIError, ErrorReason.INVALID_URI),
    (NotFoundError, ErrorReason.NOT_FOUND),
    (PolicyError, ErrorReason.POLICY_REFUSED),
    (CursorError, ErrorReason.INVALID_CURSOR),
    (StaleReaderError, ErrorReason.STALE),
    (RequiredOverflowError, ErrorReason.OVER_BUDGET),
    (MediaError, ErrorReason.REFERENCE_ONLY),
    (UnsupportedScopeError, ErrorReason.UNSUPPORTED_SCOPE),
    (SourceUnavailableError, ErrorReason.SOURCE_UNAVAILABLE),
    (ServiceError, ErrorReason.INVALID_ARGUMENTS),
    (ConfigError, ErrorReason.INVALID_ARGUMENTS),
    (TaskCtxError, ErrorReason.INVALID_ARGUMENTS),
)
_SERVER_SIDE = {ErrorReason.SOURCE_UNAVAILABLE, ErrorReason.INTERNAL}


def _message(exc: BaseException) -> str:
    # a KeyError subclass (UnknownAliasError) quotes its message in str(); use the text
    if isinstance(exc, KeyError) and exc.args and isinstance(exc.args[0], str):
        return exc.args[0]
    return str(exc) or type(exc).__name__


def wire_error(exc: BaseException) -> WireError:
    """The wire form of ``exc``; bad input is INVALID_PARAMS, server trouble INTERNAL_ERROR."""
    if isinstance(exc, ValidationError):
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors()
        )
        return WireError(INVALID_PARAMS, ErrorReason.INVALID_ARGUMENTS, problems)
    if isinstance(exc, NotDeliveredError):
        return WireError(INVALID_PARAMS, exc.reason, str(exc))
    for kind, reason in _REASONS:
        if isinstance(exc, kind):
            code = INTERNAL_ERROR if reason in _SERVER_SIDE else INVALID_PARAMS
            return WireError(code, reason, _message(exc))
    if isinstance(exc, (ValueError, LookupError)):  # bad input a source or model refused
        return WireError(INVALID_PARAMS, ErrorReason.INVALID_ARGUMENTS, str(exc))
    return WireError(INTERNAL_ERROR, ErrorReason.INTERNAL, f"{type(exc).__name__}: {exc}")
