"""One synced partition as the reader sees it: descriptors in structural order, filters.

``PartitionState`` keeps a partition's descriptors packed (``taskctx.frozen.Packer``: a
tuple of values each, a third of a model's memory), their keys in structural order
(path, then natural scope order) and memoised key views per structural filter, all
updated in place as a sync applies changes (``taskctx.index`` syncs it). Descriptors are
unpacked only when handed out: a ranked read unpacks its hits, a structural one the
items its pages walk.
"""

from __future__ import annotations

import asyncio
import bisect
import fnmatch
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal, overload

import attrs

from taskctx.frozen import Packer
from taskctx.media import is_hidden_path
from taskctx.model import ContextFilters, Enumeration, FrozenModel, SourceDescriptor
from taskctx.protocols import IndexPartition, IndexProvider, PartitionKey

__all__ = [
    "INCREMENTAL_LIMIT",
    "DescriptorKey",
    "DescriptorList",
    "DescriptorMap",
    "PackedDescriptor",
    "PartitionState",
    "SortedKeys",
    "SyncReport",
    "doc_id_of",
    "key_of_doc_id",
    "keys_of",
    "pack",
    "passes_filters",
    "unpack",
    "version_of",
]

DescriptorKey = tuple[str, str | None]
PackedDescriptor = tuple[Any, ...]
"""A descriptor as a partition keeps it (:data:`pack`; :data:`unpack` gives it back)."""

_PACKER = Packer(SourceDescriptor)
pack = _PACKER.pack
unpack = _PACKER.unpack
_FIELD = {name: i for i, name in enumerate(SourceDescriptor.model_fields)}
_PATH, _SCOPE, _POSITION = _FIELD["path"], _FIELD["scope"], _FIELD["position"]
_REQUIRED, _CONTENT_VERSION = _FIELD["required"], _FIELD["content_version"]
_DIGITS = re.compile(r"(\d+)")
_SCOPE_SEPARATOR = "\x1f"  # cannot occur in a path or scope, unlike "#"


def doc_id_of(path: str, scope: str | None) -> str:
    """The document id of a descriptor inside a partition."""
    return path if scope is None else f"{path}{_SCOPE_SEPARATOR}{scope}"


def version_of(row: PackedDescriptor) -> str:
    """The content version of a packed descriptor."""
    return row[_CONTENT_VERSION]  # type: ignore[no-any-return]


def key_of_doc_id(doc_id: str) -> DescriptorKey:
    """The descriptor key of a document id (``doc_id_of`` reversed)."""
    path, _, scope = doc_id.partition(_SCOPE_SEPARATOR)
    return (path, scope or None)


def _natural(text: str | None) -> tuple[Any, ...]:
    if text is None:
        return ()
    return tuple(int(part) if part.isdigit() else part for part in _DIGITS.split(text))


def _order_key(row: PackedDescriptor) -> tuple[Any, ...]:
    """Path, then the whole item, then its sections in document order (or natural order)."""
    scope = row[_SCOPE]
    if scope is None:
        return (row[_PATH],)  # sorts before (path, True, ...): the whole item comes first
    position = row[_POSITION]
    return (row[_PATH], True, position if position is not None else -1, _natural(scope))


class SortedKeys:
    """Descriptor keys in structural order (path, then natural scope order), updated in
    place against the packed descriptors they name.

    One change costs a binary search and a list insert, not a re-sort of everything. The
    order of a key is computed from its descriptor when compared (nothing is kept per key
    but the key itself), so a key is removed before its descriptor changes.
    """

    __slots__ = ("keys", "rows")

    def __init__(
        self, rows: Mapping[DescriptorKey, PackedDescriptor], keys: Iterable[DescriptorKey] = ()
    ) -> None:
        self.rows = rows
        self.keys: list[DescriptorKey] = sorted(keys, key=self._order)

    def _order(self, key: DescriptorKey) -> tuple[Any, ...]:
        return _order_key(self.rows[key])

    def __len__(self) -> int:
        return len(self.keys)

    def insert(self, key: DescriptorKey) -> None:
        """Insert ``key`` (its descriptor already kept, the key not yet here) at its place."""
        self.keys.insert(bisect.bisect_left(self.keys, self._order(key), key=self._order), key)

    def remove(self, key: DescriptorKey) -> None:
        """Remove ``key`` (its descriptor still the one it was inserted with), if present."""
        row = self.rows.get(key)
        if row is None:
            return
        index = bisect.bisect_left(self.keys, _order_key(row), key=self._order)
        if index < len(self.keys) and self.keys[index] == key:
            del self.keys[index]


