"""taskctx-memory: working state (notes, tasks), projections, session memory, request context.

:class:`WorkingState` keeps one session's notes and tasks (or global memory's) within
limits, in a record store (embedded) or through an authoritative provider; it projects
them as one bounded ``<working-state>`` block at request boundaries and offers them to
readers as the ``session_memory`` source (:class:`SessionMemorySource` over a record
store, :class:`ProviderMemorySource` over a provider).
:class:`RequestContextComposer` composes the request-time blocks (runtime context,
workspace outline, pinned files, the working-state projection), one bounded block per
capability; :class:`WindowPolicy` and :func:`compact_history` handle the window.
"""

from __future__ import annotations

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
from taskctx_memory.projection import (
    Projection,
    build_projection,
    project_working_state,
)
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
from taskctx_memory.state_context import ProjectionLimits, ProjectionSource, WorkingStateProjection
from taskctx_memory.values import NoteIndex, StateChange, Task, TaskStatus
from taskctx_memory.window import Turn, TurnKind, WindowAction, WindowPolicy, compact_history

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
    "Turn",
    "TurnKind",
    "WindowAction",
    "WindowPolicy",
    "WorkingState",
    "WorkingStateConfiguration",
    "WorkingStateError",
    "WorkingStateLimitError",
    "WorkingStateProjection",
    "WorkspaceOutline",
    "build_projection",
    "compact_history",
    "project_working_state",
]
