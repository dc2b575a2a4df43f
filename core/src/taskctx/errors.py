"""One exception hierarchy rooted at :class:`TaskCtxError`."""

from __future__ import annotations

from taskctx.codes import NamespacedCode, ProblemCode, parse_problem_code

__all__ = [
    "ConsumptionConflictError",
    "CursorError",
    "MaterializationBudgetError",
    "MediaError",
    "NotFoundError",
    "NotInstalledError",
    "PluginLoadError",
    "PluginLoadWarning",
    "PolicyError",
    "RequiredOverflowError",
    "RestoreError",
    "SelectionError",
    "SourceSpecError",
    "SourceUnavailableError",
    "StaleReaderError",
    "StatePathError",
    "SyncInAsyncError",
    "TaskCtxError",
    "UnknownAliasError",
    "UnknownBindingError",
    "UnknownSourceKindError",
    "UnsupportedScopeError",
    "UnverifiedReadError",
]


class TaskCtxError(Exception):
    """Base class of every error taskctx raises on purpose."""


class StaleReaderError(TaskCtxError):
    """The reader's pinned snapshot no longer matches the task context or its sources."""


class UnverifiedReadError(TaskCtxError):
    """A read reported no content version for an item pinned at one, so nothing proves it
    came from the pinned snapshot (a source or scoped reader that breaks the protocol)."""


class RequiredOverflowError(TaskCtxError):
    """Required blocks or explicitly requested refs do not fit the budget."""


class NotInstalledError(TaskCtxError, LookupError):
    """No installed plugin registers the requested name (source kind, provider, selector)."""


class UnknownSourceKindError(NotInstalledError):
    """No installed plugin registers the requested source kind, or a read filters on a
    kind no binding of its task context has (``ContextFilters.source_kinds``)."""


class UnknownBindingError(TaskCtxError, LookupError):
    """A read names a binding id the task context does not have
    (``ContextFilters.bindings``); the message names the attached ones."""


class UnsupportedScopeError(TaskCtxError):
    """No scoped reader (nor the source itself) serves the scope a ref asks for."""


class PolicyError(TaskCtxError):
    """A path, URL, ref or binding was refused by policy."""


class StatePathError(PolicyError):
    """A state folder or file (an index, a database, a key) is a link or not what it should
    be; ``path`` names it and nothing was opened or written through it."""

    def __init__(self, message: str, *, path: object) -> None:
        super().__init__(message)
        self.path = str(path)


class CursorError(TaskCtxError):
    """A continuation cursor is malformed, tampered with, expired or for another scope."""


class MaterializationBudgetError(TaskCtxError):
    """One operation would expand more records than the materialization budget allows."""


class PluginLoadError(TaskCtxError):
    """A plugin failed to load or registered a duplicate name (raised in strict mode)."""


class MediaError(TaskCtxError):
    """Content cannot be delivered as what it claims to be.

    ``code`` names the problem for programs: a :class:`~taskctx.codes.ProblemCode`
    (``ProblemCode.PARSE_FAILED``, or the string ``"parse_failed"``, which is coerced to
    the member) or a plugin's own code namespaced ``<namespace>:<name>``; any other
    string is a ValueError naming it. The message is the sentence a person reads.
    """

    def __init__(self, message: str, code: ProblemCode | str = ProblemCode.INVALID_MEDIA) -> None:
        super().__init__(message)
        self.code: ProblemCode | NamespacedCode = parse_problem_code(code)


class NotFoundError(TaskCtxError, LookupError):
    """A source has no item at the requested ref."""


class SourceUnavailableError(TaskCtxError):
    """A source could not answer (I/O failure, server down); other sources still deliver."""


class UnknownAliasError(TaskCtxError, KeyError):
    """A request-local alias (``ref_N``) was not issued in this package."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown alias"


class SelectionError(TaskCtxError):
    """A selector failed or answered with keys the host did not issue."""


class SourceSpecError(TaskCtxError, ValueError):
    """A source given as text (``KIND[:key=value,...]``) is malformed; the message says how."""


class SyncInAsyncError(TaskCtxError, RuntimeError):
    """A sync facade was called inside a running event loop; use the async method."""


class ConsumptionConflictError(TaskCtxError):
    """A consumption was recorded again under the same package, request and response ids
    with other content (other blocks, phase or consumer)."""


class RestoreError(TaskCtxError):
    """``TaskContext.restore`` cannot rebuild part of an exported state.

    ``binding_id`` and ``kind`` name the binding that could not be rebuilt (None when the
    failure is not a binding's: an index provider, a direct entry, the state's version).
    """

    def __init__(
        self, message: str, *, binding_id: str | None = None, kind: str | None = None
    ) -> None:
        super().__init__(message)
        self.binding_id = binding_id
        self.kind = kind


class PluginLoadWarning(UserWarning):
    """A plugin failed to load or registered a duplicate name; the others still loaded."""
