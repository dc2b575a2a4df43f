"""taskctx-conversation: the message history and what reaches the model from it.

A :class:`MessageHistory` of immutable :class:`Turn` objects is the stored record of a
run. :class:`RequestPipeline` derives each model request from it through the request
filters (plugins, hook ``register_request_filters``): message integrity (always on),
image input, cold start and video input by default, the content filter when composed.
Filters change the request only. The rest of the package replays a request without
inline media after a payload-too-large error, decides when to hand off or compact, and
compacts or hands off a run so that its inputs and the skills in use survive.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from taskctx.imageprep import ImageInputPolicy
    from taskctx_conversation.coldstart import ColdStartFilter
    from taskctx_conversation.compaction import (
        CompactionResult,
        async_summarize,
        compact,
        summarize,
        summary_request,
    )
    from taskctx_conversation.content import ContentFilter
    from taskctx_conversation.download import (
        Downloaded,
        DownloadError,
        DownloadFailure,
        fetch_bounded,
    )
    from taskctx_conversation.errors import (
        ConversationError,
        PayloadTooLargeError,
        RequestFilterError,
    )
    from taskctx_conversation.handoff import (
        SUMMARIZE_TOOL,
        HandoffArgumentsError,
        HandoffNote,
        SkillInUse,
        handoff_from_tool_call,
        restore_handoff,
        skills_in_use,
        skills_reminder,
    )
    from taskctx_conversation.history import MessageHistory, Role, Turn, TurnKind
    from taskctx_conversation.images import ImageInputFilter, PreparedImageCache
    from taskctx_conversation.integrity import MessageIntegrityFilter
    from taskctx_conversation.parts import (
        DocumentPart,
        ImagePart,
        MediaPart,
        Part,
        TextPart,
        ThinkingPart,
        ToolCallPart,
        ToolResultPart,
        VideoPart,
    )
    from taskctx_conversation.payload import (
        async_send_with_payload_replay,
        is_payload_too_large,
        send_with_payload_replay,
        without_inline_media,
    )
    from taskctx_conversation.pipeline import DEFAULT, RequestPipeline
    from taskctx_conversation.request import (
        FilterContext,
        ModelCharacteristics,
        ModelRequest,
        RequestChange,
        ToolDefinition,
    )
    from taskctx_conversation.video import VideoInputFilter
    from taskctx_conversation.window import WindowAction, WindowPolicy

# Importing the package stays cheap (plugin loading imports it through the entry
# point's module): each name is imported from its module on first use.
_EXPORTS: dict[str, str] = {
    "ColdStartFilter": "taskctx_conversation.coldstart",
    "CompactionResult": "taskctx_conversation.compaction",
    "ContentFilter": "taskctx_conversation.content",
    "ConversationError": "taskctx_conversation.errors",
    "DEFAULT": "taskctx_conversation.pipeline",
    "DocumentPart": "taskctx_conversation.parts",
    "DownloadError": "taskctx_conversation.download",
    "DownloadFailure": "taskctx_conversation.download",
    "Downloaded": "taskctx_conversation.download",
    "FilterContext": "taskctx_conversation.request",
    "HandoffArgumentsError": "taskctx_conversation.handoff",
    "HandoffNote": "taskctx_conversation.handoff",
    "ImageInputFilter": "taskctx_conversation.images",
    "ImageInputPolicy": "taskctx.imageprep",
    "ImagePart": "taskctx_conversation.parts",
    "MediaPart": "taskctx_conversation.parts",
    "MessageHistory": "taskctx_conversation.history",
    "MessageIntegrityFilter": "taskctx_conversation.integrity",
    "ModelCharacteristics": "taskctx_conversation.request",
    "ModelRequest": "taskctx_conversation.request",
    "Part": "taskctx_conversation.parts",
    "PayloadTooLargeError": "taskctx_conversation.errors",
    "PreparedImageCache": "taskctx_conversation.images",
    "RequestChange": "taskctx_conversation.request",
    "RequestFilterError": "taskctx_conversation.errors",
    "RequestPipeline": "taskctx_conversation.pipeline",
    "Role": "taskctx_conversation.history",
    "SUMMARIZE_TOOL": "taskctx_conversation.handoff",
    "SkillInUse": "taskctx_conversation.handoff",
    "TextPart": "taskctx_conversation.parts",
    "ThinkingPart": "taskctx_conversation.parts",
    "ToolCallPart": "taskctx_conversation.parts",
    "ToolDefinition": "taskctx_conversation.request",
    "ToolResultPart": "taskctx_conversation.parts",
    "Turn": "taskctx_conversation.history",
    "TurnKind": "taskctx_conversation.history",
    "VideoInputFilter": "taskctx_conversation.video",
    "VideoPart": "taskctx_conversation.parts",
    "WindowAction": "taskctx_conversation.window",
    "WindowPolicy": "taskctx_conversation.window",
    "async_send_with_payload_replay": "taskctx_conversation.payload",
    "async_summarize": "taskctx_conversation.compaction",
    "compact": "taskctx_conversation.compaction",
    "fetch_bounded": "taskctx_conversation.download",
    "handoff_from_tool_call": "taskctx_conversation.handoff",
    "is_payload_too_large": "taskctx_conversation.payload",
    "restore_handoff": "taskctx_conversation.handoff",
    "send_with_payload_replay": "taskctx_conversation.payload",
    "skills_in_use": "taskctx_conversation.handoff",
    "skills_reminder": "taskctx_conversation.handoff",
    "summarize": "taskctx_conversation.compaction",
    "summary_request": "taskctx_conversation.compaction",
    "without_inline_media": "taskctx_conversation.payload",
}

__all__ = [
    "DEFAULT",
    "SUMMARIZE_TOOL",
    "ColdStartFilter",
    "CompactionResult",
    "ContentFilter",
    "ConversationError",
    "DocumentPart",
    "DownloadError",
    "DownloadFailure",
    "Downloaded",
    "FilterContext",
    "HandoffArgumentsError",
    "HandoffNote",
    "ImageInputFilter",
    "ImageInputPolicy",
    "ImagePart",
    "MediaPart",
    "MessageHistory",
    "MessageIntegrityFilter",
    "ModelCharacteristics",
    "ModelRequest",
    "Part",
    "PayloadTooLargeError",
    "PreparedImageCache",
    "RequestChange",
    "RequestFilterError",
    "RequestPipeline",
    "Role",
    "SkillInUse",
    "TextPart",
    "ThinkingPart",
    "ToolCallPart",
    "ToolDefinition",
    "ToolResultPart",
    "Turn",
    "TurnKind",
    "VideoInputFilter",
    "VideoPart",
    "WindowAction",
    "WindowPolicy",
    "async_send_with_payload_replay",
    "async_summarize",
    "compact",
    "fetch_bounded",
    "handoff_from_tool_call",
    "is_payload_too_large",
    "restore_handoff",
    "send_with_payload_replay",
    "skills_in_use",
    "skills_reminder",
    "summarize",
    "summary_request",
    "without_inline_media",
]


def __getattr__(name: str) -> Any:
    """Import an exported name from its module the first time it is asked for."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
