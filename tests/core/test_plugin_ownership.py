"""Who owns a registered name or claim: origin and explicit choice decide, load order never.

Every test installs real throwaway distributions on sys.path (dist-info with an
``entry_points.txt``) and loads them, alongside the real first-party plugins where it
matters, with the competitor's name sorting both before (``aaa-``) and after (``zzz-``)
the other: entry points load in name order, so each outcome is checked in both orders.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from taskctx import PluginHost, UnknownSourceKindError, hookimpl
from taskctx.errors import PluginLoadError, PluginLoadWarning
from taskctx.plugins import CHOOSE_ENV, FIRST_PARTY_NAMES, PluginRecord
from tests.core.sites import Site, record

PLUGIN = """
import click
from taskctx.hookspecs import hookimpl

KINDS = {kinds!r}
HANDLERS = {handlers!r}
READERS = {readers!r}
PROVIDERS = {providers!r}
COMMANDS = {commands!r}
CLI_SOURCES = {cli_sources!r}
FILTERS = {filters!r}


def make_source(kind):
    class Source:
        def __init__(self, **options):
            self.options = options

        async def async_revision(self):
            return "r1"

        async def async_enumerate_descriptors(self, request):
            raise NotImplementedError

        async def async_read_exact(self, ref, limit=None):
            raise NotImplementedError

    Source.kind = kind
    return Source


class Handler:
    def __init__(self, name, suffixes, media_types):
        self.name, self.suffixes, self.media_types = name, tuple(suffixes), tuple(media_types)

    def parse(self, data, path):
        raise NotImplementedError


class Reader:
    def __init__(self, name, scope_kinds, media_types):
        self.name = name
        self.scope_kinds, self.media_types = tuple(scope_kinds), tuple(media_types)

    async def async_read_scoped(self, source, ref, limit):
        raise NotImplementedError


class Provider:
    needs_text = True

    def __init__(self, name, kind):
        self.name, self.kind = name, kind

    def open_partition(self, key, directory):
        raise NotImplementedError


@hookimpl
def register_source_kinds(register):
    for kind in KINDS:
        register(kind, make_source(kind))


@hookimpl
def register_file_io_handlers(register):
    for spec in HANDLERS:
        register(Handler(*spec))


@hookimpl
def register_scoped_readers(register):
    for spec in READERS:
        register(Reader(*spec))


@hookimpl
def register_index_providers(register):
    for spec in PROVIDERS:
        register(Provider(*spec))


class Filter:
    order = 1
    automatic = True

    def __init__(self, name):
        self.name = name

    async def async_apply(self, request, context):
        return request


@hookimpl
def register_request_filters(register):
    for name in FILTERS:
        register(Filter(name))


@hookimpl
def register_commands(register):
    for name in COMMANDS:
        register(click.command(name)(lambda: None))


@hookimpl
def register_cli_sources(register):
    from taskctx import CliSource

    for name in CLI_SOURCES:
        flag = None if name == "PATH" else name
        register(
            CliSource(
                kind="squatter_own",
                value_option="root",
                flag=flag,
                binding_id="squat",
                help="Squats.",
                multiple=True,
            )
        )
"""

Registrations = Sequence[Any]


def install(
    site: Site,
    dist: str,
    *,
    kinds: Registrations = (),
    handlers: Registrations = (),
    readers: Registrations = (),
    providers: Registrations = (),
    commands: Registrations = (),
    cli_sources: Registrations = (),
    filters: Registrations = (),
) -> str:
    """Install ``dist`` (version 1.0) registering what it is given; return its module name."""
    module = dist.replace("-", "_") + "_mod"
    source = PLUGIN.format(
        kinds=list(kinds),
        handlers=list(handlers),
        readers=list(readers),
        providers=list(providers),
        commands=list(commands),
        cli_sources=list(cli_sources),
        filters=list(filters),
    )
    site.add(dist, "1.0", module, source)
    return module


def quiet_host(**options: Any) -> tuple[PluginHost, list[str]]:
    """A PluginHost built with its load warnings captured (returned as messages)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        host = PluginHost(**options)
    messages = [str(w.message) for w in caught if issubclass(w.category, PluginLoadWarning)]
    return host, messages


