"""The run configuration reaches every source: factories receive it, attach governs with it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from taskctx import PluginHost, RunConfiguration, TaskContext
from taskctx.errors import PolicyError, TaskCtxError
from taskctx.hookspecs import hookimpl
from taskctx.model import ContextRef, DescriptorPage, EnumerationRequest, ExactRead
from taskctx.policy import ConfigurableSource, govern
from taskctx.protocols import ContextSource
from taskctx.testing import MemorySource

RESTRICTED = RunConfiguration(allowed_hosts=["example.org"], extensions={"acme": {"retries": 2}})


class NetworkSource(MemorySource):
    """A source that 'fetched' from ``url`` and checks it against each configuration."""

    kind = "networked"

    def __init__(self, url: str, configuration: RunConfiguration | None = None) -> None:
        super().__init__({"a.md": "alpha\n", "b.md": "beta\n"})
        self.url = url
        self.configuration = configuration
        self.governed_by: list[RunConfiguration] = []

    def with_configuration(self, configuration: RunConfiguration) -> NetworkSource:
        """Itself if ``configuration`` allows its URL (PolicyError otherwise)."""
        configuration.authorize_url(self.url)
        self.governed_by.append(configuration)
        return self


class Unconfigurable:
    """A source that does not say how a configuration governs it (no with_configuration)."""

    kind = "memory"

    def __init__(self, items: dict[str, str | bytes]) -> None:
        self._inner = MemorySource(items)

    async def async_revision(self) -> str:
        """The inner source's revision."""
        return await self._inner.async_revision()

    async def async_enumerate_descriptors(self, request: EnumerationRequest) -> DescriptorPage:
        """The inner source's descriptors."""
        return await self._inner.async_enumerate_descriptors(request)

    async def async_read_exact(self, ref: ContextRef, limit: int | None = None) -> ExactRead:
        """The inner source's read."""
        return await self._inner.async_read_exact(ref, limit)


class Renamed(NetworkSource):
    """A source whose with_configuration returns a source of another kind."""

    def with_configuration(self, configuration: RunConfiguration) -> Any:
        """Something that is not a source of this kind."""
        return MemorySource({"x": "y"})


class Plugin:
    """Registers ``networked`` (takes a configuration) and ``plain`` (does not)."""

    @hookimpl
    def register_source_kinds(self, register: Any) -> None:
        """Two kinds: one factory with a ``configuration`` parameter, one without."""

        def networked(url: str, configuration: RunConfiguration | None = None) -> NetworkSource:
            return NetworkSource(url, configuration)

        def plain(text: str = "hello") -> ContextSource:
            source = Unconfigurable({"a.md": text})
            source.kind = "plain"
            return source

        register("networked", networked)
        register("plain", plain)


@pytest.fixture
def host() -> PluginHost:
    """A host with only the test plugin."""
    host = PluginHost(allow=[], load_entrypoints=False)
    host.register(Plugin(), name="reach-test")
    return host


def context(host: PluginHost, tmp_path: Path, configuration: RunConfiguration) -> TaskContext:
    """A TaskContext over ``host`` under ``configuration``."""
    return TaskContext(
        "reach", host=host, state_dir=tmp_path / "state", configuration=configuration
    )


def test_ctx_source_hands_the_factory_the_context_configuration(
    host: PluginHost, tmp_path: Path
) -> None:
    """ctx.source passes the context's configuration, extensions included, to the factory."""
    ctx = context(host, tmp_path, RESTRICTED)
    source = ctx.source("networked", url="https://example.org/r")
    assert isinstance(source, NetworkSource)
    assert source.configuration is RESTRICTED
    assert source.configuration.extension("acme") == {"retries": 2}
    assert source.governed_by == [RESTRICTED]


def test_ctx_source_governs_and_refuses_a_denied_host(host: PluginHost, tmp_path: Path) -> None:
    """ctx.source of a source whose URL the context refuses raises PolicyError naming it."""
    ctx = context(host, tmp_path, RESTRICTED)
    with pytest.raises(PolicyError, match=r"source kind 'networked'.*evil\.example"):
        ctx.source("networked", url="https://evil.example/r")


def test_host_source_passes_a_configuration_only_to_factories_that_take_one(
    host: PluginHost,
) -> None:
    """host.source(configuration=...) reaches a factory with the parameter; others still work."""
    source = host.source("networked", url="https://example.org/r", configuration=RESTRICTED)
    assert isinstance(source, NetworkSource)
    assert source.configuration is RESTRICTED
    plain = host.source("plain", text="hi", configuration=RunConfiguration())
    assert plain.kind == "plain"