class DescriptorList(Sequence[SourceDescriptor]):
    """Descriptors in the order of a list of keys, unpacked as they are read.

    Each access makes a new (equal) descriptor: hold on to what you use rather than
    reading one position twice. ``keys`` is the list itself (do not mutate).
    """

    __slots__ = ("keys", "rows")

    def __init__(
        self, rows: Mapping[DescriptorKey, PackedDescriptor], keys: Sequence[DescriptorKey]
    ) -> None:
        self.rows = rows
        self.keys = keys

    def __len__(self) -> int:
        return len(self.keys)

    @overload
    def __getitem__(self, index: int) -> SourceDescriptor: ...
    @overload
    def __getitem__(self, index: slice) -> list[SourceDescriptor]: ...
    def __getitem__(self, index: int | slice) -> SourceDescriptor | list[SourceDescriptor]:
        rows = self.rows
        if isinstance(index, slice):
            return [unpack(rows[key]) for key in self.keys[index]]
        return unpack(rows[self.keys[index]])

    def __iter__(self) -> Iterator[SourceDescriptor]:
        rows = self.rows
        return (unpack(rows[key]) for key in self.keys)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DescriptorList):
            return list(self.keys) == list(other.keys) and all(
                self.rows[key] == other.rows[key] for key in self.keys
            )
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"DescriptorList({len(self.keys)} descriptors)"