def module_of(registry: str, value: Any) -> str:
    """The module a registered value comes from (a command's callback's)."""
    if registry == "commands":
        return str(value.callback.__module__)
    if registry == "cli_sources":  # a CliSource names the kind it attaches, not its module
        return FIRST_PARTY_NAMES["source_kinds"].get(value.kind, "").replace("-", "_")
    return str(getattr(value, "__module__", type(value).__module__))


def registered(host: PluginHost, registry: str, name: str) -> Any:
    """The value registered under ``name`` in ``registry``, or None."""
    if registry == "source_kinds":
        return host.source_kinds().get(name)
    if registry == "file_io_handlers":
        return next((h for h in host.file_io_handlers() if h.name == name), None)
    if registry == "index_providers":
        return host.index_providers().get(name)
    if registry == "cli_sources":
        return host.cli_sources().get(name)
    if registry == "request_filters":
        return host.request_filters().get(name)
    return host.commands().get(name)


def squat_kwargs(registry: str, name: str) -> dict[str, Any]:
    """install() arguments registering ``name`` in ``registry`` (and a kind of its own)."""
    spec: dict[str, Any] = {"kinds": ["squatter_own"]}
    if registry == "source_kinds":
        spec["kinds"] = [name, "squatter_own"]
    elif registry == "file_io_handlers":
        spec["handlers"] = [(name, ["squat"], ["application/x-squat"])]
    elif registry == "index_providers":
        spec["providers"] = [(name, "lexical")]
    elif registry == "cli_sources":
        spec["cli_sources"] = [name]
    elif registry == "request_filters":
        spec["filters"] = [name]
    else:
        spec["commands"] = [name]
    return spec


FIRST_PARTY = [
    (registry, name, owner)
    for registry, names in FIRST_PARTY_NAMES.items()
    for name, owner in names.items()
]


@pytest.mark.parametrize("squatter", ["aaa-squat", "zzz-squat"])
@pytest.mark.parametrize(("registry", "name", "owner"), FIRST_PARTY)
def test_first_party_name_stays_with_its_distribution_in_either_order(
    site: Site, squatter: str, registry: str, name: str, owner: str
) -> None:
    """A third-party plugin registering a first-party name fails, naming the owner, and
    the rightful distribution loads and is what the lookup returns, whoever loads first."""
    install(site, squatter, **squat_kwargs(registry, name))
    host, messages = quiet_host(allow=[owner, squatter])
    squat = record(host, squatter)
    assert squat.status == "failed"
    assert squat.error is not None
    assert f"{name!r} belongs to {owner!r} (a first-party name)" in squat.error
    assert any(squatter in m and owner in m for m in messages)
    assert record(host, owner).status == "loaded"
    value = registered(host, registry, name)
    assert value is not None
    assert module_of(registry, value).startswith(owner.replace("-", "_"))
    assert "squatter_own" not in host.source_kinds()  # the squatter is rolled back whole


def test_workspace_kind_builds_the_real_workspace_source(site: Site, tmp_path: Path) -> None:
    """host.source("task_workspace") calls taskctx-workspace's factory, not a squatter's."""
    for squatter in ("aaa-squat", "zzz-squat"):
        install(site, squatter, kinds=["task_workspace"])
    host, _ = quiet_host(allow=["aaa-squat", "taskctx-workspace", "zzz-squat"])
    (tmp_path / "project").mkdir()  # a read-only source reads a folder that exists
    source = host.source("task_workspace", root=str(tmp_path / "project"))
    assert type(source).__module__.startswith("taskctx_workspace")


@pytest.mark.parametrize("squatter", ["aaa-squat", "zzz-squat"])
def test_first_party_name_is_refused_even_when_its_owner_is_absent(
    site: Site, squatter: str
) -> None:
    """With taskctx-workspace not loaded, a squatter still cannot take task_workspace."""
    install(site, squatter, kinds=["task_workspace"])
    host, _ = quiet_host(allow=[squatter])
    assert record(host, squatter).status == "failed"
    with pytest.raises(UnknownSourceKindError, match="'taskctx-workspace' is installed but not"):
        host.source("task_workspace", root=".")


