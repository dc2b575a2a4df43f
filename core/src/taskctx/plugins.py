"""``PluginHost``: loads taskctx plugins, applies allow/block lists, keeps the registries.

- Nothing loads at import time; each host has its own pluggy manager.
- Built-ins (``taskctx.builtins``, plugin ``taskctx``) always load first, unfiltered.
- Entry points (group ``taskctx``) are filtered by PEP 503 distribution name *before*
  import; a distribution found twice on ``sys.path`` counts once (first wins); they load
  in order of normalised distribution name, then entry-point name. The pluggy plugin
  name is the entry-point name (as in pytest), so it must be unique.
- A plugin fails as a whole: an import error, a raising hookimpl, an unknown (misspelled)
  hook, an invalid registration or a name it may not have unregisters it and rolls back
  all its registrations; the others still load. A failure is a ``PluginLoadWarning`` plus
  a ``failed`` ``PluginRecord``; with ``strict=True`` it raises ``PluginLoadError``.
- Load order never decides who owns a name or a claim (``taskctx._ownership``): entry
  points are staged together, then owners are settled by origin and ``choose``.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import sys
import warnings
from collections.abc import Callable, Mapping
from types import MappingProxyType, ModuleType
from typing import Any, Literal

import attrs
import pluggy
from pydantic import Field

from taskctx import hookspecs
from taskctx._factoryoptions import prepare_options
from taskctx._hookcalls import call_register_hooks, hook_names
from taskctx._ownership import (
    CHOOSE_ENV,
    DEFAULT_LEXICAL,
    FIRST_PARTY_NAMES,
    lexical_default,
    normalize_name,
    parse_allow,
    parse_choose,
    parse_names,
    refused_names,
    singular,
    unused_claims,
)
from taskctx._registration import (
    REGISTRY_KINDS,
    Entry,
    Failure,
    Origin,
    Staged,
    Staging,
    accepts_keyword,
    describe,
)
from taskctx.clisources import CliSource
from taskctx.errors import (
    NotInstalledError,
    PluginLoadError,
    PluginLoadWarning,
    TaskCtxError,
    UnknownSourceKindError,
)
from taskctx.media import handler_for, normalize_media_type
from taskctx.model import FrozenModel
from taskctx.policy import RunConfiguration, govern
from taskctx.protocols import (
    ContextSource,
    FileIOHandler,
    IndexProvider,
    RequestFilter,
    ScopedRead,
    Selector,
)

__all__ = [
    "ALLOW_ENV",
    "BLOCK_ENV",
    "BUILTIN_MODULE",
    "CHOOSE_ENV",
    "DEFAULT_LEXICAL",
    "FIRST_PARTY_NAMES",
    "REGISTRY_KINDS",
    "PluginHost",
    "PluginRecord",
    "normalize_name",
]

ALLOW_ENV = "TASKCTX_LOAD_PLUGINS"
"""Comma list of distributions to load; set but empty loads none; unset loads all."""
BLOCK_ENV = "TASKCTX_BLOCK_PLUGINS"
"""Comma list of distributions never to load."""
BUILTIN_MODULE = "taskctx.builtins"
"""The kernel's own hookimpl module, registered as plugin ``taskctx``."""

Status = Literal["loaded", "failed", "blocked", "not_allowed"]


class PluginRecord(FrozenModel):
    """What the host knows about one plugin: origin, hooks, registrations and outcome."""

    name: str
    version: str | None = None
    module: str | None = None
    entry_point: str | None = None
    hooks: tuple[str, ...] = ()
    status: Status
    error: str | None = None
    builtin: bool = False
    registered: Mapping[str, tuple[str, ...]] = Field(default_factory=dict)
    refused: Mapping[str, tuple[str, ...]] = Field(default_factory=dict)
    """Registrations of a loaded plugin the host does not use: another plugin owns a
    claim they make (a media type, a suffix, a scope); the warning said which."""


def _stacklevel() -> int:
    """Stack level of the first frame outside this module and attrs-generated code."""
    frame = sys._getframe(1)
    level = 1
    while frame.f_back is not None and (
        frame.f_code.co_filename == __file__
        or frame.f_code.co_filename.startswith("<attrs generated")
    ):
        frame = frame.f_back
        level += 1
    return level