class DescriptorMap(Mapping[DescriptorKey, SourceDescriptor]):
    """A partition's descriptors by key, unpacked as they are read (a live view)."""

    __slots__ = ("rows",)

    def __init__(self, rows: Mapping[DescriptorKey, PackedDescriptor]) -> None:
        self.rows = rows

    def __getitem__(self, key: DescriptorKey) -> SourceDescriptor:
        return unpack(self.rows[key])

    def get(  # type: ignore[override]
        self, key: DescriptorKey, default: SourceDescriptor | None = None
    ) -> SourceDescriptor | None:
        """The descriptor of ``key``, or ``default``."""
        row = self.rows.get(key)
        return default if row is None else unpack(row)

    def __contains__(self, key: object) -> bool:
        return key in self.rows

    def __iter__(self) -> Iterator[DescriptorKey]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)


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
    rows: dict[DescriptorKey, PackedDescriptor] = attrs.field(factory=dict)
    """The packed descriptors by key (``descriptors`` unpacks them)."""
    structure: SortedKeys = attrs.field(
        default=attrs.Factory(lambda self: SortedKeys(self.rows), takes_self=True)
    )
    enumeration: Enumeration = Enumeration.EXHAUSTIVE
    enumeration_reasons: tuple[str, ...] = ()
    generation: int = 0
    _filtered: dict[str, tuple[ContextFilters, SortedKeys | None]] = attrs.field(factory=dict)
    """Memoised filter views; None where every descriptor passes (the view is the
    structure itself, not a copy of it)."""
    _required: set[DescriptorKey] = attrs.field(factory=set)
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
    def descriptors(self) -> DescriptorMap:
        """Every descriptor by key (a live view; each lookup unpacks)."""
        return DescriptorMap(self.rows)

    @property
    def ordered(self) -> DescriptorList:
        """Every descriptor in structural order (a live view)."""
        return DescriptorList(self.rows, self.structure.keys)

    def filtered(self, filters: ContextFilters) -> DescriptorList:
        """Descriptors passing the structural filters, in structural order (memoised)."""
        memo_key = filters.model_dump_json(exclude={"bindings", "source_kinds"})
        cached = self._filtered.get(memo_key)
        if cached is None:
            rows = self.rows
            everything = self.structure.keys
            if by_path_only(filters):  # the key holds the path: nothing to unpack
                passing = [key for key in everything if passes_path_filters(key[0], filters)]
            else:
                passing = [key for key in everything if passes_filters(unpack(rows[key]), filters)]
            view = None if len(passing) == len(everything) else SortedKeys(rows)
            if view is not None:
                view.keys = passing  # already in structural order
            cached = self._filtered[memo_key] = (filters, view)
        view = cached[1]
        return DescriptorList(self.rows, (self.structure if view is None else view).keys)

    def required(self) -> list[SourceDescriptor]:
        """Descriptors the source marks ``required``, in structural order."""
        rows = self.rows
        return [unpack(rows[key]) for key in sorted(self._required, key=self.structure._order)]

    def by_doc_id(self, doc_id: str) -> SourceDescriptor | None:
        """The descriptor a provider hit refers to."""
        row = self.rows.get(key_of_doc_id(doc_id))
        return None if row is None else unpack(row)

    def replace(
        self, upserts: Sequence[SourceDescriptor], deletes: Sequence[DescriptorKey]
    ) -> None:
        """Apply a change to the structural view and to every memoised filter view."""
        self.replace_packed([(d.key, pack(d)) for d in upserts], deletes)

    def replace_packed(
        self,
        upserts: Sequence[tuple[DescriptorKey, PackedDescriptor]],
        deletes: Sequence[DescriptorKey],
    ) -> None:
        """:meth:`replace` with descriptors already packed, each with its key."""
        rows = self.rows
        self.generation += 1
        rebuild = len(upserts) + len(deletes) > INCREMENTAL_LIMIT
        if not rebuild and len({key for key, _ in upserts}) < len(upserts):
            upserts = list(dict(upserts).items())  # a key given twice: the last one counts
        if rebuild:
            for key in deletes:
                rows.pop(key, None)
            for key, row in upserts:
                rows[key] = row
        else:
            views = [kept for _, kept in self._filtered.values() if kept is not None]
            for key in (*deletes, *(key for key, _ in upserts)):
                self.structure.remove(key)  # while its old descriptor is still kept
                for kept in views:
                    kept.remove(key)
                rows.pop(key, None)
            for key, row in upserts:
                rows[key] = row
                self.structure.insert(key)
        for key in deletes:
            self._required.discard(key)
        for key, row in upserts:
            if row[_REQUIRED]:
                self._required.add(key)
            else:
                self._required.discard(key)
        if rebuild:
            self.structure = SortedKeys(rows, rows)
            self._filtered.clear()
            return
        if not self._filtered:
            return
        for key, row in upserts:
            descriptor = unpack(row)
            for memo_key, (filters, view) in list(self._filtered.items()):
                if passes_filters(descriptor, filters):
                    if view is not None:
                        view.insert(key)
                elif view is None:  # no longer everything: made again when next asked
                    del self._filtered[memo_key]


def _dotted(metadata: Mapping[str, Any], dotted: str) -> tuple[bool, Any]:
    current: Any = metadata
    for part in dotted.split("."):
        if not isinstance(current, Mapping) or part not in current:
            return False, None
        current = current[part]
    return True, current


def by_path_only(filters: ContextFilters) -> bool:
    """Whether ``filters`` judge a descriptor by its path alone (no size, media type or
    metadata filter): :func:`passes_path_filters` then decides."""
    return filters.max_size is None and filters.media_types is None and not filters.metadata


def passes_path_filters(path: str, filters: ContextFilters) -> bool:
    """Whether ``path`` passes the path filters of a read (hidden, prefix, glob)."""
    if not filters.include_hidden and is_hidden_path(path):
        return False
    if filters.path_prefix and not path.startswith(filters.path_prefix):
        return False
    return not filters.glob or fnmatch.fnmatchcase(path, filters.glob)


def passes_filters(descriptor: SourceDescriptor, filters: ContextFilters) -> bool:
    """Whether a descriptor passes the structural filters of a read."""
    if not passes_path_filters(descriptor.path, filters):
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
    return [key_of_doc_id(doc_id) for doc_id in versions]
