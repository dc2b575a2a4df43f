"""LangChain for taskctx: packages as Documents, coverage in metadata.

:class:`TaskContextRetriever` reads one package per call and returns its blocks as
Documents; :class:`TaskContextSourceLoader` loads one binding's items, lazily, by
descriptor. Both take their metadata from :mod:`taskctx.flatview`.
"""

from __future__ import annotations

from taskctx_langchain.loader import TaskContextSourceLoader
from taskctx_langchain.retriever import COVERAGE_KIND, TaskContextRetriever, package_documents

__all__ = ["COVERAGE_KIND", "TaskContextRetriever", "TaskContextSourceLoader", "package_documents"]
