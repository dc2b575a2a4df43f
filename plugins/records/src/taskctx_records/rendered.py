"""What the ``record_store`` source makes of a record version: its descriptor and the
text (or bytes) a read of it delivers, made once for both.

Enumeration hands the texts to the index sync with its pages (``DescriptorPage.texts``),
so a first read indexes the records it listed without reading them again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from taskctx.model import SourceDescriptor

__all__ = ["Rendered"]


class Rendered:
    """One record version as enumeration rendered it: what an exact read of it needs."""

    __slots__ = ("collection", "data", "descriptor", "scope", "text")

    def __init__(
        self,
        descriptor: SourceDescriptor,
        *,
        collection: str,
        scope: Mapping[str, Any],
        text: str | None,
        data: bytes,
    ) -> None:
        self.descriptor = descriptor
        self.collection = collection
        self.scope = scope
        self.text = text
        self.data = data
