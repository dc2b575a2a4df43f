"""taskctx-workspace: a folder as the file boundary of a task execution.

Path confinement, a write policy (read-only by default, with this execution's own
fallback area), digests cached by stamp, one FileIOHandler registry with a parse cache,
and staged candidates with verified atomic promotion and full readback.
"""

from __future__ import annotations

from taskctx_workspace.errors import (
    EditError,
    PromotionBlocked,
    UnsupportedPlatformError,
    WorkspaceConflictError,
    WorkspaceNotFoundError,
)
from taskctx_workspace.results import FileEntry, FileRef, FileResult, FileStat, StagedFile
from taskctx_workspace.workspace import TaskWorkspace, default_agent_root

__all__ = [
    "EditError",
    "FileEntry",
    "FileRef",
    "FileResult",
    "FileStat",
    "PromotionBlocked",
    "StagedFile",
    "TaskWorkspace",
    "UnsupportedPlatformError",
    "WorkspaceConflictError",
    "WorkspaceNotFoundError",
    "default_agent_root",
]
