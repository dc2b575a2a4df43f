"""The ``taskctx`` entry point of taskctx-llamaindex: it registers nothing.

The retriever and the reader are used from LlamaIndex code (``TaskContextRetriever``,
``TaskContextReader``); the kernel has no source, handler, index provider or selector
to learn from this distribution, so this module holds no hook implementation.
"""

from __future__ import annotations

__all__: list[str] = []
