"""Exported TaskContext state: what ``export_state`` writes and ``restore`` rebuilds from.

A :class:`ContextState` is JSON-safe and self-contained for audit: the direct entries
with their content, every binding (rebuildable or not, and why not), the index choice,
the run configuration, the state of every reader that pinned a snapshot (its disclosure
history), every package the readers issued, whole, and the consumptions recorded.

Export never fails because a binding cannot be rebuilt: the audit facts are worth
keeping even when the task cannot be resumed. Such a binding is exported with
``options=None`` and the reason, and ``restore`` fails with a
:class:`~taskctx.errors.RestoreError` naming its binding id and kind, unless the caller
hands the source back (``sources={binding_id: source}``). A binding never silently
disappears.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, model_validator

from taskctx.consumption import ContextConsumption
from taskctx.errors import NotInstalledError, RestoreError, TaskCtxError, UnknownSourceKindError
from taskctx.jsonsafe import check_json_depth
from taskctx.model import ContextPackage, FrozenModel, ReaderState
from taskctx.policy import RunConfiguration
from taskctx.protocols import ContextSource

if TYPE_CHECKING:
    from pathlib import Path

    from taskctx.consumption import ConsumptionLog
    from taskctx.context import DirectEntry, SourceBinding, TaskContext
    from taskctx.plugins import PluginHost
    from taskctx.protocols import IndexProvider

__all__ = [
    "BindingState",
    "ContextState",
    "EntryState",
    "IndexState",
    "binding_state",
    "export_context",
    "parse_state",
    "restore_context",
]


class EntryState(FrozenModel):
    """A direct entry with its content: text, or bytes as base64."""

    entry_id: str
    role: str
    required: bool
    media_type: str
    """What the media checks decided (a restore must decide the same)."""
    declared_media_type: str | None = None
    """What ``put`` was given; a restore puts the entry again with it."""
    title: str | None = None
    text: str | None = None
    data_base64: str | None = None
    digest: str

    @model_validator(mode="after")
    def _one_content(self) -> EntryState:
        if (self.text is None) == (self.data_base64 is None):
            raise ValueError(f"entry {self.entry_id!r} needs exactly one of text, data_base64")
        return self


class BindingState(FrozenModel):
    """A binding: id, kind, role, identity, and the factory options that rebuild it.

    ``options`` is None when the source cannot be rebuilt; ``not_rebuildable`` says why.
    """

    binding_id: str
    kind: str
    role: str
    identity: str | None = None
    options: Mapping[str, Any] | None = None
    not_rebuildable: str | None = None

    @model_validator(mode="after")
    def _options_or_reason(self) -> BindingState:
        if (self.options is None) == (self.not_rebuildable is None):
            raise ValueError(
                f"binding {self.binding_id!r} needs exactly one of options, not_rebuildable"
            )
        if self.options is not None:
            check_json_depth(self.options, f"options of binding {self.binding_id!r}")
        return self


class IndexState(FrozenModel):
    """The index choice: provider name and profile."""

    provider: str
    profile: str = "default"


class ContextState(FrozenModel):
    """Everything ``TaskContext.restore`` rebuilds a context from, and the audit trail."""

    version: Literal[1] = 1
    task_id: str
    revision: str
    """The context revision at export; a complete restore reproduces it."""
    configuration: RunConfiguration = Field(default_factory=RunConfiguration)
    entries: tuple[EntryState, ...] = ()
    next_entry: int = Field(default=1, ge=1)
    bindings: tuple[BindingState, ...] = ()
    index: IndexState
    readers: tuple[ReaderState, ...] = ()
    """Every reader of this context that pinned a snapshot, in the order they were made."""
    packages: tuple[ContextPackage, ...] = ()
    """Every package the readers issued, whole, in the order they were issued."""
    consumptions: tuple[ContextConsumption, ...] = ()
    exported_at: datetime = Field(default_factory=lambda: datetime.now(timezone.utc))


def parse_state(state: ContextState | Mapping[str, Any] | str) -> ContextState:
    """A ContextState from a model, a dict (``model_dump``) or JSON text."""
    if isinstance(state, ContextState):
        return state
    if isinstance(state, str):
        return ContextState.model_validate_json(state)
    if isinstance(state, Mapping):
        return ContextState.model_validate(state)
    raise TypeError(
        f"state must be a ContextState, a dict or JSON text, not {type(state).__name__}"
    )


def entry_state(entry: DirectEntry) -> EntryState:
    """The exported form of a direct entry."""
    data = None if entry.data is None else base64.b64encode(entry.data).decode("ascii")
    return EntryState(
        entry_id=entry.entry_id,
        role=entry.role,
        required=entry.required,
        media_type=entry.media_type,
        declared_media_type=entry.declared_media_type,
        title=entry.title,
        text=entry.text,
        data_base64=data if entry.text is None else None,
        digest=entry.digest,
    )


def entry_content(entry: EntryState) -> str | bytes:
    """The content to put again: the text, or the decoded bytes."""
    if entry.text is not None:
        return entry.text
    assert entry.data_base64 is not None
    try:
        return base64.b64decode(entry.data_base64, validate=True)
    except ValueError:
        raise RestoreError(f"direct entry {entry.entry_id!r}: data_base64 is not base64") from None


def _rebuild_options(source: ContextSource) -> tuple[dict[str, Any] | None, str | None]:
    rebuild = getattr(source, "rebuild_options", None)
    name = type(source).__qualname__
    if not callable(rebuild):
        return None, f"{name} has no rebuild_options() (see docs/writing-plugins.md)"
    try:
        options = rebuild()
    except Exception as exc:  # a plugin's method: the export keeps the fact, not the crash
        return None, f"{name}.rebuild_options() raised {type(exc).__name__}: {exc}"
    if options is None:
        return None, f"{name}.rebuild_options() says this instance cannot be made again"
    if not isinstance(options, Mapping) or not all(isinstance(k, str) for k in options):
        return None, f"{name}.rebuild_options() returned {type(options).__name__}, not a dict"
    try:  # JSON-safe, and in the form it will have after a JSON round trip
        normal: dict[str, Any] = json.loads(json.dumps(dict(options), allow_nan=False))
    except (TypeError, ValueError) as exc:
        return None, f"{name}.rebuild_options() returned options that are not JSON: {exc}"
    return normal, None


def binding_state(binding: SourceBinding) -> BindingState:
    """The exported form of a binding, marked not rebuildable (with why) when it is not."""
    options, reason = _rebuild_options(binding.source)
    return BindingState(
        binding_id=binding.binding_id,
        kind=binding.kind,
        role=binding.role,
        identity=binding.identity,
        options=options,
        not_rebuildable=reason,
    )


def rebuild_source(
    host: PluginHost, binding: BindingState, configuration: RunConfiguration
) -> ContextSource:
    """``host.source(kind, **options)`` for ``binding``; a RestoreError naming the binding
    id and kind when it cannot be made, or is not the source that was exported."""
    where = f"binding {binding.binding_id!r} (kind {binding.kind!r})"
    if binding.options is None:
        raise RestoreError(
            f"{where} cannot be rebuilt: {binding.not_rebuildable}; pass the source in "
            f"restore(sources={{{binding.binding_id!r}: ...}})",
            binding_id=binding.binding_id,
            kind=binding.kind,
        )
    options = dict(binding.options)
    options.pop("configuration", None)  # the restored context's rules hold, not a copy's
    try:
        source = host.source(binding.kind, configuration=configuration, **options)
    except UnknownSourceKindError as exc:
        raise RestoreError(
            f"{where} cannot be rebuilt: {exc}", binding_id=binding.binding_id, kind=binding.kind
        ) from None
    except (TaskCtxError, OSError, TypeError, ValueError) as exc:
        raise RestoreError(
            f"{where} cannot be rebuilt from {dict(binding.options)}: {type(exc).__name__}: {exc}",
            binding_id=binding.binding_id,
            kind=binding.kind,
        ) from exc
    return source


def check_rebuilt(binding: BindingState, source: ContextSource) -> None:
    """Refuse a source of another kind, or one that shows another identity than exported."""
    where = f"binding {binding.binding_id!r} (kind {binding.kind!r})"
    if getattr(source, "kind", None) != binding.kind:
        raise RestoreError(
            f"{where}: the source given is of kind {getattr(source, 'kind', None)!r}",
            binding_id=binding.binding_id,
            kind=binding.kind,
        )
    identity = getattr(source, "identity", None)
    if binding.identity is not None and identity != binding.identity:
        raise RestoreError(
            f"{where}: the rebuilt source is {identity!r}, not the exported {binding.identity!r}",
            binding_id=binding.binding_id,
            kind=binding.kind,
        )


def index_provider_of(host: PluginHost, index: IndexState) -> str:
    """The provider name to configure (``structural`` needs no plugin); a RestoreError
    naming the provider when the host has none of that name."""
    if index.provider == "structural":
        return index.provider
    try:
        host.index_provider(index.provider)
    except NotInstalledError as exc:
        raise RestoreError(
            f"index provider {index.provider!r} cannot be restored: {exc}; pass "
            "restore(index_provider=...)"
        ) from None
    return index.provider


def export_context(context: TaskContext) -> ContextState:
    """The state of ``context`` (``TaskContext.export_state``)."""
    return ContextState(
        task_id=context.task_id,
        revision=context.revision,
        configuration=context.configuration,
        entries=tuple(entry_state(e) for e in context.entries.values()),
        next_entry=context._next_entry,
        bindings=tuple(binding_state(b) for b in context.bindings.values()),
        index=IndexState(provider=context.index_provider.name, profile=context.index_profile),
        readers=tuple(
            ReaderState.model_validate(r.export_state())
            for r in context.readers()
            if r.snapshot is not None
        ),
        packages=context.packages(),
        consumptions=context.consumptions(),
    )


def _restore_entries(context: TaskContext, parsed: ContextState) -> None:
    """Put the exported direct entries back, each checked against its digest and type."""
    for entry in parsed.entries:
        context.put(
            entry.role,
            entry_content(entry),
            entry.required,
            entry.declared_media_type,
            title=entry.title,
            entry_id=entry.entry_id,
        )
        put = context.entries[entry.entry_id]
        if put.digest != entry.digest or put.media_type != entry.media_type:
            raise RestoreError(
                f"direct entry {entry.entry_id!r} does not match its exported digest and "
                f"media type ({put.digest}, {put.media_type} != {entry.digest}, "
                f"{entry.media_type})"
            )


def restore_context(
    cls: type[TaskContext],
    state: ContextState | Mapping[str, Any] | str,
    *,
    host: PluginHost | None,
    state_dir: str | Path | None,
    configuration: RunConfiguration | None,
    consumption_log: ConsumptionLog | None,
    sources: Mapping[str, ContextSource] | None,
    index_provider: IndexProvider | None,
) -> TaskContext:
    """A context rebuilt from ``state`` (``TaskContext.restore``)."""
    from taskctx.consumption import MemoryConsumptionLog

    parsed = parse_state(state)
    given = dict(sources or {})
    unknown = sorted(set(given) - {b.binding_id for b in parsed.bindings})
    if unknown:
        raise RestoreError(f"sources= names bindings the state does not hold: {unknown}")
    context = cls(
        parsed.task_id,
        host=host,
        state_dir=state_dir,
        configuration=configuration if configuration is not None else parsed.configuration,
        consumption_log=consumption_log if consumption_log is not None else MemoryConsumptionLog(),
    )
    _restore_entries(context, parsed)
    context._next_entry = parsed.next_entry
    if index_provider is None:
        context.configure_index(
            index_provider_of(context.host, parsed.index), profile=parsed.index.profile
        )
    else:
        context.configure_index(index_provider, profile=parsed.index.profile)
    for binding in parsed.bindings:
        source = given.get(binding.binding_id)
        if source is None:
            source = rebuild_source(context.host, binding, context.configuration)
        check_rebuilt(binding, source)
        context.attach(source, binding.binding_id, role=binding.role)
    for reader_state in parsed.readers:
        context.restore_reader(reader_state)
    for package in parsed.packages:
        context._keep_package(package)
    for consumption in parsed.consumptions:
        context.consumption_log.append(consumption)
    return context