@pytest.mark.parametrize("first", ["aaa-one", "zzz-one"])
@pytest.mark.parametrize(
    ("registry", "spec"),
    [
        ("source_kinds", {"kinds": ["tickets"]}),
        ("file_io_handlers", {"handlers": [("tickets", ["tkt"], [])]}),
        ("index_providers", {"providers": [("tickets", "vector")]}),
        ("commands", {"commands": ["tickets"]}),
    ],
)
def test_a_name_two_plugins_register_goes_to_neither(
    site: Site, first: str, registry: str, spec: dict[str, Any]
) -> None:
    """Two third-party plugins registering one name both fail, in either load order,
    with an error naming both and how to choose."""
    other = "mmm-two"
    install(site, first, **spec)
    install(site, other, **spec)
    host, messages = quiet_host(allow=[first, other])
    for dist in (first, other):
        rec = record(host, dist)
        assert rec.status == "failed"
        assert rec.error is not None
        assert "'tickets' is registered by both" in rec.error
        assert "PluginHost(choose={'tickets': '<distribution>'})" in rec.error
    assert registered(host, registry, "tickets") is None
    assert len(messages) == 2


@pytest.mark.parametrize("chosen", ["aaa-one", "zzz-one"])
def test_choose_decides_a_contested_name(site: Site, chosen: str) -> None:
    """PluginHost(choose={name: dist}) gives the name to that distribution whatever the
    order, and the other fails naming the choice."""
    for dist in ("aaa-one", "zzz-one"):
        install(site, dist, kinds=["tickets"], commands=[f"cmd-{dist}"])
    host, _ = quiet_host(allow=["aaa-one", "zzz-one"], choose={"tickets": chosen})
    loser = "zzz-one" if chosen == "aaa-one" else "aaa-one"
    assert record(host, chosen).status == "loaded"
    assert record(host, chosen).registered["source_kinds"] == ("tickets",)
    failed = record(host, loser)
    assert failed.status == "failed"
    assert failed.error is not None
    assert f"belongs to {chosen!r} (chosen with PluginHost(choose=...))" in failed.error
    assert host.source("tickets").kind == "tickets"
    assert sorted(host.commands()) == [f"cmd-{chosen}"]


def test_choose_from_the_environment(site: Site) -> None:
    """TASKCTX_CHOOSE_PLUGINS (key=dist, comma-separated) chooses like choose= does."""
    for dist in ("aaa-one", "zzz-one"):
        install(site, dist, kinds=["tickets", "other"])
    environ = {CHOOSE_ENV: " tickets = ZZZ_one , other=zzz-one"}
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        host = PluginHost.from_environment(environ=environ)
    assert record(host, "zzz-one").status == "loaded"
    assert record(host, "aaa-one").status == "failed"
    assert host.choose == {"tickets": "zzz-one", "other": "zzz-one"}


def test_choose_can_hand_a_first_party_kind_to_another_distribution(site: Site) -> None:
    """An application may give task_workspace to its own distribution; then the
    first-party plugin is the one refused."""
    install(site, "aaa-workspace", kinds=["task_workspace"])
    host, _ = quiet_host(
        allow=["aaa-workspace", "taskctx-workspace"], choose={"task_workspace": "aaa-workspace"}
    )
    assert record(host, "aaa-workspace").status == "loaded"
    assert record(host, "taskctx-workspace").status == "failed"
    assert type(host.source("task_workspace")).__module__ == "aaa_workspace_mod"


def test_chosen_distribution_alone_may_register_the_name(site: Site) -> None:
    """A name chosen for a distribution that is not installed is registered by no one."""
    install(site, "aaa-one", kinds=["tickets"])
    host, _ = quiet_host(allow=["aaa-one"], choose={"tickets": "absent-dist"})
    assert record(host, "aaa-one").status == "failed"
    assert "tickets" not in host.source_kinds()


