"""Protocol shapes: every structural check is derived from the protocols in taskctx.protocols."""

from __future__ import annotations

import sys
import typing
from collections.abc import Callable
from typing import Any

import pytest

from taskctx import PluginHost, TaskContext, TaskCtxError
from taskctx.errors import PluginLoadError
from taskctx.hookspecs import hookimpl
from taskctx.protocols import (
    ContextSource,
    FileIOHandler,
    IndexProvider,
    ScopedRead,
    Selector,
    missing_members,
    protocol_members,
    protocol_shape,
)
from taskctx.testing import MemorySource


def test_protocol_members_in_declaration_order() -> None:
    """protocol_members lists each protocol's public members in the order it declares them."""
    assert protocol_members(ContextSource) == (
        "kind",
        "async_revision",
        "async_enumerate_descriptors",
        "async_read_exact",
    )
    assert protocol_members(FileIOHandler) == ("name", "suffixes", "media_types", "parse")
    assert protocol_members(ScopedRead) == (
        "name",
        "scope_kinds",
        "media_types",
        "async_read_scoped",
    )
    assert protocol_members(IndexProvider) == ("name", "kind", "needs_text", "open_partition")
    assert protocol_members(Selector) == ("name", "async_select")


def test_protocol_shape_resolves_declared_types() -> None:
    """A property's declared type is resolved, so checks can follow it (Literal, bool, tuple)."""
    shape = {m.name: m for m in protocol_shape(IndexProvider)}
    assert shape["kind"].kind == "property"
    assert typing.get_args(shape["kind"].returns) == ("structural", "lexical", "vector", "hybrid")
    assert shape["needs_text"].returns is bool
    assert shape["open_partition"].kind == "method"
    assert {m.name: m.kind for m in protocol_shape(ContextSource)}["kind"] == "attribute"


@pytest.mark.skipif(sys.version_info < (3, 13), reason="typing.get_protocol_members is 3.13+")
def test_protocol_members_agree_with_the_standard_library() -> None:
    """On Python 3.13+ the members are exactly typing.get_protocol_members' public ones."""
    for protocol in (ContextSource, FileIOHandler, ScopedRead, IndexProvider, Selector):
        members = typing.get_protocol_members(protocol)  # type: ignore[attr-defined]
        assert set(protocol_members(protocol)) == {m for m in members if not m.startswith("_")}


@pytest.mark.parametrize("bad", [object, int, TaskContext])
def test_protocol_shape_refuses_what_is_not_a_protocol(bad: type) -> None:
    """Asking the shape of a class that is not a Protocol is a TypeError naming it."""
    with pytest.raises(TypeError, match=r"is not a typing\.Protocol"):
        protocol_shape(bad)


def test_attach_names_every_missing_member() -> None:
    """attach refuses a would-be source and names every ContextSource member it lacks."""

    class HalfSource:
        kind = "half"

        async def async_revision(self) -> str:
            return "r1"

    ctx = TaskContext("t", host=PluginHost(allow=[]))
    with pytest.raises(
        TaskCtxError, match="not a ContextSource: no async_enumerate_descriptors, async_read_exact"
    ):
        ctx.attach(HalfSource(), binding_id="half")  # type: ignore[arg-type]
    assert missing_members(MemorySource(), ContextSource) == ()
    assert ctx.bindings == {}


class _Full:
    """A value with every member of every registry protocol (a template to break)."""

    name = "full"
    scope_kinds = ("xlines",)
    media_types = ("text/x-full",)
    suffixes = ("full",)
    kind = "lexical"
    needs_text = True

    async def async_read_scoped(self, *args: Any) -> Any:
        """Unused."""

    def parse(self, *args: Any) -> Any:
        """Unused."""

    def open_partition(self, *args: Any) -> Any:
        """Unused."""

    async def async_select(self, *args: Any) -> Any:
        """Unused."""


_HOOKS: dict[type, str] = {
    ScopedRead: "register_scoped_readers",
    FileIOHandler: "register_file_io_handlers",
    IndexProvider: "register_index_providers",
    Selector: "register_selectors",
}


def _register(protocol: type, value: object) -> PluginHost:
    """Register ``value`` through the protocol's hook on a strict in-process host."""
    hook = _HOOKS[protocol]

    def register_one(self: object, register: Callable[[object], None]) -> None:
        register(value)

    register_one.__name__ = hook
    plugin = type("OnePlugin", (), {hook: hookimpl(register_one)})()
    host = PluginHost(load_entrypoints=False, strict=True)
    host.register(plugin, name="one")
    return host


def _without(attr: str) -> object:
    """A _Full with one member taken away."""
    members = {k: v for k, v in vars(_Full).items() if not k.startswith("__") and k != attr}
    return type("Partial", (), members)()


@pytest.mark.parametrize(
    ("protocol", "member"),
    [(p, m) for p in _HOOKS for m in protocol_members(p) if m != "name"],
    ids=lambda v: getattr(v, "__name__", v),
)
def test_registration_names_each_missing_member(protocol: type, member: str) -> None:
    """Each member a registry's protocol declares is required, and its absence is named."""
    _register(protocol, _Full())  # the whole shape registers
    with pytest.raises(PluginLoadError, match=rf"lacks {member}\b"):
        _register(protocol, _without(member))


@pytest.mark.parametrize(
    ("protocol", "attr", "value", "message"),
    [
        (ScopedRead, "scope_kinds", "xlines", "scope_kinds must be a tuple of str"),
        (ScopedRead, "media_types", ("text/plain", ""), "media_types must hold non-empty str"),
        (FileIOHandler, "suffixes", 7, "suffixes must be a tuple of str"),
        (FileIOHandler, "media_types", (b"x",), "media_types must hold non-empty str"),
        (IndexProvider, "kind", "semantic", "kind must be one of structural, lexical"),
        (IndexProvider, "needs_text", "yes", "needs_text must be a bool"),
        (IndexProvider, "open_partition", "not callable", "open_partition of 'full' is not"),
        (Selector, "async_select", None, "async_select of 'full' is not callable"),
        (Selector, "name", "", "name must be a non-empty str"),
    ],
)
def test_registration_checks_each_declared_type(
    protocol: type, attr: str, value: object, message: str
) -> None:
    """A member of the wrong type (by the protocol's annotation) is refused, naming it."""
    bad = _without(attr)
    setattr(bad, attr, value)
    with pytest.raises(PluginLoadError, match=message):
        _register(protocol, bad)
