"""taskctx-mcp is an ordinary entry-point plugin: it registers ``taskctx mcp`` and
nothing else, typed as the hookspec is."""

from __future__ import annotations

import inspect
from importlib.metadata import entry_points

from click.testing import CliRunner
from taskctx_mcp import plugin

from taskctx import PluginHost, hookspecs
from taskctx.cli import main


def test_the_entry_point_is_in_the_taskctx_group() -> None:
    """The distribution declares ``mcp = taskctx_mcp.plugin`` under ``taskctx``."""
    found = {ep.name: ep.value for ep in entry_points(group="taskctx")}
    assert found.get("mcp") == "taskctx_mcp.plugin"


def test_the_host_loads_it_and_it_registers_only_the_command() -> None:
    """Allowed, it loads and registers ``mcp``; not allowed, it is never imported."""
    host = PluginHost(allow=["taskctx-mcp"])
    assert "mcp" in host.commands()
    record = next(r for r in host.plugins() if r.name == "taskctx-mcp")
    assert record.status == "loaded"
    assert record.hooks == ("register_commands",)
    assert "mcp" not in PluginHost(allow=["taskctx-records"]).commands()


def test_register_is_annotated_like_the_hookspec() -> None:
    """The hookimpl's ``register`` annotation is the hookspec's, character for character."""
    spec = inspect.signature(hookspecs.register_commands).parameters["register"].annotation
    mine = inspect.signature(plugin.register_commands).parameters["register"].annotation
    assert mine == spec


def test_taskctx_mcp_serve_has_help() -> None:
    """``taskctx mcp serve --help`` is reachable through the kernel's command group."""
    result = CliRunner().invoke(main, ["mcp", "serve", "--help"])
    assert result.exit_code == 0, result.output
    assert "--workspace" in result.output
    assert "--http HOST:PORT" in result.output