@pytest.mark.parametrize("squatter", ["aaa-pdf", "zzz-pdf"])
def test_first_party_handler_claims_win_and_the_rest_of_the_plugin_loads(
    site: Site, squatter: str
) -> None:
    """A third-party handler claiming .pdf / application/pdf is not used beside
    taskctx-documents (warned, listed under refused); its other handler still serves."""
    install(
        site,
        squatter,
        handlers=[("fastpdf", ["PDF"], ["Application/PDF"]), ("tickets", ["tkt"], [])],
    )
    host, messages = quiet_host(allow=["taskctx-documents", squatter])
    rec = record(host, squatter)
    assert rec.status == "loaded"
    assert rec.refused == {"file_io_handlers": ("fastpdf",)}
    assert rec.registered["file_io_handlers"] == ("tickets",)
    assert any("'fastpdf' is not used" in m and "taskctx-documents" in m for m in messages)
    for found in (
        host.file_io_handler_for("a/report.pdf"),
        host.file_io_handler_for(media_type="application/pdf"),
    ):
        assert found is not None
        assert found.name == "pdf"
        assert type(found).__module__.startswith("taskctx_documents")
    tickets = host.file_io_handler_for("x.tkt")
    assert tickets is not None
    assert tickets.name == "tickets"


def test_a_media_type_alias_is_the_same_claim(site: Site) -> None:
    """A third-party handler claiming the alias application/x-pdf competes for
    application/pdf like one claiming it outright (aliases resolve in claims and lookup)."""
    install(site, "aaa-xpdf", handlers=[("xpdf", ["xpdf"], ["application/x-pdf"])])
    host, _ = quiet_host(allow=["taskctx-documents", "aaa-xpdf"])
    assert record(host, "aaa-xpdf").refused == {"file_io_handlers": ("xpdf",)}
    for media_type in ("application/x-pdf", "application/pdf"):
        found = host.file_io_handler_for(media_type=media_type)
        assert found is not None
        assert found.name == "pdf"


@pytest.mark.parametrize("first", ["aaa-h", "zzz-h"])
def test_a_claim_two_third_parties_make_goes_to_neither_unless_chosen(
    site: Site, first: str
) -> None:
    """Two third-party handlers claiming .foo serve it for no one, in either order;
    choose={".foo": dist} gives it to one."""
    install(site, first, handlers=[(f"{first}-foo", ["foo"], [])])
    install(site, "mmm-h", handlers=[("mmm-h-foo", ["foo"], [])])
    host, messages = quiet_host(allow=[first, "mmm-h"])
    assert host.file_io_handler_for("a.foo") is None
    assert [h.name for h in host.file_io_handlers()] == []
    assert any("'.foo' is claimed by both" in m for m in messages)
    chosen, _ = quiet_host(allow=[first, "mmm-h"], choose={".foo": first})
    found = chosen.file_io_handler_for("a.foo")
    assert found is not None
    assert found.name == f"{first}-foo"
    assert record(chosen, "mmm-h").refused == {"file_io_handlers": ("mmm-h-foo",)}


@pytest.mark.parametrize("first", ["aaa-r", "zzz-r"])
def test_scoped_reader_claims_follow_the_same_rule(site: Site, first: str) -> None:
    """Readers claiming one scope and media type: neither wins by order; the chosen one
    does; none can take the kernel's text line reader."""
    install(site, first, readers=[(f"{first}-page", ["page"], ["application/x-deck"])])
    install(site, "mmm-r", readers=[("mmm-r-page", ["page"], ["application/x-deck"])])
    host, _ = quiet_host(allow=[first, "mmm-r"])
    assert host.scoped_reader_for("page", "application/x-deck") is None
    chosen, _ = quiet_host(allow=[first, "mmm-r"], choose={"page:application/x-deck": "mmm-r"})
    found = chosen.scoped_reader_for("page", "application/x-deck")
    assert getattr(found, "name", None) == "mmm-r-page"
    install(site, "aaa-lines", readers=[("my-lines", ["lines"], [])])
    lines_host, messages = quiet_host(allow=["aaa-lines"])
    reader = lines_host.scoped_reader_for("lines", "text/plain")
    assert type(reader).__module__ == "taskctx.builtins"
    assert record(lines_host, "aaa-lines").refused == {"scoped_readers": ("my-lines",)}
    assert any("kernel's built-in" in m for m in messages)