@attrs.define(slots=True)
class PluginHost:
    """Loads plugins (built-ins, entry points, in-process) and owns their registries.

    ``allow`` None loads every entry point; ``allow``/``block`` take names or a comma string.
    ``choose`` maps a contested name or claim (``task_workspace``, ``application/pdf``,
    ``.pdf``, ``page:application/pdf``, ``default_lexical_provider``) to the distribution
    that gets it; load order never decides (``taskctx._ownership``).
    """

    allow: frozenset[str] | None = attrs.field(default=None, converter=parse_allow)
    block: frozenset[str] = attrs.field(default=frozenset(), converter=parse_names)
    strict: bool = False
    load_entrypoints: bool = True
    choose: Mapping[str, str] = attrs.field(default=None, converter=parse_choose)
    _pm: pluggy.PluginManager = attrs.field(init=False, repr=False, eq=False)
    _records: list[PluginRecord] = attrs.field(init=False, factory=list, repr=False, eq=False)
    _record_at: dict[str, int] = attrs.field(init=False, factory=dict, repr=False, eq=False)
    _owners: dict[str, str] = attrs.field(init=False, factory=dict, repr=False, eq=False)
    _registry: dict[str, dict[str, Entry]] = attrs.field(
        init=False, factory=lambda: {k: {} for k in REGISTRY_KINDS}, repr=False, eq=False
    )
    _lexical_tie: str | None = attrs.field(init=False, default=None, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        self._pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
        self._pm.add_hookspecs(hookspecs)
        if importlib.util.find_spec(BUILTIN_MODULE) is not None:
            version = importlib.metadata.version(hookspecs.PROJECT_NAME)
            origin = Origin("taskctx", version, BUILTIN_MODULE, None, "taskctx", True)
            self._load([(origin, lambda: importlib.import_module(BUILTIN_MODULE))])
        if self.load_entrypoints:
            self._load_entry_points()

    @classmethod
    def from_environment(
        cls, strict: bool = False, environ: Mapping[str, str] | None = None
    ) -> PluginHost:
        """A host honouring ``TASKCTX_LOAD_PLUGINS``, ``TASKCTX_BLOCK_PLUGINS`` and
        ``TASKCTX_CHOOSE_PLUGINS`` (``key=distribution,...``)."""
        env = os.environ if environ is None else environ
        return cls(
            allow=env.get(ALLOW_ENV),
            block=env.get(BLOCK_ENV),
            strict=strict,
            choose=env.get(CHOOSE_ENV),
        )

    @property
    def plugin_manager(self) -> pluggy.PluginManager:
        """The underlying pluggy manager (for advanced use; prefer the registries)."""
        return self._pm

    def plugins(self) -> tuple[PluginRecord, ...]:
        """Every plugin seen, in load order, including failed, blocked and disallowed ones."""
        return tuple(self._records)

    def register(self, plugin: object, name: str | None = None) -> None:
        """Register an in-process plugin (module or object with ``@hookimpl`` methods).

        The application's own choice: it may take a first-party name that no loaded
        plugin holds; a name already registered, or chosen for another distribution
        with ``choose``, is refused.
        """
        module = plugin.__name__ if isinstance(plugin, ModuleType) else type(plugin).__module__
        if name is None:
            is_module = isinstance(plugin, ModuleType)
            name = module if is_module else f"{type(plugin).__name__}@{id(plugin):x}"
        self._load([(Origin(name, None, module, None, name, False), lambda: plugin)])

    # -- loading ---------------------------------------------------------------------

    def _load_entry_points(self) -> None:
        seen: set[str] = set()
        found: list[tuple[str, str | None, importlib.metadata.EntryPoint]] = []
        for dist in importlib.metadata.distributions():
            name = next(iter(dist.metadata.get_all("Name") or []), None)
            if not name or normalize_name(name) in seen:
                continue
            seen.add(normalize_name(name))
            if normalize_name(name) == hookspecs.PROJECT_NAME:
                continue
            for ep in dist.entry_points:
                if ep.group == hookspecs.PROJECT_NAME:
                    found.append((name, dist.version, ep))
        found.sort(key=lambda item: (normalize_name(item[0]), item[2].name))
        batch: list[PluginRecord | tuple[Origin, Callable[[], object]]] = []
        for name, version, ep in found:
            origin = Origin(name, version, ep.module, ep.name, ep.name, False)
            key = normalize_name(name)
            if key in self.block:
                batch.append(self._record(origin, "blocked"))
            elif self.allow is not None and key not in self.allow:
                batch.append(self._record(origin, "not_allowed"))
            else:
                batch.append((origin, ep.load))
        self._load(batch)

    def _record(self, origin: Origin, status: Status, **fields: Any) -> PluginRecord:
        origin_fields = attrs.asdict(origin, filter=lambda a, _: a.name != "plugin_name")
        return PluginRecord(status=status, **origin_fields, **fields)

    def _load(self, batch: list[PluginRecord | tuple[Origin, Callable[[], object]]]) -> None:
        """Stage every plugin of ``batch``, settle who owns each name, then register.

        All of a batch is staged before any of it is registered, so which plugin gets a
        contested name depends on who they are, never on which loaded first.
        """
        slots: list[PluginRecord | Staged] = [
            item if isinstance(item, PluginRecord) else self._stage(*item) for item in batch
        ]
        staged = [slot for slot in slots if isinstance(slot, Staged)]
        refused = refused_names(staged, self.choose)
        for slot in slots:
            if isinstance(slot, PluginRecord):
                self._records.append(slot)
            elif reasons := refused.get(slot.origin.plugin_name):
                self._records.append(self._refuse(slot, reasons))
            else:  # a loaded plugin's pluggy name is unique: it keys its record
                self._record_at[slot.origin.plugin_name] = len(self._records)
                self._records.append(self._admit(slot))
        self._settle_claims()

    def _stage(self, origin: Origin, load: Callable[[], object]) -> PluginRecord | Staged:
        hooks: tuple[str, ...] = ()
        plugin: object = None
        try:
            try:
                plugin = load()
            except Exception as exc:
                raise Failure(f"import failed: {describe(exc)}") from exc
            hooks = hook_names(self._pm, plugin)
            staged = self._register(origin, plugin, hooks)
        except Exception as exc:
            failure = exc if isinstance(exc, Failure) else Failure(f"error: {describe(exc)}")
            if failure is not exc:
                failure.__cause__ = exc
            if plugin is not None and self._pm.get_plugin(origin.plugin_name) is plugin:
                self._pm.unregister(plugin, name=origin.plugin_name)
            return self._fail(origin, hooks, failure)
        for staging in staged.values():
            staging.open = False
        entries = {kind: dict(staging.entries) for kind, staging in staged.items()}
        return Staged(origin, plugin, hooks, entries)

    def _admit(self, item: Staged) -> PluginRecord:
        for kind, entries in item.entries.items():
            for entry_name, value in entries.items():
                self._registry[kind][entry_name] = Entry(value, item.origin)
        registered = {k: tuple(e) for k, e in item.entries.items() if e}
        return self._record(item.origin, "loaded", hooks=item.hooks, registered=registered)

    def _refuse(self, item: Staged, reasons: list[str]) -> PluginRecord:
        self._pm.unregister(item.plugin, name=item.origin.plugin_name)
        self._owners.pop(item.origin.plugin_name, None)
        return self._fail(item.origin, item.hooks, Failure("; ".join(reasons)))

    def _settle_claims(self) -> None:
        """Drop every registration that makes a claim another plugin owns (``_ownership``).

        After this no two registered handlers share a media type or suffix and no two
        scoped readers a scope and media type, so no lookup depends on load order.
        """
        dropped = unused_claims(self._registry, self.choose)
        for (kind, name), (entry, reason) in dropped.items():
            del self._registry[kind][name]
            self._unuse(entry.origin, kind, name, reason)
        tie = lexical_default(self._registry["index_providers"], self.choose)[1]
        if tie is not None and tie != self._lexical_tie:
            self._warn(f"taskctx plugins: no default lexical provider: {tie}")
        self._lexical_tie = tie

    def _unuse(self, origin: Origin, kind: str, name: str, reason: str) -> None:
        """Record and report that ``origin``'s registration ``kind``/``name`` is not used."""
        at = self._record_at[origin.plugin_name]
        record = self._records[at]
        registered = {k: tuple(n for n in v if n != name) for k, v in record.registered.items()}
        refused = {**record.refused, kind: (*record.refused.get(kind, ()), name)}
        self._records[at] = record.model_copy(
            update={"registered": {k: v for k, v in registered.items() if v}, "refused": refused}
        )
        self._warn(f"taskctx plugin {origin.label}: {reason}")

    def _warn(self, message: str) -> None:
        if self.strict:
            raise PluginLoadError(message)
        warnings.warn(message, PluginLoadWarning, stacklevel=_stacklevel())

    def _register(
        self, origin: Origin, plugin: object, hooks: tuple[str, ...]
    ) -> dict[str, Staging]:
        """Register ``plugin`` with pluggy and call its hooks; raise Failure on any error."""
        if (other := self._pm.get_plugin(origin.plugin_name)) is not None:
            owner = self._owners.get(origin.plugin_name, repr(other))
            raise Failure(f"plugin name {origin.plugin_name!r} is already used by {owner}")
        if self._pm.is_registered(plugin):
            raise Failure(f"already registered as {self._pm.get_name(plugin)!r}")
        try:
            self._pm.register(plugin, name=origin.plugin_name)
        except pluggy.PluginValidationError as exc:
            raise Failure(f"invalid hookimpl: {exc}") from exc
        self._owners[origin.plugin_name] = origin.label
        return call_register_hooks(self._pm, plugin, hooks, self._registry)

    def _fail(self, origin: Origin, hooks: tuple[str, ...], failure: Failure) -> PluginRecord:
        error = str(failure)
        message = f"taskctx plugin {origin.label} failed: {error}"
        if origin.entry_point:
            message += f" (entry point {origin.entry_point!r} -> {origin.module})"
        if self.strict:
            raise PluginLoadError(message) from failure.__cause__
        warnings.warn(message, PluginLoadWarning, stacklevel=_stacklevel())
        return self._record(origin, "failed", hooks=hooks, error=error)

    # -- registries ------------------------------------------------------------------

    def _values(self, kind: str) -> tuple[Any, ...]:
        return tuple(e.value for e in self._registry[kind].values())

    def _mapping(self, kind: str) -> Mapping[str, Any]:
        return MappingProxyType({n: e.value for n, e in self._registry[kind].items()})

    def _get(self, kind: str, name: str) -> Any:
        entry = self._registry[kind].get(name)
        if entry is None:
            installed = ", ".join(self._registry[kind]) or "none"
            raise NotInstalledError(f"no {singular(kind)} named {name!r} (installed: {installed})")
        return entry.value

    def source_kinds(self) -> Mapping[str, Callable[..., ContextSource]]:
        """Source kind -> factory, in load order."""
        return self._mapping("source_kinds")

    def source(
        self, kind: str, /, *, configuration: RunConfiguration | None = None, **options: Any
    ) -> ContextSource:
        """A new ContextSource of ``kind`` made by its factory from ``options``.

        A factory that accepts a ``host`` keyword gets this host unless the caller passed
        one, so the source sees the same plugins (file IO handlers, say) as its caller.
        With ``configuration`` (a RunConfiguration), a factory with an explicit
        ``configuration`` parameter receives it, and the source made is put under it
        (``taskctx.policy.govern``), PolicyError if it cannot be.
        """
        entry = self._registry["source_kinds"].get(kind)
        if entry is None:
            raise UnknownSourceKindError(self.not_installed_message("source_kinds", kind))
        if configuration is not None:
            if not isinstance(configuration, RunConfiguration):
                raise TypeError(
                    "the configuration of host.source must be a RunConfiguration, "
                    f"not {type(configuration).__name__}"
                )
            if accepts_keyword(entry.value, "configuration"):
                options["configuration"] = configuration
        if "host" not in options and accepts_keyword(entry.value, "host"):
            options["host"] = self
        source = entry.value(**prepare_options(kind, entry.owner, entry.value, options))
        if not isinstance(source, ContextSource):
            raise TypeError(f"factory of source kind {kind!r} ({entry.owner}) returned {source!r}")
        if source.kind != kind:
            raise TaskCtxError(
                f"factory of source kind {kind!r} ({entry.owner}) returned a source of kind "
                f"{source.kind!r}; a factory must return sources of the kind it registered"
            )
        if configuration is not None:
            source = govern(source, configuration, f"source kind {kind!r} ({entry.owner})")
        return source

    def not_installed_message(self, registry: str, name: str) -> str:
        """Why no loaded plugin registers ``name`` in ``registry`` and, for a first-party
        name (``FIRST_PARTY_NAMES``), which distribution to install, allow or fix."""
        installed = ", ".join(sorted(self._registry[registry])) or "none"
        what = "command-line source" if registry == "cli_sources" else singular(registry)
        message = f"no installed plugin registers {what} {name!r} (installed: {installed})"
        dist = FIRST_PARTY_NAMES.get(registry, {}).get(name)
        if dist is None:
            return message
        if registry != "source_kinds":
            kinds = [k for k, d in FIRST_PARTY_NAMES["source_kinds"].items() if d == dist]
            dist_label = f"{dist!r} (source kind {', '.join(map(repr, kinds))})"
        else:
            dist_label = repr(dist)
        status = next((r.status for r in self._records if normalize_name(r.name) == dist), None)
        if status == "blocked":
            return f"{message}; {dist_label} is installed but blocked ({BLOCK_ENV})"
        if status == "not_allowed":
            return f"{message}; {dist_label} is installed but not allowed ({ALLOW_ENV})"
        if status == "failed":
            return f"{message}; {dist_label} failed to load (see `taskctx plugins`)"
        return f"{message}; install the distribution {dist_label}"

    def scoped_readers(self) -> tuple[ScopedRead, ...]:
        """Registered scoped readers, in load order."""
        return self._values("scoped_readers")

    def scoped_reader_for(self, scope_kind: str, media_type: str | None) -> ScopedRead | None:
        """The reader serving ``scope_kind`` for ``media_type``; explicit types win.

        A reader with no media types serves text (``text/*``) and unknown (None) types.
        """
        readers = [r for r in self.scoped_readers() if scope_kind in r.scope_kinds]
        wanted = normalize_media_type(media_type) if media_type else None
        for reader in readers:
            if wanted and wanted in {normalize_media_type(m) for m in reader.media_types}:
                return reader
        if wanted is None or wanted.startswith("text/"):
            return next((r for r in readers if not r.media_types), None)
        return None

    def file_io_handlers(self) -> tuple[FileIOHandler, ...]:
        """Registered file IO handlers, in load order."""
        return self._values("file_io_handlers")

    def file_io_handler_for(
        self, path: str | None = None, media_type: str | None = None
    ) -> FileIOHandler | None:
        """The handler for ``media_type`` if one claims it (aliases resolved), else the
        longest suffix match of ``path`` (``taskctx.media.handler_for``)."""
        return handler_for(self.file_io_handlers(), path, media_type)

    def index_providers(self) -> Mapping[str, IndexProvider]:
        """Index provider name -> provider, in load order."""
        return self._mapping("index_providers")

    def index_provider(self, name: str) -> IndexProvider:
        """The provider called ``name``; ``NotInstalledError`` if none is installed."""
        provider: IndexProvider = self._get("index_providers", name)
        return provider

    def default_lexical_provider(self) -> IndexProvider | None:
        """The lexical provider a new TaskContext ranks with, or None.

        A plugin's before a built-in's; among plugins, the one ``choose`` names under
        ``default_lexical_provider``, else the only one of the best origin (in-process,
        first-party, third-party). A plugin with several offers its first. Two plugins
        tying leave no default (a warning said so at load).
        """
        provider: IndexProvider | None = lexical_default(
            self._registry["index_providers"], self.choose
        )[0]
        return provider

    def selectors(self) -> Mapping[str, Selector]:
        """Selector name -> selector, in load order."""
        return self._mapping("selectors")

    def selector(self, name: str) -> Selector:
        """The selector called ``name``; ``NotInstalledError`` if none is installed."""
        selector: Selector = self._get("selectors", name)
        return selector

    def request_filters(self) -> Mapping[str, RequestFilter]:
        """Request filter name -> filter, in load order."""
        return self._mapping("request_filters")

    def cli_sources(self) -> Mapping[str, CliSource]:
        """Flag (or ``PATH``) -> how ``taskctx read``/``index`` attach it, in load order."""
        return self._mapping("cli_sources")

    def commands(self) -> Mapping[str, Any]:
        """CLI command name -> click command, in load order (``taskctx <name>``)."""
        return self._mapping("commands")
