"""The taskctx entry point of taskctx-langchain: it registers nothing.

The retriever and the loader are used directly from :mod:`taskctx_langchain`; no source,
handler, index provider or command is added to the host.
"""

from __future__ import annotations

__all__: list[str] = []
