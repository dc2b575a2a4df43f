"""One synced partition as the reader sees it: descriptors in structural order, filters.

``PartitionState`` keeps a partition's descriptors by key, a ``SortedDescriptors`` view
in structural order (path, then natural scope order) and memoised views per structural
filter, all updated in place as a sync applies changes (``taskctx.index`` syncs it).
"""

from __future__ import annotations

import asyncio
import bisect
import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import attrs

from taskctx.media import is_hidden_path
from taskctx.model import ContextFilters, Enumeration, FrozenModel, SourceDescriptor
from taskctx.protocols import IndexPartition, IndexProvider, PartitionKey

__all__ = [
    "INCREMENTAL_LIMIT",
    "DescriptorKey",
    "PartitionState",
    "SortedDescriptors",
    "SyncReport",
    "doc_id_of",
    "keys_of",
    "passes_filters",
]

DescriptorKey = tuple[str, str | None]
_DIGITS = re.compile(r"(\d+)")
_SCOPE_SEPARATOR = "\x1f"  # cannot occur in a path or scope, unlike "#"


def doc_id_of(path: str, scope: str | None) -> str:
    """The document id of a descriptor inside a partition."""
    return path if scope is None else f"{path}{_SCOPE_SEPARATOR}{scope}"


def _natural(text: str | None) -> tuple[Any, ...]:
    if text is None:
        return ()
    return tuple(int(part) if part.isdigit() else part for part in _DIGITS.split(text))


def _order_key(descriptor: SourceDescriptor) -> tuple[Any, ...]:
    """Path, then the whole item, then its sections in document order (or natural order)."""
    scope = descriptor.scope
    position = descriptor.position if descriptor.position is not None else -1
    return (descriptor.path, scope is not None, position, _natural(scope))


class SortedDescriptors:
    """Descriptors in structural order (path, then natural scope order), updated in place.

    One change costs a binary search and a list insert, not a re-sort of everything.
    """

    __slots__ = ("items", "keys", "order")

    def __init__(self, descriptors: Iterable[SourceDescriptor] = ()) -> None:
        pairs = sorted(((_order_key(d), d) for d in descriptors), key=lambda p: p[0])
        self.keys: list[tuple[Any, ...]] = [key for key, _ in pairs]
        self.items: list[SourceDescriptor] = [d for _, d in pairs]
        self.order: dict[DescriptorKey, tuple[Any, ...]] = {
            d.key: key for key, d in zip(self.keys, self.items, strict=True)
        }

    def __len__(self) -> int:
        return len(self.items)

    def upsert(self, descriptor: SourceDescriptor) -> None:
        """Insert ``descriptor`` at its place, or replace the one with its key."""
        self.remove(*descriptor.key)
        key = _order_key(descriptor)
        self.order[descriptor.key] = key
        index = bisect.bisect_left(self.keys, key)
        if index < len(self.keys) and self.keys[index] == key:
            self.items[index] = descriptor
        else:
            self.keys.insert(index, key)
            self.items.insert(index, descriptor)

    def remove(self, path: str, scope: str | None) -> None:
        """Remove the descriptor with this key, if present."""
        key = self.order.pop((path, scope), None)
        if key is None:
            return
        index = bisect.bisect_left(self.keys, key)
        if index < len(self.keys) and self.keys[index] == key:
            del self.keys[index]
            del self.items[index]


class SyncReport(FrozenModel):
    """What one sync did: how it learnt the changes, and what it indexed."""

    mode: Literal["warm", "journal", "diff"]
    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    seconds: float = 0.0


INCREMENTAL_LIMIT = 1000
"""Past this many changes in one sync, the structural view is rebuilt instead."""


