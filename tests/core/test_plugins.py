"""PluginHost: entry points from real throwaway distributions, allow/block lists, failures."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Sequence
from typing import Any

import pytest

from taskctx.errors import (
    NotInstalledError,
    PluginLoadError,
    PluginLoadWarning,
    UnknownSourceKindError,
)
from taskctx.hookspecs import hookimpl
from taskctx.plugins import ALLOW_ENV, BLOCK_ENV, PluginHost, PluginRecord
from taskctx.protocols import ContextSource
from tests.core.sites import SOURCE_PLUGIN, Site, record

HAS_BUILTINS = importlib.util.find_spec("taskctx.builtins") is not None


def test_entry_point_plugin_registers_source_kind(site: Site) -> None:
    """An allowed entry-point plugin loads, is recorded, and host.source builds its kind."""
    site.source_plugin("tcx-demo", "tcx_demo_mod", "demo", version="1.2")
    host = PluginHost(allow=["tcx-demo"])
    rec = record(host, "tcx-demo")
    assert rec.status == "loaded"
    assert (rec.version, rec.module, rec.entry_point) == ("1.2", "tcx_demo_mod", "tcx_demo_mod")
    assert rec.hooks == ("register_source_kinds",)
    assert rec.registered == {"source_kinds": ("demo",)}
    assert not rec.builtin
    source = host.source("demo", root="./project")
    assert isinstance(source, ContextSource)
    assert source.options == {"root": "./project"}  # type: ignore[attr-defined]
    assert "demo" in host.source_kinds()


def test_disallowed_plugin_is_never_imported(site: Site) -> None:
    """A distribution not named in TASKCTX_LOAD_PLUGINS is recorded but never imported."""
    site.source_plugin("tcx-allowed", "tcx_allowed_mod", "allowed")
    site.source_plugin("tcx-other", "tcx_other_mod", "other")
    host = PluginHost.from_environment(environ={ALLOW_ENV: "tcx-allowed"})
    assert record(host, "tcx-allowed").status == "loaded"
    assert record(host, "tcx-other").status == "not_allowed"
    assert "tcx_other_mod" not in sys.modules
    assert "other" not in host.source_kinds()


def test_empty_allow_list_loads_no_entry_points(site: Site) -> None:
    """A set-but-empty TASKCTX_LOAD_PLUGINS loads no entry-point plugin, only built-ins."""
    site.source_plugin("tcx-demo", "tcx_demo_mod", "demo")
    host = PluginHost.from_environment(environ={ALLOW_ENV: ""})
    assert record(host, "tcx-demo").status == "not_allowed"
    assert "tcx_demo_mod" not in sys.modules
    loaded = [r for r in host.plugins() if r.status == "loaded"]
    assert all(r.builtin for r in loaded)
    assert [r.name for r in loaded] == (["taskctx"] if HAS_BUILTINS else [])


def test_unset_allow_list_loads_everything(site: Site) -> None:
    """Without TASKCTX_LOAD_PLUGINS every installed entry-point plugin loads."""
    site.source_plugin("tcx-demo", "tcx_demo_mod", "demo")
    host = PluginHost.from_environment(environ={})
    assert record(host, "tcx-demo").status == "loaded"


@pytest.mark.parametrize("allowed", ["my-plugin", "MY.PLUGIN", " my__plugin ,x"])
def test_allow_list_names_are_pep503_normalised(site: Site, allowed: str) -> None:
    """Distribution ``My_Plugin`` is allowed by any PEP 503 spelling of its name."""
    site.source_plugin("My_Plugin", "tcx_my_plugin_mod", "mine")
    host = PluginHost.from_environment(environ={ALLOW_ENV: allowed})
    assert record(host, "my-plugin").status == "loaded"
    assert record(host, "my-plugin").name == "My_Plugin"


def test_blocklist_wins_and_never_imports(site: Site) -> None:
    """TASKCTX_BLOCK_PLUGINS blocks a distribution even when it is also allowed."""
    site.source_plugin("My_Plugin", "tcx_my_plugin_mod", "mine")
    environ = {ALLOW_ENV: "my-plugin", BLOCK_ENV: "my.plugin"}
    host = PluginHost.from_environment(environ=environ)
    assert record(host, "my-plugin").status == "blocked"
    assert "tcx_my_plugin_mod" not in sys.modules
    assert "mine" not in host.source_kinds()


def test_import_failure_is_reported_and_others_load(site: Site) -> None:
    """A plugin raising at import warns (at the caller), records the error; others load."""
    site.add("tcx-broken", "0.3", "tcx_broken_mod", "raise RuntimeError('boom at import')\n")
    site.source_plugin("tcx-good", "tcx_good_mod", "good")
    with pytest.warns(PluginLoadWarning, match=r"'tcx-broken' 0\.3.*boom at import") as caught:
        host = PluginHost(allow=["tcx-broken", "tcx-good"])
    assert caught[0].filename == __file__
    rec = record(host, "tcx-broken")
    assert rec.status == "failed"
    assert rec.error is not None
    assert "RuntimeError: boom at import" in rec.error
    assert record(host, "tcx-good").status == "loaded"
    assert "good" in host.source_kinds()


def test_strict_mode_raises_plugin_load_error(site: Site) -> None:
    """With strict=True a failing plugin raises PluginLoadError naming dist and version."""
    site.add("tcx-broken", "0.3", "tcx_broken_mod", "raise RuntimeError('boom at import')\n")
    with pytest.raises(PluginLoadError, match=r"'tcx-broken' 0\.3.*RuntimeError: boom"):
        PluginHost(allow=["tcx-broken"], strict=True)
    with pytest.raises(PluginLoadError, match="tcx-broken"):
        PluginHost.from_environment(strict=True, environ={ALLOW_ENV: "tcx-broken"})


def test_duplicate_name_fails_both_plugins_and_rolls_back(site: Site) -> None:
    """Two plugins registering one kind both fail (naming both dists and versions), and
    every other registration of theirs is rolled back."""
    site.source_plugin("tcx-aaa", "tcx_aaa_mod", "shared", version="1.0")
    extra = 'register("extra_kind", DemoSource)'
    site.add("tcx-bbb", "2.5", "tcx_bbb_mod", SOURCE_PLUGIN.format(kind="shared", extra=extra))
    with pytest.warns(PluginLoadWarning, match=r"'tcx-aaa' 1\.0 and 'tcx-bbb' 2\.5") as caught:
        host = PluginHost(allow=["tcx-aaa", "tcx-bbb"])
    assert len(caught) == 2
    for name in ("tcx-aaa", "tcx-bbb"):
        rec = record(host, name)
        assert rec.status == "failed"
        assert rec.error is not None
        assert "source kind 'shared' is registered by both" in rec.error
        assert rec.registered == {}
    assert "shared" not in host.source_kinds()
    assert "extra_kind" not in host.source_kinds()
    assert host.plugin_manager.get_plugin("tcx_aaa_mod") is None
    assert host.plugin_manager.get_plugin("tcx_bbb_mod") is None


def test_misspelled_hookimpl_is_caught(site: Site) -> None:
    """A hookimpl for an unknown hook (``register_source_kind``) fails that plugin only."""
    source = """
        from taskctx.hookspecs import hookimpl

        @hookimpl
        def register_source_kind(register):
            register("never", object)
    """
    site.add("tcx-typo", "0.1", "tcx_typo_mod", source)
    site.source_plugin("tcx-good", "tcx_good_mod", "good")
    with pytest.warns(PluginLoadWarning, match="did you mean 'register_source_kinds'"):
        host = PluginHost(allow=["tcx-typo", "tcx-good"])
    rec = record(host, "tcx-typo")
    assert (rec.status, rec.hooks) == ("failed", ("register_source_kind",))
    assert record(host, "tcx-good").status == "loaded"
    host.plugin_manager.check_pending()


def test_hookimpl_with_wrong_arguments_is_caught(site: Site) -> None:
    """A hookimpl asking for an argument the hookspec lacks is a failure of that plugin."""
    source = """
        from taskctx.hookspecs import hookimpl

        @hookimpl
        def register_selectors(register, config):
            pass
    """
    site.add("tcx-args", "0.1", "tcx_args_mod", source)
    with pytest.warns(PluginLoadWarning, match="invalid hookimpl"):
        host = PluginHost(allow=["tcx-args"])
    assert record(host, "tcx-args").status == "failed"


def test_hookimpl_raising_while_registering_is_reported(site: Site) -> None:
    """An exception inside a register hook fails that plugin and names the hook."""
    source = """
        from taskctx.hookspecs import hookimpl

        @hookimpl
        def register_index_providers(register):
            raise ValueError("no config")
    """
    site.add("tcx-raises", "0.1", "tcx_raises_mod", source)
    with pytest.warns(PluginLoadWarning, match="register_index_providers raised ValueError"):
        host = PluginHost(allow=["tcx-raises"])
    assert record(host, "tcx-raises").status == "failed"


def test_distribution_found_twice_counts_once(site_factory: Any) -> None:
    """The same distribution on two sys.path entries loads once, from the first entry."""
    later: Site = site_factory("later")
    later.source_plugin("tcx-twice", "tcx_twice_later", "twice", version="1.0")
    first: Site = site_factory("first")  # prepended, so searched first
    first.source_plugin("tcx-twice", "tcx_twice_first", "twice", version="2.0")
    host = PluginHost(allow=["tcx-twice"])
    rec = record(host, "tcx-twice")
    assert (rec.status, rec.version, rec.module) == ("loaded", "2.0", "tcx_twice_first")
    assert "tcx_twice_later" not in sys.modules


def _first_party_kind_not_installed() -> tuple[str, str] | None:
    """A first-party source kind whose distribution this environment lacks, if any."""
    import importlib.metadata

    from taskctx.plugins import FIRST_PARTY_NAMES

    for kind, dist in sorted(FIRST_PARTY_NAMES["source_kinds"].items()):
        try:
            importlib.metadata.distribution(dist)
        except importlib.metadata.PackageNotFoundError:
            return kind, dist
    return None


def test_unknown_kind_lists_installed_kinds_and_hints(site: Site) -> None:
    """An unknown kind names itself and the installed kinds; first-party kinds hint a dist."""
    site.source_plugin("tcx-demo", "tcx_demo_mod", "demo")
    site.source_plugin("taskctx-workspace", "tcx_fake_workspace", "task_workspace")
    host = PluginHost(allow=["tcx-demo"])
    with pytest.raises(UnknownSourceKindError, match=r"'nope'.*installed: .*\bdemo\b"):
        host.source("nope")
    with pytest.raises(UnknownSourceKindError, match="'taskctx-workspace' is installed but not"):
        host.source("task_workspace", root=".")
    absent = _first_party_kind_not_installed()
    if absent is not None:
        kind, dist = absent
        with pytest.raises(UnknownSourceKindError, match=f"install the distribution '{dist}'"):
            host.source(kind)
    with pytest.raises(UnknownSourceKindError, match="'taskctx-records' is installed but not"):
        host.source("record_store")
    with pytest.raises(NotInstalledError, match="no index provider named 'fts'"):
        host.index_provider("fts")
    with pytest.raises(NotInstalledError, match="no selector named 'llm'"):
        host.selector("llm")


class Reader:
    """A scoped reader test double."""

    def __init__(self, name: str, scope_kinds: Sequence[str], media_types: Sequence[str]) -> None:
        self.name = name
        self.scope_kinds = tuple(scope_kinds)
        self.media_types = tuple(media_types)

    async def async_read_scoped(self, source: Any, ref: Any, limit: int | None) -> Any:
        """Never called here."""
        raise NotImplementedError


class Handler:
    """A file IO handler test double."""

    def __init__(self, name: str, suffixes: Sequence[str], media_types: Sequence[str]) -> None:
        self.name = name
        self.suffixes = tuple(suffixes)
        self.media_types = tuple(media_types)

    def parse(self, data: bytes, path: str) -> Any:
        """Never called here."""
        raise NotImplementedError


class Provider:
    """An index provider test double."""

    needs_text = True

    def __init__(self, name: str, kind: str) -> None:
        self.name = name
        self.kind = kind

    def open_partition(self, key: Any, directory: Any) -> Any:
        """Never called here."""
        raise NotImplementedError


class Chooser:
    """A selector test double."""

    name = "t-first"

    async def async_select(self, request: Any) -> Sequence[str]:
        """Never called here."""
        return ()


class InProcess:
    """An in-process plugin registering one of everything."""

    @hookimpl
    def register_scoped_readers(self, register: Any) -> None:
        """Lines for any text, sections for markdown only."""
        register(Reader("t-lines", ["tlines"], []))
        register(Reader("t-md", ["tsection", "tlines"], ["text/markdown"]))

    @hookimpl
    def register_file_io_handlers(self, register: Any) -> None:
        """A document handler and two compressed-suffix handlers."""
        register(Handler("t-doc", [".TDOC"], ["application/x-tdoc"]))
        register(Handler("t-gz", [".gzt"], []))
        register(Handler("t-targz", ["tar.gzt"], []))

    @hookimpl
    def register_index_providers(self, register: Any) -> None:
        """A structural and two lexical providers."""
        register(Provider("t-tree", "structural"))
        register(Provider("t-fts", "lexical"))
        register(Provider("t-bm25", "lexical"))

    @hookimpl
    def register_selectors(self, register: Any) -> None:
        """One selector."""
        register(Chooser())


def test_in_process_plugin_fills_every_registry() -> None:
    """host.register adds an in-process plugin and every lookup finds its registrations."""
    host = PluginHost(load_entrypoints=False)
    host.register(InProcess(), name="app")
    rec = record(host, "app")
    assert (rec.status, rec.version, rec.entry_point, rec.builtin) == ("loaded", None, None, False)
    assert rec.registered["index_providers"] == ("t-tree", "t-fts", "t-bm25")
    reader_for, handler_for = host.scoped_reader_for, host.file_io_handler_for
    assert getattr(reader_for("tlines", "text/markdown"), "name", None) == "t-md"
    assert getattr(reader_for("tlines", "text/plain; charset=utf-8"), "name", None) == "t-lines"
    assert getattr(reader_for("tlines", None), "name", None) == "t-lines"
    assert reader_for("tlines", "application/pdf") is None
    assert reader_for("tpage", "text/plain") is None
    assert getattr(handler_for("docs/Report.tdoc"), "name", None) == "t-doc"
    assert getattr(handler_for(media_type="application/x-tdoc"), "name", None) == "t-doc"
    assert getattr(handler_for("a/b.TAR.GZT"), "name", None) == "t-targz"
    assert getattr(handler_for("a/b.gzt"), "name", None) == "t-gz"
    assert handler_for("notes.txt") is None
    assert host.index_provider("t-fts").kind == "lexical"
    assert host.default_lexical_provider() is host.index_providers()["t-fts"]
    assert host.selector("t-first") is host.selectors()["t-first"]
    assert [r.name for r in host.scoped_readers()][-2:] == ["t-lines", "t-md"]


def test_in_process_duplicates_and_bad_registrations_fail() -> None:
    """In-process plugins obey the same duplicate and validation policy as entry points."""
    host = PluginHost(load_entrypoints=False)
    host.register(InProcess(), name="app")

    class Clash:
        @hookimpl
        def register_selectors(self, register: Any) -> None:
            register(Chooser())

    class Bad:
        @hookimpl
        def register_scoped_readers(self, register: Any) -> None:
            register(object())

    with pytest.warns(PluginLoadWarning, match=r"'clash' \(in-process\).*already registered"):
        host.register(Clash(), name="clash")
    with pytest.warns(PluginLoadWarning, match="invalid scoped reader registration"):
        host.register(Bad(), name="bad")
    with pytest.warns(PluginLoadWarning, match="plugin name 'app' is already used"):
        host.register(Clash(), name="app")
    statuses = [r.status for r in host.plugins() if not r.builtin]
    assert statuses == ["loaded", "failed", "failed", "failed"]
    with pytest.raises(PluginLoadError, match="'bad2' \\(in-process\\)"):
        PluginHost(load_entrypoints=False, strict=True).register(Bad(), name="bad2")


def test_hosts_are_independent_and_records_serialise() -> None:
    """Two hosts share no state, and a PluginRecord round-trips through JSON."""
    first = PluginHost(load_entrypoints=False)
    first.register(InProcess(), name="app")
    second = PluginHost(load_entrypoints=False)
    assert "t-fts" in first.index_providers()
    assert "t-fts" not in second.index_providers()
    rec = record(first, "app")
    assert PluginRecord.model_validate_json(rec.model_dump_json()) == rec


def test_factory_must_return_its_own_kind() -> None:
    """A factory registered as one kind that returns another kind is refused."""
    from collections.abc import Callable

    from taskctx import TaskCtxError, hookimpl
    from taskctx.testing import MemorySource

    class Mislabelled:
        @hookimpl
        def register_source_kinds(self, register: Callable[[str, Any], None]) -> None:
            register("notes", MemorySource)

    host = PluginHost(allow=[])
    host.register(Mislabelled(), name="mislabelled")
    with pytest.raises(TaskCtxError, match="returned a source of kind 'memory'"):
        host.source("notes")


def test_factory_taking_host_gets_the_calling_host() -> None:
    """A source factory with a `host` parameter is handed the host that makes it."""
    from collections.abc import Callable

    from taskctx import hookimpl
    from taskctx.testing import MemorySource

    seen: list[PluginHost] = []

    def factory(host: PluginHost) -> MemorySource:
        seen.append(host)
        return MemorySource()

    class HostAware:
        @hookimpl
        def register_source_kinds(self, register: Callable[[str, Any], None]) -> None:
            register("memory", factory)

    host = PluginHost(allow=[])
    host.register(HostAware(), name="host-aware")
    host.source("memory")
    other = PluginHost(allow=[])
    host.source("memory", host=other)
    assert seen == [host, other]


def test_options_a_factory_cannot_take_are_refused_by_name() -> None:
    """A missing or unknown option names the kind, the problem and the options it takes,
    before the factory runs; a TypeError raised inside the factory is not masked."""
    from collections.abc import Callable

    from taskctx import TaskCtxError, hookimpl
    from taskctx.testing import MemorySource

    calls: list[str] = []

    def factory(root: str, session_id: str, include_global: bool = True) -> MemorySource:
        calls.append(root)
        if root == "boom":
            raise TypeError("inside the factory")
        return MemorySource()

    class Strict:
        @hookimpl
        def register_source_kinds(self, register: Callable[[str, Any], None]) -> None:
            register("memory", factory)

    host = PluginHost(allow=[])
    host.register(Strict(), name="strict")
    with pytest.raises(
        TaskCtxError,
        match=r"'memory' .*missing a required argument: "
        r"'session_id' \(it takes: root, session_id, include_global\)",
    ):
        host.source("memory", root="x")
    with pytest.raises(TaskCtxError, match="unexpected keyword argument 'colour'"):
        host.source("memory", root="x", session_id="s", colour="red")
    assert calls == []
    with pytest.raises(TypeError, match="inside the factory"):
        host.source("memory", root="boom", session_id="s")
    assert calls == ["boom"]
