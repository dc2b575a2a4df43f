"""taskctx: deliver task context to AI agents honestly.

Every package says which snapshot it was read from, what it holds, what it left out
and why, and how to get back to the original bytes.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from taskctx.consumption import ConsumptionLog, ContextConsumption
from taskctx.context import TaskContext
from taskctx.digests import sha256_digest, sha256_hex
from taskctx.errors import (
    ConsumptionConflictError,
    CursorError,
    MaterializationBudgetError,
    MediaError,
    PluginLoadError,
    PluginLoadWarning,
    PolicyError,
    RequiredOverflowError,
    RestoreError,
    StaleReaderError,
    TaskCtxError,
    UnknownBindingError,
    UnknownSourceKindError,
)
from taskctx.hookspecs import hookimpl
from taskctx.model import (
    Attachment,
    BudgetExcess,
    ContextBlock,
    ContextBudget,
    ContextConsumer,
    ContextFilters,
    ContextPackage,
    ContextReadIntent,
    ContextRef,
    DescriptorPage,
    Diagnostic,
    EnumerationRequest,
    ExactRead,
    Omission,
    OmissionReason,
    ReaderState,
    SectionInfo,
    SourceCoverage,
    SourceDescriptor,
)
from taskctx.plugins import PluginHost
from taskctx.policy import HostPolicy, RunConfiguration
from taskctx.reader import ContextReader
from taskctx.state import ContextState

try:
    __version__ = version("taskctx")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

__all__ = [
    "Attachment",
    "BudgetExcess",
    "ConsumptionConflictError",
    "ConsumptionLog",
    "ContextBlock",
    "ContextBudget",
    "ContextConsumer",
    "ContextConsumption",
    "ContextFilters",
    "ContextPackage",
    "ContextReadIntent",
    "ContextReader",
    "ContextRef",
    "ContextState",
    "CursorError",
    "DescriptorPage",
    "Diagnostic",
    "EnumerationRequest",
    "ExactRead",
    "HostPolicy",
    "MaterializationBudgetError",
    "MediaError",
    "Omission",
    "OmissionReason",
    "PluginHost",
    "PluginLoadError",
    "PluginLoadWarning",
    "PolicyError",
    "ReaderState",
    "RequiredOverflowError",
    "RestoreError",
    "RunConfiguration",
    "SectionInfo",
    "SourceCoverage",
    "SourceDescriptor",
    "StaleReaderError",
    "TaskContext",
    "TaskCtxError",
    "UnknownBindingError",
    "UnknownSourceKindError",
    "__version__",
    "hookimpl",
    "sha256_digest",
    "sha256_hex",
]