def test_host_source_refuses_a_plain_source_under_restricted_hosts(host: PluginHost) -> None:
    """A source without with_configuration cannot be made under allowed_hosts."""
    with pytest.raises(PolicyError, match=r"source kind 'plain'.*no with_configuration"):
        host.source("plain", configuration=RESTRICTED)


@pytest.mark.parametrize("bad", [{"allowed_hosts": ["example.org"]}, "example.org", 3])
def test_host_source_refuses_a_configuration_of_the_wrong_type(
    host: PluginHost, bad: object
) -> None:
    """host.source(configuration=...) takes a RunConfiguration and names what it got."""
    with pytest.raises(TypeError, match=f"RunConfiguration, not {type(bad).__name__}"):
        host.source("networked", url="https://example.org/r", configuration=bad)  # type: ignore[arg-type]


def test_ctx_source_refuses_a_configuration_option(host: PluginHost, tmp_path: Path) -> None:
    """A per-source configuration cannot replace the context's through ctx.source."""
    ctx = context(host, tmp_path, RESTRICTED)
    with pytest.raises(TaskCtxError, match="context's own configuration"):
        ctx.source("networked", url="https://example.org/r", configuration=RunConfiguration())


def test_a_source_built_elsewhere_is_governed_when_attached(
    host: PluginHost, tmp_path: Path
) -> None:
    """A source made without any configuration is checked by attach; refused means absent."""
    ctx = context(host, tmp_path, RESTRICTED)
    denied = host.source("networked", url="https://evil.example/r")
    with pytest.raises(PolicyError, match=r"binding 'upstream' \(kind 'networked'\).*evil"):
        ctx.attach(denied, binding_id="upstream")
    assert ctx.bindings == {}
    allowed = NetworkSource("https://example.org/r")
    assert ctx.attach(allowed, binding_id="upstream") == "upstream"
    assert allowed.governed_by == [RESTRICTED]


def test_attach_refuses_a_source_that_cannot_be_governed(host: PluginHost, tmp_path: Path) -> None:
    """Under allowed_hosts, a source without with_configuration is refused, naming the binding."""
    ctx = context(host, tmp_path, RESTRICTED)
    with pytest.raises(PolicyError) as caught:
        ctx.attach(Unconfigurable({"a": "b"}), binding_id="notes")
    message = str(caught.value)
    assert "binding 'notes' (kind 'memory')" in message
    assert "with_configuration" in message
    assert "example.org" in message
    assert ctx.bindings == {}


def test_an_unrestricted_context_attaches_any_source(host: PluginHost, tmp_path: Path) -> None:
    """With every host allowed, a source without with_configuration attaches as before."""
    ctx = context(host, tmp_path, RunConfiguration())
    source = Unconfigurable({"a": "b"})
    ctx.attach(source, binding_id="notes")
    assert ctx.bindings["notes"].source is source


def test_with_configuration_must_keep_the_kind(host: PluginHost, tmp_path: Path) -> None:
    """A with_configuration that returns another kind is a TypeError naming the binding."""
    ctx = context(host, tmp_path, RunConfiguration())
    with pytest.raises(TypeError, match=r"binding 'odd'.*not a source of kind 'networked'"):
        ctx.attach(Renamed("https://example.org/r"), binding_id="odd")
    assert ctx.bindings == {}


@pytest.mark.parametrize("bad", [None, {}, {"allowed_hosts": []}, "example.org"])
def test_task_context_configuration_must_be_a_run_configuration(
    host: PluginHost, tmp_path: Path, bad: object
) -> None:
    """TaskContext(configuration=...) refuses anything but a RunConfiguration."""
    with pytest.raises(TypeError, match="configuration"):
        TaskContext("reach", host=host, state_dir=tmp_path, configuration=bad)  # type: ignore[arg-type]


def test_the_configuration_is_set_once(host: PluginHost, tmp_path: Path) -> None:
    """Sources were governed by the context's configuration: it cannot be swapped later."""
    ctx = context(host, tmp_path, RunConfiguration())
    ctx.attach(MemorySource({"a": "b"}), binding_id="notes")
    with pytest.raises(AttributeError):
        ctx.configuration = RESTRICTED  # type: ignore[misc,unused-ignore]
    assert ctx.configuration == RunConfiguration()


def test_govern_reports_the_protocol() -> None:
    """govern() accepts ConfigurableSource implementations and type-checks its input."""
    source = NetworkSource("https://example.org/r")
    assert isinstance(source, ConfigurableSource)
    assert isinstance(MemorySource(), ConfigurableSource)
    assert not isinstance(Unconfigurable({}), ConfigurableSource)
    assert govern(source, RESTRICTED, "binding 'x'") is source
    with pytest.raises(TypeError, match="RunConfiguration, not dict"):
        govern(source, {}, "binding 'x'")  # type: ignore[arg-type]