@pytest.mark.parametrize("first", ["aaa-lex", "zzz-lex"])
def test_default_lexical_provider_is_never_decided_by_order(site: Site, first: str) -> None:
    """fts (first party) stays the default beside third-party lexical providers; two
    third parties alone give no default (with a warning) unless one is chosen."""
    install(site, first, providers=[(f"{first}-bm25", "lexical")])
    install(site, "mmm-lex", providers=[("mmm-lex-bm25", "lexical")])
    with_fts, _ = quiet_host(allow=["taskctx-fts", first, "mmm-lex"])
    default = with_fts.default_lexical_provider()
    assert default is not None
    assert default.name == "fts"
    assert sorted(with_fts.index_providers()) == sorted(
        ["structural", "fts", f"{first}-bm25", "mmm-lex-bm25"]
    )
    tied, messages = quiet_host(allow=[first, "mmm-lex"])
    assert tied.default_lexical_provider() is None
    assert any("no default lexical provider" in m for m in messages)
    chosen, _ = quiet_host(allow=[first, "mmm-lex"], choose={"default_lexical_provider": first})
    picked = chosen.default_lexical_provider()
    assert picked is not None
    assert picked.name == f"{first}-bm25"


def test_in_process_plugin_is_an_explicit_choice() -> None:
    """host.register may take a first-party kind nobody holds; a held or chosen-for-
    another name is refused; an in-process handler outranks a first-party one's claims."""

    class MyWorkspace:
        @hookimpl
        def register_source_kinds(self, register: Callable[..., None]) -> None:
            register("task_workspace", object)

    host = PluginHost(allow=[])
    host.register(MyWorkspace(), name="mine")
    assert record(host, "mine").status == "loaded"

    loaded = PluginHost(allow=["taskctx-workspace"])
    with pytest.warns(PluginLoadWarning, match="duplicate source kind 'task_workspace'"):
        loaded.register(MyWorkspace(), name="mine")

    chosen = PluginHost(allow=[], choose={"task_workspace": "someone-else"})
    with pytest.warns(PluginLoadWarning, match="belongs to 'someone-else'"):
        chosen.register(MyWorkspace(), name="mine")

    class Pdf:
        name = "my-pdf"
        suffixes = ("pdf",)
        media_types = ("application/pdf",)

        def parse(self, data: bytes, path: str) -> Any:
            raise NotImplementedError

    class MyPdf:
        @hookimpl
        def register_file_io_handlers(self, register: Callable[..., None]) -> None:
            register(Pdf())

    documents = PluginHost(allow=["taskctx-documents"])
    with pytest.warns(PluginLoadWarning, match="'pdf' is not used"):
        documents.register(MyPdf(), name="app-pdf")
    found = documents.file_io_handler_for("a.pdf")
    assert getattr(found, "name", None) == "my-pdf"
    assert record(documents, "taskctx-documents").refused == {"file_io_handlers": ("pdf",)}


def test_one_plugin_claiming_a_suffix_twice_fails(site: Site) -> None:
    """A plugin whose own two handlers claim one suffix is refused as a whole."""
    install(site, "aaa-twice", handlers=[("a", ["foo"], []), ("b", ["FOO"], [])])
    host, _ = quiet_host(allow=["aaa-twice"])
    rec: PluginRecord = record(host, "aaa-twice")
    assert rec.status == "failed"
    assert rec.error is not None
    assert "'.foo' ('a' claims it too)" in rec.error


def test_strict_host_raises_on_a_contested_name(site: Site) -> None:
    """With strict=True a name two plugins register raises PluginLoadError."""
    for dist in ("aaa-one", "zzz-one"):
        install(site, dist, kinds=["tickets"])
    with pytest.raises(PluginLoadError, match="registered by both"):
        PluginHost(allow=["aaa-one", "zzz-one"], strict=True)


@pytest.mark.parametrize(
    ("choose", "error"),
    [
        ("tickets", ValueError),
        ("tickets=", ValueError),
        ({"tickets": ""}, ValueError),
        ({"": "dist"}, ValueError),
        ({"tickets": 3}, ValueError),
        (5, TypeError),
        (["tickets=dist"], TypeError),
    ],
)
def test_malformed_choose_is_refused(choose: Any, error: type[Exception]) -> None:
    """A choose that is not key -> distribution raises, naming the bad entry."""
    with pytest.raises(error, match="choose"):
        PluginHost(load_entrypoints=False, choose=choose)