@attrs.define(slots=True)
class PartitionState:
    """One synced partition: descriptors by key in structural order, and the provider's part."""

    key: PartitionKey
    provider: IndexProvider
    partition: IndexPartition
    revision: str | None = None
    descriptors: dict[DescriptorKey, SourceDescriptor] = attrs.field(factory=dict)
    structure: SortedDescriptors = attrs.field(factory=SortedDescriptors)
    enumeration: Enumeration = Enumeration.EXHAUSTIVE
    enumeration_reasons: tuple[str, ...] = ()
    generation: int = 0
    _filtered: dict[str, tuple[ContextFilters, SortedDescriptors | None]] = attrs.field(
        factory=dict
    )
    """Memoised filter views; None where every descriptor passes (the view is the
    structure itself, not a copy of it)."""
    _by_doc_id: dict[str, SourceDescriptor] = attrs.field(factory=dict)
    _required: dict[DescriptorKey, SourceDescriptor] = attrs.field(factory=dict)
    last_sync: SyncReport | None = None
    generation_seen: str | None = None
    _lock: asyncio.Lock | None = None
    _lock_loop: asyncio.AbstractEventLoop | None = None

    def lock(self) -> asyncio.Lock:
        """The lock that serialises syncs of this partition within the running loop."""
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock_loop is not loop:
            self._lock, self._lock_loop = asyncio.Lock(), loop
        return self._lock

    @property
    def ordered(self) -> list[SourceDescriptor]:
        """Every descriptor in structural order (do not mutate)."""
        return self.structure.items

    def filtered(self, filters: ContextFilters) -> list[SourceDescriptor]:
        """Descriptors passing the structural filters, in structural order (memoised)."""
        memo_key = filters.model_dump_json(exclude={"bindings", "source_kinds"})
        cached = self._filtered.get(memo_key)
        if cached is None:
            everything = self.structure.items
            passing = [d for d in everything if passes_filters(d, filters)]
            view = None if len(passing) == len(everything) else SortedDescriptors(passing)
            cached = self._filtered[memo_key] = (filters, view)
        view = cached[1]
        return self.structure.items if view is None else view.items

    def required(self) -> list[SourceDescriptor]:
        """Descriptors the source marks ``required``, in structural order."""
        return sorted(self._required.values(), key=_order_key)

    def by_doc_id(self, doc_id: str) -> SourceDescriptor | None:
        """The descriptor a provider hit refers to."""
        return self._by_doc_id.get(doc_id)

    def replace(
        self, upserts: Sequence[SourceDescriptor], deletes: Sequence[DescriptorKey]
    ) -> None:
        """Apply a change to the structural view and to every memoised filter view."""
        for key in deletes:
            if self.descriptors.pop(key, None) is not None:
                self._by_doc_id.pop(doc_id_of(*key), None)
            self._required.pop(key, None)
        for descriptor in upserts:
            self.descriptors[descriptor.key] = descriptor
            self._by_doc_id[doc_id_of(*descriptor.key)] = descriptor
            if descriptor.required:
                self._required[descriptor.key] = descriptor
            else:
                self._required.pop(descriptor.key, None)
        self.generation += 1
        if len(upserts) + len(deletes) > INCREMENTAL_LIMIT:
            self.structure = SortedDescriptors(self.descriptors.values())
            self._filtered.clear()
            return
        for key in deletes:
            self.structure.remove(*key)
            for _, view in self._filtered.values():
                if view is not None:
                    view.remove(*key)
        for descriptor in upserts:
            self.structure.upsert(descriptor)
            for memo_key, (filters, view) in list(self._filtered.items()):
                if passes_filters(descriptor, filters):
                    if view is not None:
                        view.upsert(descriptor)
                elif view is None:  # no longer everything: made again when next asked
                    del self._filtered[memo_key]
                else:
                    view.remove(*descriptor.key)


def _dotted(metadata: Mapping[str, Any], dotted: str) -> tuple[bool, Any]:
    current: Any = metadata
    for part in dotted.split("."):
        if not isinstance(current, Mapping) or part not in current:
            return False, None
        current = current[part]
    return True, current


def passes_filters(descriptor: SourceDescriptor, filters: ContextFilters) -> bool:
    """Whether a descriptor passes the structural filters of a read."""
    path = descriptor.path
    if not filters.include_hidden and is_hidden_path(path):
        return False
    if filters.path_prefix and not path.startswith(filters.path_prefix):
        return False
    if filters.glob and not fnmatch.fnmatchcase(path, filters.glob):
        return False
    if filters.max_size is not None:
        size = descriptor.chars if descriptor.chars is not None else descriptor.size
        if size is not None and size > filters.max_size:
            return False
    if filters.media_types is not None and descriptor.media_type not in filters.media_types:
        return False
    for dotted, expected in filters.metadata.items():
        found, value = _dotted(descriptor.metadata, dotted)
        if not found or value != expected:
            return False
    return True


def keys_of(versions: Mapping[str, str]) -> list[DescriptorKey]:
    """The descriptor keys of a partition's document ids (``doc_id_of`` reversed)."""
    keys: list[DescriptorKey] = []
    for doc_id in versions:
        path, _, scope = doc_id.partition(_SCOPE_SEPARATOR)
        keys.append((path, scope or None))
    return keys
