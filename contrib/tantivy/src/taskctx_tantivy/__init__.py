"""taskctx-tantivy: the ``tantivy`` lexical index provider, on the tantivy search library.

``fts`` stays the default lexical provider; choose this one by name
(``ctx.configure_index("tantivy")``, ``taskctx read --provider tantivy``).
"""

from taskctx_tantivy.provider import (
    PROVIDER_VERSION,
    TantivyIndexError,
    TantivyLockTimeoutError,
    TantivyPartition,
    TantivyProvider,
)

__all__ = [
    "PROVIDER_VERSION",
    "TantivyIndexError",
    "TantivyLockTimeoutError",
    "TantivyPartition",
    "TantivyProvider",
]
