"""taskctx-haystack: Haystack components over taskctx.

:class:`TaskContextRetriever` delivers a TaskContext package as Haystack Documents
(block facts as meta, coverage as an optional closing Document);
:class:`RecordDocumentStore` keeps a pipeline's Documents in a taskctx RecordStore.

The names are imported on first use, so the kernel loading this distribution's (empty)
plugin module does not import Haystack.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from taskctx_haystack.document_store import DOCUMENT_KIND, RecordDocumentStore
    from taskctx_haystack.retriever import COVERAGE_KIND, TaskContextRetriever, package_documents

__all__ = [
    "COVERAGE_KIND",
    "DOCUMENT_KIND",
    "RecordDocumentStore",
    "TaskContextRetriever",
    "package_documents",
]

_HOMES = {
    "COVERAGE_KIND": "taskctx_haystack.retriever",
    "DOCUMENT_KIND": "taskctx_haystack.document_store",
    "RecordDocumentStore": "taskctx_haystack.document_store",
    "TaskContextRetriever": "taskctx_haystack.retriever",
    "package_documents": "taskctx_haystack.retriever",
}


def __getattr__(name: str) -> Any:
    """The public name ``name``, imported from its module on first use."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'taskctx_haystack' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
