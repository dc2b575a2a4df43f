"""taskctx-haystack registers nothing with taskctx: its retriever and document store are
used from Haystack code (``from taskctx_haystack import ...``), not through a hook."""
