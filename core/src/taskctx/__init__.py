"""taskctx: deliver task context to AI agents honestly.

Every package says which snapshot it was read from, what it holds, what it left out
and why, and how to get back to the original bytes.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from taskctx.clisources import CliSource, CliValue
from taskctx.codes import DiagnosticCode, NamespacedCode, ProblemCode
from taskctx.consumption import ConsumptionLog, ContextConsumption
from taskctx.context import TaskContext
from taskctx.digests import sha256_digest, sha256_hex
from taskctx.errors import (
    ConsumptionConflictError,
    CursorError,
    MaterializationBudgetError,
    MediaError,
    NotFoundError,
    NotInstalledError,
    PluginLoadError,
    PluginLoadWarning,
    PolicyError,
    RequiredOverflowError,
    RestoreError,
    SourceSpecError,
    SourceUnavailableError,
    StaleReaderError,
    TaskCtxError,
    UnknownBindingError,
    UnknownSourceKindError,
    UnsupportedScopeError,
    UnverifiedReadError,
)
from taskctx.hookspecs import hookimpl
from taskctx.listing import DescriptorListing, ListedDescriptor
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
    CoverageReason,
    DescriptorPage,
    Diagnostic,
    EnumerationRequest,
    ExactRead,
    Omission,
    OmissionReason,
    Problem,
    ReaderState,
    Representation,
    SectionInfo,
    SourceCoverage,
    SourceDescriptor,
)
from taskctx.plugins import PluginHost
from taskctx.policy import ConfigurableSource, HostPolicy, RunConfiguration
from taskctx.protocols import (
    ChangeSet,
    ContextSource,
    FileIOHandler,
    IndexDocument,
    IndexPartition,
    IndexProvider,
    ParsedDocument,
    PartitionKey,
    ProtocolMember,
    ScopedRead,
    SearchHit,
    SearchResult,
    SelectionCandidate,
    SelectionRequest,
    Selector,
    SourceFactory,
    SupportsChanges,
    SupportsReadMany,
    SupportsRebuild,
    missing_members,
    protocol_members,
    protocol_shape,
)
from taskctx.reader import ContextReader
from taskctx.sourcespec import SourceSpec, parse_source_spec
from taskctx.state import ContextState

try:
    __version__ = version("taskctx")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

__all__ = [
    "Attachment",
    "BudgetExcess",
    "ChangeSet",
    "CliSource",
    "CliValue",
    "ConfigurableSource",
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
    "ContextSource",
    "ContextState",
    "CoverageReason",
    "CursorError",
    "DescriptorListing",
    "DescriptorPage",
    "Diagnostic",
    "DiagnosticCode",
    "EnumerationRequest",
    "ExactRead",
    "FileIOHandler",
    "HostPolicy",
    "IndexDocument",
    "IndexPartition",
    "IndexProvider",
    "ListedDescriptor",
    "MaterializationBudgetError",
    "MediaError",
    "NamespacedCode",
    "NotFoundError",
    "NotInstalledError",
    "Omission",
    "OmissionReason",
    "ParsedDocument",
    "PartitionKey",
    "PluginHost",
    "PluginLoadError",
    "PluginLoadWarning",
    "PolicyError",
    "Problem",
    "ProblemCode",
    "ProtocolMember",
    "ReaderState",
    "Representation",
    "RequiredOverflowError",
    "RestoreError",
    "RunConfiguration",
    "ScopedRead",
    "SearchHit",
    "SearchResult",
    "SectionInfo",
    "SelectionCandidate",
    "SelectionRequest",
    "Selector",
    "SourceCoverage",
    "SourceDescriptor",
    "SourceFactory",
    "SourceSpec",
    "SourceSpecError",
    "SourceUnavailableError",
    "StaleReaderError",
    "SupportsChanges",
    "SupportsReadMany",
    "SupportsRebuild",
    "TaskContext",
    "TaskCtxError",
    "UnknownBindingError",
    "UnknownSourceKindError",
    "UnsupportedScopeError",
    "UnverifiedReadError",
    "__version__",
    "hookimpl",
    "missing_members",
    "parse_source_spec",
    "protocol_members",
    "protocol_shape",
    "sha256_digest",
    "sha256_hex",
]
