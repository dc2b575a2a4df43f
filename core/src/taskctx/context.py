"""TaskContext: direct entries, source bindings, the structural revision and the index."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import attrs

from taskctx._context_audit import ContextAudit
from taskctx._sync import run_sync
from taskctx.consumption import ConsumptionLog, MemoryConsumptionLog
from taskctx.cursor import check_ttl, load_or_create_key
from taskctx.digests import sha256_digest
from taskctx.entries import DirectEntry, SourceBinding
from taskctx.errors import MediaError, PolicyError, StaleReaderError, TaskCtxError
from taskctx.images import ATTACHABLE_IMAGE_MEDIA_TYPES, sniff_image
from taskctx.index import (
    ContextIndex,
    PartitionState,
    RevisionMovedError,
    StructuralProvider,
    SyncReport,
    TextLoader,
)
from taskctx.listing import DescriptorListing, ListingCursors, list_descriptors
from taskctx.media import MediaClass, classify, classify_bytes, decode_text, normalize_media_type
from taskctx.model import (
    BINDING_ID_PATTERN,
    DIRECT_BINDING,
    ContextBudget,
    ContextConsumer,
    ContextPackage,
    ContextRef,
    FrozenModel,
    ReaderState,
    SourceDescriptor,
)
from taskctx.policy import RunConfiguration, govern
from taskctx.protocols import ContextSource, IndexProvider, PartitionKey, missing_members
from taskctx.readback import Readback, ReadScope
from taskctx.reader import ContextReader
from taskctx.sections import markdown_sections
from taskctx.statefiles import StateDir, default_state_dir

if TYPE_CHECKING:
    from taskctx.plugins import PluginHost

__all__ = ["DirectEntry", "SourceBinding", "SourceCatalogEntry", "TaskContext"]


class SourceCatalogEntry(FrozenModel):
    """What a TaskContext knows of one binding without reading it."""

    binding_id: str
    kind: str
    identity: str | None
    role: str
    description: Mapping[str, Any] = {}


def _host_or_default(host: PluginHost | None) -> PluginHost:
    if host is not None:
        return host
    from taskctx.plugins import PluginHost

    return PluginHost.from_environment()


def _state_dir_or_default(state_dir: str | Path | None) -> Path:
    return Path(state_dir) if state_dir is not None else default_state_dir()


@attrs.define(slots=True)
class TaskContext(ContextAudit):
    """The context of one task: direct entries plus attached sources, read via readers.

    ``host`` defaults to ``PluginHost.from_environment()``; ``state_dir`` (default
    ``$TASKCTX_STATE_DIR`` or the user cache) holds the persistent index and the
    cursor signing key, so cursors verify in a new process. ``configuration`` is the
    immutable RunConfiguration (allowed hosts, namespaced extensions) that sources and
    selectors of this task consult; it is set once, at construction. ``source()`` hands
    it to the factories of the sources it makes, and ``attach()`` puts every source
    under it, however the source was built (``taskctx.policy.govern``).
    """

    task_id: str
    host: PluginHost = attrs.field(default=None, converter=_host_or_default)
    state_dir: Path = attrs.field(default=None, converter=_state_dir_or_default)
    configuration: RunConfiguration = attrs.field(
        factory=RunConfiguration,
        validator=attrs.validators.instance_of(RunConfiguration),
        on_setattr=attrs.setters.frozen,  # attached sources were governed by this one
    )
    # the structure: read-only from outside (the properties below), changed only by put,
    # attach, remove and configure_index, which reset the revision
    _entries: dict[str, DirectEntry] = attrs.field(factory=dict, init=False)
    _bindings: dict[str, SourceBinding] = attrs.field(factory=dict, init=False)
    _index: ContextIndex = attrs.field(init=False)
    _index_provider: IndexProvider = attrs.field(init=False)
    _index_profile: str = attrs.field(default="default", init=False)
    _revision: str | None = attrs.field(default=None, init=False)
    _cursor_key: bytes | None = attrs.field(default=None, init=False)
    _next_entry: int = attrs.field(default=1, init=False)
    # audit and resume: where consumptions are kept (in memory unless a persistent log is
    # given, e.g. taskctx_records.RecordConsumptionLog), the readers made here and the
    # packages they issued
    consumption_log: ConsumptionLog = attrs.field(factory=MemoryConsumptionLog)
    _readers: list[ContextReader] = attrs.field(factory=list, init=False)
    _packages: list[ContextPackage] = attrs.field(factory=list, init=False)

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.task_id, str) or not self.task_id.strip():
            raise TaskCtxError("task_id must be a non-empty string")
        if not isinstance(self.consumption_log, ConsumptionLog):
            raise TypeError(
                "consumption_log must be a ConsumptionLog (append, consumptions), not "
                f"{type(self.consumption_log).__name__}"
            )
        self._index = ContextIndex(self.state_dir / "index")
        lexical = self.host.default_lexical_provider()
        self._index_provider = lexical if lexical is not None else StructuralProvider()

    @property
    def entries(self) -> Mapping[str, DirectEntry]:
        """The direct entries by entry id, read-only (``put`` and ``remove`` change them)."""
        return MappingProxyType(self._entries)

    @property
    def bindings(self) -> Mapping[str, SourceBinding]:
        """The attached sources by binding id, read-only (``attach`` and ``remove``)."""
        return MappingProxyType(self._bindings)

    @property
    def index(self) -> ContextIndex:
        """The context's index of partitions (not replaceable)."""
        return self._index

    @property
    def index_provider(self) -> IndexProvider:
        """The provider the index ranks with (``configure_index`` chooses it)."""
        return self._index_provider

    @property
    def index_profile(self) -> str:
        """The index profile (``configure_index`` chooses it)."""
        return self._index_profile

    # -- structure ---------------------------------------------------------------

    def put(
        self,
        role: str,
        content: str | bytes,
        required: bool = False,
        media_type: str | None = None,
        *,
        title: str | None = None,
        entry_id: str | None = None,
    ) -> ContextRef:
        """Put a direct entry; its declared media type is checked like any other signal."""
        if not role:
            raise TaskCtxError("a direct entry needs a role")
        if isinstance(content, bytes):  # the one classifier: a NUL anywhere is binary
            decision = classify_bytes(None, content, media_type)
        else:  # the caller's own text, kept exact (the view shows a NUL as U+2400)
            decision = classify(None, media_type, content_kind="text")
        text: str | None
        data: bytes | None = None
        if isinstance(content, str):
            if decision.media_class is not MediaClass.TEXT:
                raise MediaError(
                    f"direct entry declares media type {media_type!r} but its content is "
                    f"text; pass bytes for {decision.media_class.value} content"
                )
            text = content
        elif decision.media_class is MediaClass.TEXT:
            text = decode_text(content)
        else:
            if media_type and normalize_media_type(media_type) in ATTACHABLE_IMAGE_MEDIA_TYPES:
                sniff_image(content, media_type)  # a declared image type is what the bytes are
            text, data = None, bytes(content)
        entry_id = entry_id or f"entry-{self._next_entry}"
        if entry_id in self._entries:
            raise TaskCtxError(f"direct entry {entry_id!r} already exists; remove it first")
        self._next_entry += 1
        digest = sha256_digest(text if text is not None else data or b"")
        self._entries[entry_id] = DirectEntry(
            entry_id=entry_id,
            role=role,
            required=required,
            media_type=decision.media_type,
            media_class=decision.media_class,
            text=text,
            data=data,
            digest=digest,
            title=title,
            sections=markdown_sections(text) if text is not None else (),
            declared_media_type=media_type,
        )
        self._revision = None
        return self._entries[entry_id].ref

    def source(self, kind: str, /, **options: Any) -> ContextSource:
        """A new source of ``kind`` made under this context's configuration.

        ``host.source(kind, configuration=self.configuration, **options)``: a factory
        with a ``configuration`` parameter receives it (a pinned repository authorises
        its URL and every redirect with it), and the source is governed by it.
        """
        if "configuration" in options:
            raise TaskCtxError(
                "TaskContext.source passes the context's own configuration; "
                "set it on TaskContext(configuration=...), not per source"
            )
        return self.host.source(kind, configuration=self.configuration, **options)

    def attach(
        self, source: ContextSource, binding_id: str | None = None, *, role: str = "information"
    ) -> str:
        """Attach ``source`` under ``binding_id`` (default: its kind); return the binding id.

        The source is put under this context's configuration first
        (``source.with_configuration``): one that contacted a host the configuration
        refuses, or that cannot say it keeps to restricted hosts, raises PolicyError
        naming the binding, and nothing is attached.
        """
        missing = missing_members(source, ContextSource)
        if missing:
            raise TaskCtxError(f"{source!r} is not a ContextSource: no {', '.join(missing)}")
        binding_id = binding_id or source.kind
        if not BINDING_ID_PATTERN.fullmatch(binding_id):
            raise PolicyError(
                f"invalid binding id {binding_id!r}: letters, digits, '_', '.', '-' only"
            )
        if binding_id in self._bindings:
            raise TaskCtxError(f"binding {binding_id!r} is already attached")
        source = govern(source, self.configuration, f"binding {binding_id!r}")
        identity = getattr(source, "identity", None)
        self._bindings[binding_id] = SourceBinding(
            binding_id, source, role, identity if isinstance(identity, str) else None
        )
        self._revision = None
        return binding_id

    def remove(self, target: str | ContextRef) -> None:
        """Remove a binding (by id) or a direct entry (by ref or entry id)."""
        if isinstance(target, str) and target in self._bindings:
            del self._bindings[target]
        else:
            ref = target if isinstance(target, ContextRef) else None
            if ref is None and isinstance(target, str):
                ref = (
                    ContextRef.parse(target)
                    if target.startswith("ctx://")
                    else ContextRef(binding=DIRECT_BINDING, path=target)
                )
            if ref is None or ref.binding != DIRECT_BINDING or ref.path not in self._entries:
                raise TaskCtxError(f"no binding or direct entry {str(target)!r} to remove")
            del self._entries[ref.path]
        self._revision = None

    def configure_index(
        self, provider: str | IndexProvider | None = None, *, profile: str = "default"
    ) -> None:
        """Choose the index provider (a name such as ``fts``, or a provider object such
        as a ``FusedProvider``) and the profile. None: the default lexical provider."""
        if provider is None or provider == "structural":
            lexical = None if provider == "structural" else self.host.default_lexical_provider()
            self._index_provider = lexical if lexical is not None else StructuralProvider()
        elif isinstance(provider, str):
            self._index_provider = self.host.index_provider(provider)
        else:
            self._index_provider = provider
        self._index_profile = profile
        self._revision = None

    @property
    def revision(self) -> str:
        """A digest of the structure: entries, bindings and index choice (not source data)."""
        if self._revision is None:
            structure = {
                "task": self.task_id,
                "entries": [
                    [e.entry_id, e.role, e.required, e.media_type, e.digest]
                    for e in self._entries.values()
                ],
                "bindings": [
                    [b.binding_id, b.kind, b.identity or f"object:{id(b.source)}", b.role]
                    for b in self._bindings.values()
                ],
                "index": [self._index_provider.name, self._index_profile],
            }
            raw = json.dumps(structure, sort_keys=True).encode()
            self._revision = "ctx-" + hashlib.sha256(raw).hexdigest()[:20]
        return self._revision

    def source_catalog(self) -> tuple[SourceCatalogEntry, ...]:
        """One entry per binding: kind, identity, role and the source's own description."""
        entries = []
        for binding in self._bindings.values():
            describe = getattr(binding.source, "describe", None)
            description = describe() if callable(describe) else {}
            entries.append(
                SourceCatalogEntry(
                    binding_id=binding.binding_id,
                    kind=binding.kind,
                    identity=binding.identity,
                    role=binding.role,
                    description=description,
                )
            )
        return tuple(entries)

    # -- index --------------------------------------------------------------------

    def partition_state(self, binding: SourceBinding) -> PartitionState:
        """The index partition of ``binding`` under the current provider and profile."""
        provider = self._index_provider
        key = PartitionKey(
            binding_id=binding.binding_id,
            source_identity=binding.identity or f"object:{id(binding.source)}",
            profile=self._index_profile,
            provider=provider.name,
            provider_version=str(getattr(provider, "version", "1")),
        )
        home = getattr(binding.source, "index_directory", None)
        return self._index.state(
            key,
            provider,
            persistent=binding.identity is not None,
            home=home if home is None or isinstance(home, StateDir) else Path(home),
        )

    def text_loader(self, binding: SourceBinding) -> TextLoader:
        """Reads a descriptor's whole text for a provider that indexes text (None if not text),
        with the content version of the bytes it came from."""
        return Readback(self.read_scope()).text_loader(binding)

    def read_scope(self) -> ReadScope:
        """What readback may see of this task: the read-only entries and bindings, the host
        and a lookup of synced descriptors (readback never holds the TaskContext)."""
        return ReadScope(
            task_id=self.task_id,
            entries=self.entries,
            bindings=self.bindings,
            host=self.host,
            descriptor=self._known_descriptor,
        )

    def _known_descriptor(
        self, binding_id: str, path: str, scope: str | None
    ) -> SourceDescriptor | None:
        """The synced descriptor of ``path``/``scope`` (or of the whole item), if known."""
        for state in self._index.states.values():
            if state.key.binding_id == binding_id:
                found = state.descriptors.get((path, scope)) or state.descriptors.get((path, None))
                if found is not None:
                    return found
        return None

    async def async_sync_index(
        self, progress: Callable[[str, int, int], None] | None = None
    ) -> dict[str, SyncReport]:
        """Bring every binding's partition to the source's current revision (``taskctx index``).

        ``progress(binding_id, done, total)`` is called as documents are prepared.
        """
        reports: dict[str, SyncReport] = {}
        for binding in self._bindings.values():
            state = self.partition_state(binding)
            revision = await binding.source.async_revision()

            def tick(done: int, total: int, binding_id: str = binding.binding_id) -> None:
                if progress is not None:
                    progress(binding_id, done, total)

            load_text = self.text_loader(binding)
            try:
                await self._index.sync(state, binding.source, revision, load_text, tick)
            except RevisionMovedError as moved:  # re-sync once at the revision it moved to
                try:
                    await self._index.sync(state, binding.source, moved.seen, load_text, tick)
                except RevisionMovedError as again:
                    raise StaleReaderError(
                        f"source {binding.binding_id!r} kept changing while it was indexed "
                        f"({again}); what was read at its own version is kept, run again"
                    ) from None
            assert state.last_sync is not None
            reports[binding.binding_id] = state.last_sync
        return reports

    def sync_index(
        self, progress: Callable[[str, int, int], None] | None = None
    ) -> dict[str, SyncReport]:
        """Sync facade of :meth:`async_sync_index`."""
        return run_sync(self.async_sync_index(progress), "async_sync_index")

    async def async_list_descriptors(
        self,
        cursor: str | None = None,
        *,
        page_size: int = 100,
        include_hidden: bool = False,
        cursor_ttl: float = 3600.0,
    ) -> DescriptorListing:
        """One page of every binding's descriptors on one pinned snapshot (see
        :mod:`taskctx.listing`); pass the page's ``next_cursor`` for the next."""
        if isinstance(page_size, bool) or not isinstance(page_size, int) or page_size < 1:
            raise ValueError(f"page_size must be a whole number of at least 1, not {page_size!r}")
        cursors = ListingCursors.for_context(
            self.cursor_key, self.task_id, self.revision, check_ttl(cursor_ttl)
        )
        return await list_descriptors(
            self.bindings, cursors, cursor, page_size, include_hidden=include_hidden
        )

    def list_descriptors(
        self,
        cursor: str | None = None,
        *,
        page_size: int = 100,
        include_hidden: bool = False,
        cursor_ttl: float = 3600.0,
    ) -> DescriptorListing:
        """Sync facade of :meth:`async_list_descriptors`."""
        listing = self.async_list_descriptors(
            cursor, page_size=page_size, include_hidden=include_hidden, cursor_ttl=cursor_ttl
        )
        return run_sync(listing, "async_list_descriptors")

    @property
    def cursor_key(self) -> bytes:
        """The key that signs this context's cursors (loaded or made once)."""
        if self._cursor_key is None:
            self._cursor_key = load_or_create_key(self.state_dir)
        return self._cursor_key

    # -- readers -----------------------------------------------------------------

    def reader(
        self,
        consumer: str | ContextConsumer,
        phase: str | None = None,
        budget: ContextBudget | None = None,
        *,
        selector: str | None = None,
        cursor_ttl: float = 3600.0,
    ) -> ContextReader:
        """A reader for ``consumer``; it pins its snapshot at the first read (or ``pin()``)."""
        cursor_ttl = check_ttl(cursor_ttl)
        if isinstance(consumer, str):
            consumer = ContextConsumer(name=consumer)
        if selector is not None:
            self.host.selector(selector)  # fail now, not at the first read
        reader = ContextReader.create(
            self, consumer, phase, budget or ContextBudget(), selector, cursor_ttl
        )
        self._readers.append(reader)
        return reader

    def restore_reader(
        self, state: ReaderState | Mapping[str, Any] | str, *, cursor_ttl: float = 3600.0
    ) -> ContextReader:
        """Rebuild a reader from ``export_state()`` output (model, dict or JSON text)."""
        cursor_ttl = check_ttl(cursor_ttl)
        if isinstance(state, str):
            parsed = ReaderState.model_validate_json(state)
        elif isinstance(state, ReaderState):
            parsed = state
        else:
            parsed = ReaderState.model_validate(state)
        if parsed.task_id != self.task_id:
            raise TaskCtxError(f"reader state is for task {parsed.task_id!r}, not {self.task_id!r}")
        reader = ContextReader.restore(self, parsed, cursor_ttl)
        self._readers.append(reader)
        return reader

    def readers(self) -> tuple[ContextReader, ...]:
        """The readers made by :meth:`reader` and :meth:`restore_reader`, in that order
        (after :meth:`restore`: the restored readers, disclosure history included)."""
        return tuple(self._readers)
