"""taskctx-memory: working state (notes, tasks), projections, session memory, request context.

:class:`WorkingState` keeps one session's notes and tasks (or global memory's) within
limits, in a record store (embedded) or through an authoritative provider; it projects
them as one bounded ``<working-state>`` block at request boundaries and offers them to
readers as the ``session_memory`` source (:class:`SessionMemorySource` over a record
store, :class:`ProviderMemorySource` over a provider).
:class:`RequestContextComposer` composes the request-time blocks (runtime context,
workspace outline, pinned files, the working-state projection), one bounded block per
capability. Window thresholds, compaction and handoff are in ``taskctx_conversation``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from taskctx_memory.compose import ComposedContext, RequestContextComposer
    from taskctx_memory.config import MIN_PROJECTION_CHARS, WorkingStateConfiguration
    from taskctx_memory.errors import (
        InvalidKeyError,
        TaskExistsError,
        TaskStateProviderError,
        WorkingStateError,
        WorkingStateLimitError,
    )
    from taskctx_memory.files import FileContext, FileContextLimits, PinnedFile
    from taskctx_memory.limits import StateUsage
    from taskctx_memory.outline import OutlineLimits, WorkspaceOutline
    from taskctx_memory.projection import Projection, build_projection, project_working_state
    from taskctx_memory.provider import TaskStateBinding, TaskStateProvider
    from taskctx_memory.provider_source import ProviderMemorySource
    from taskctx_memory.request import (
        CapabilityContractError,
        CapabilityLimitError,
        CapabilityLimits,
        ContextSection,
        DuplicateCapabilityError,
        RequestCapability,
        RequestContextError,
        RequestTurn,
    )
    from taskctx_memory.runtime import RuntimeContext, RuntimeLimits
    from taskctx_memory.source import SessionMemorySource
    from taskctx_memory.state import WorkingState
    from taskctx_memory.state_context import (
        ProjectionLimits,
        ProjectionSource,
        WorkingStateProjection,
    )
    from taskctx_memory.values import NoteIndex, StateChange, Task, TaskStatus

# Importing the package stays cheap (plugin loading imports it through the entry
# point's module): each name is imported from its module on first use.
_EXPORTS: dict[str, str] = {
    "CapabilityContractError": "taskctx_memory.request",
    "CapabilityLimitError": "taskctx_memory.request",
    "CapabilityLimits": "taskctx_memory.request",
    "ComposedContext": "taskctx_memory.compose",
    "ContextSection": "taskctx_memory.request",
    "DuplicateCapabilityError": "taskctx_memory.request",
    "FileContext": "taskctx_memory.files",
    "FileContextLimits": "taskctx_memory.files",
    "InvalidKeyError": "taskctx_memory.errors",
    "MIN_PROJECTION_CHARS": "taskctx_memory.config",
    "NoteIndex": "taskctx_memory.values",
    "OutlineLimits": "taskctx_memory.outline",
    "PinnedFile": "taskctx_memory.files",
    "Projection": "taskctx_memory.projection",
    "ProjectionLimits": "taskctx_memory.state_context",
    "ProjectionSource": "taskctx_memory.state_context",
    "ProviderMemorySource": "taskctx_memory.provider_source",
    "RequestCapability": "taskctx_memory.request",
    "RequestContextComposer": "taskctx_memory.compose",
    "RequestContextError": "taskctx_memory.request",
    "RequestTurn": "taskctx_memory.request",
    "RuntimeContext": "taskctx_memory.runtime",
    "RuntimeLimits": "taskctx_memory.runtime",
    "SessionMemorySource": "taskctx_memory.source",
    "StateChange": "taskctx_memory.values",
    "StateUsage": "taskctx_memory.limits",
    "Task": "taskctx_memory.values",
    "TaskExistsError": "taskctx_memory.errors",
    "TaskStateBinding": "taskctx_memory.provider",
    "TaskStateProvider": "taskctx_memory.provider",
    "TaskStateProviderError": "taskctx_memory.errors",
    "TaskStatus": "taskctx_memory.values",
    "WorkingState": "taskctx_memory.state",
    "WorkingStateConfiguration": "taskctx_memory.config",
    "WorkingStateError": "taskctx_memory.errors",
    "WorkingStateLimitError": "taskctx_memory.errors",
    "WorkingStateProjection": "taskctx_memory.state_context",
    "WorkspaceOutline": "taskctx_memory.outline",
    "build_projection": "taskctx_memory.projection",
    "project_working_state": "taskctx_memory.projection",
}

__all__ = [
    "MIN_PROJECTION_CHARS",
    "CapabilityContractError",
    "CapabilityLimitError",
    "CapabilityLimits",
    "ComposedContext",
    "ContextSection",
    "DuplicateCapabilityError",
    "FileContext",
    "FileContextLimits",
    "InvalidKeyError",
    "NoteIndex",
    "OutlineLimits",
    "PinnedFile",
    "Projection",
    "ProjectionLimits",
    "ProjectionSource",
    "ProviderMemorySource",
    "RequestCapability",
    "RequestContextComposer",
    "RequestContextError",
    "RequestTurn",
    "RuntimeContext",
    "RuntimeLimits",
    "SessionMemorySource",
    "StateChange",
    "StateUsage",
    "Task",
    "TaskExistsError",
    "TaskStateBinding",
    "TaskStateProvider",
    "TaskStateProviderError",
    "TaskStatus",
    "WorkingState",
    "WorkingStateConfiguration",
    "WorkingStateError",
    "WorkingStateLimitError",
    "WorkingStateProjection",
    "WorkspaceOutline",
    "build_projection",
    "project_working_state",
]


# Names that moved to taskctx-conversation: asking for one says where it went.
_MOVED: dict[str, str] = {
    "Turn": "taskctx_conversation.history.Turn (the conversation's message model)",
    "TurnKind": "taskctx_conversation.history.TurnKind",
    "WindowAction": "taskctx_conversation.window.WindowAction",
    "WindowPolicy": "taskctx_conversation.window.WindowPolicy",
    "compact_history": "taskctx_conversation.compaction.compact",
}


def __getattr__(name: str) -> Any:
    """Import an exported name from its module the first time it is asked for."""
    module = _EXPORTS.get(name)
    if module is None:
        if name in _MOVED:
            raise AttributeError(
                f"{__name__}.{name} moved to taskctx_conversation: use {_MOVED[name]}"
            )
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
