"""What a TaskContext holds: direct entries and source bindings.

Plain values, so the reading engine (readback, gathering) can take them as arguments
without importing the TaskContext that owns them.
"""

from __future__ import annotations

import attrs

from taskctx.media import MediaClass
from taskctx.model import DIRECT_BINDING, ContextRef, SectionInfo
from taskctx.protocols import ContextSource

__all__ = ["DirectEntry", "SourceBinding"]


@attrs.define(slots=True, frozen=True)
class DirectEntry:
    """An entry put directly on the TaskContext: text, or bytes of a declared media type."""

    entry_id: str
    role: str
    required: bool
    media_type: str
    media_class: MediaClass
    text: str | None
    data: bytes | None
    digest: str
    title: str | None
    sections: tuple[SectionInfo, ...]
    declared_media_type: str | None = None
    """The media type ``put`` was given (``media_type`` is what the checks decided)."""

    @property
    def ref(self) -> ContextRef:
        """The canonical ref of this entry."""
        return ContextRef(binding=DIRECT_BINDING, path=self.entry_id)

    @property
    def chars(self) -> int:
        """Length of the text in characters (0 for binary entries)."""
        return len(self.text) if self.text is not None else 0


@attrs.define(slots=True, frozen=True)
class SourceBinding:
    """A source attached to a TaskContext under a binding id, with its default role."""

    binding_id: str
    source: ContextSource
    role: str
    identity: str | None

    @property
    def kind(self) -> str:
        """The source kind name."""
        return self.source.kind
