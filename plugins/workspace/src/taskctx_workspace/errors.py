"""The workspace's own errors, each under the kernel's :class:`~taskctx.errors.TaskCtxError`.

Path and policy refusals use the kernel's ``PolicyError``; media problems its
``MediaError(code=...)``. What is specific to a workspace lives here.
"""

from __future__ import annotations

import errno
from typing import Literal

from taskctx.errors import NotFoundError, TaskCtxError

__all__ = [
    "EditError",
    "PromotionBlocked",
    "UnsupportedPlatformError",
    "WorkspaceConflictError",
    "WorkspaceNotFoundError",
]


class WorkspaceNotFoundError(NotFoundError, FileNotFoundError):
    """No file at a workspace path (neither external nor, where allowed, this execution's).

    Both a kernel ``NotFoundError`` and a ``FileNotFoundError``, so either ``except`` works.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.errno = errno.ENOENT


class UnsupportedPlatformError(TaskCtxError):
    """This platform cannot open files relative to a folder descriptor (``dir_fd``).

    The workspace refuses to run there rather than fall back to path checks a concurrent
    process could race.
    """


class WorkspaceConflictError(TaskCtxError):
    """The file is not the version the caller expected (``expected_sha256`` mismatch)."""

    def __init__(self, message: str, *, path: str, expected: str, actual: str) -> None:
        super().__init__(message)
        self.path = path
        self.expected = expected
        self.actual = actual


class EditError(TaskCtxError, ValueError):
    """``edit_file`` could not apply: ``old`` occurs zero or several times, or is empty."""

    def __init__(self, message: str, *, path: str, occurrences: int) -> None:
        super().__init__(message)
        self.path = path
        self.occurrences = occurrences


PromotionReason = Literal[
    "expected_digest_mismatch",
    "staged_digest_mismatch",
    "staged_missing",
    "target_refused",
    "write_failed",
    "readback_failed",
    "readback_mismatch",
]


class PromotionBlocked(TaskCtxError):
    """A staged delivery did not happen: nothing may claim the target holds the candidate.

    ``outcome`` is always ``"blocked"``; ``reason`` is a code, ``detail`` the explanation.
    When ``reason`` is one of the verification codes (``expected_digest_mismatch``,
    ``staged_digest_mismatch``, ``staged_missing``, ``target_refused``) the target was not
    touched.
    """

    outcome: Literal["blocked"] = "blocked"

    def __init__(self, target: str, reason: PromotionReason, detail: str) -> None:
        super().__init__(f"promotion of {target!r} blocked ({reason}): {detail}")
        self.target = target
        self.reason: PromotionReason = reason
        self.detail = detail
