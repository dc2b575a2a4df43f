"""What the ``record_store`` source made of a record version while enumerating it, kept
for the exact read an index sync makes of the same version right after.

An entry is keyed by the record id and its content version (``r<N>:<sha256>``). The store
is append-only, so the version alive at revision ``N`` whose digest is ``<sha256>`` is
always the version enumeration rendered: a ref pinned at that content version reads
exactly those bytes, whenever it is read. A ref pinned at another version (or at none)
never matches an entry and is read from SQLite, as before.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from taskctx.model import SourceDescriptor

__all__ = ["Rendered", "RenderedCache"]

ENTRY_CHARS = 256
"""What one entry counts beyond its text or bytes (the descriptor, the key, the slots)."""


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

    @property
    def chars(self) -> int:
        """What this entry counts against the cache's bound."""
        held = len(self.text) if self.text is not None else len(self.data)
        return held + ENTRY_CHARS


class RenderedCache:
    """Rendered record versions, at most ``max_chars`` characters (a full cache keeps
    what it has).

    ``take`` removes what it returns: an index sync reads each version once, and what a
    sync never reads is dropped when the next enumeration starts (``clear``), so the cache
    holds nothing between syncs but what the last one did not need. A sync reads in the
    order enumeration rendered, so when the cache is full the entries worth keeping are
    the first ones: a new entry that does not fit is not kept (pushing the oldest out
    instead would drop exactly the entries the sync reads first, and cost a scan of the
    dict's emptied head on every keep).
    """

    def __init__(self, max_chars: int = 16_000_000) -> None:
        if max_chars < 0:
            raise ValueError(f"max_chars must not be negative, not {max_chars}")
        self.max_chars = max_chars
        self.chars = 0
        self._entries: dict[tuple[str, str], Rendered] = {}
        self._lock = threading.Lock()  # enumeration and reads run in worker threads

    def __len__(self) -> int:
        return len(self._entries)

    def keep(self, rendered: Rendered) -> None:
        """Keep ``rendered`` under its id and content version if it fits in the bound
        (replacing an entry of the same key); otherwise leave the cache as it is."""
        key = (rendered.descriptor.path, rendered.descriptor.content_version)
        with self._lock:
            old = self._entries.get(key)
            held = self.chars - (old.chars if old is not None else 0)
            if held + rendered.chars > self.max_chars:
                return
            self._entries[key] = rendered
            self.chars = held + rendered.chars

    def take(self, record_id: str, content_version: str | None) -> Rendered | None:
        """The entry of ``record_id`` at exactly ``content_version`` (removed), or None."""
        if content_version is None:
            return None
        with self._lock:
            rendered = self._entries.pop((record_id, content_version), None)
            if rendered is not None:
                self.chars -= rendered.chars
            return rendered

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._entries.clear()
            self.chars = 0
