"""Working-state tools when session memory is bound, and resource update notifications."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from taskctx_mcp import ContextService, ServerConfig, build_server

from tests.contrib.mcp.conftest import PLUGINS, make_config


def memory_service(project: Path, tmp_path: Path) -> ContextService:
    """A service binding a workspace and the session memory of session-7."""
    config = ServerConfig.model_validate(
        {
            "plugins": list(PLUGINS),
            "bindings": [
                {"kind": "task_workspace", "id": "files", "options": {"root": str(project)}},
                f"session_memory:root={tmp_path / 'memory'},session_id=session-7,id=memory",
            ],
            "resources": {"poll_interval": 0},
        }
    )
    return ContextService.from_config(config)


def test_memory_tools_keep_the_working_state_semantics(project: Path, tmp_path: Path) -> None:
    """note_write says created then updated, note_delete deleted then already_absent,
    note_get without a key gives sorted keys and a count; tasks add, update, list, remove."""
    service = memory_service(project, tmp_path)

    async def main() -> list[Any]:
        async with Client(build_server(service), mode="legacy") as client:
            names = {t.name for t in (await client.list_tools()).tools}
            calls = [
                ("note_write", {"key": "plan", "value": "bisect"}),
                ("note_write", {"key": "plan", "value": "bisect from v1.4"}),
                ("note_write", {"key": "finding", "value": "idle close after 30 s"}),
                ("note_get", {"key": "plan"}),
                ("note_get", {}),
                ("note_delete", {"key": "finding"}),
                ("note_delete", {"key": "finding"}),
                ("task_add", {"title": "bisect", "status": "in_progress"}),
                ("task_add", {"title": "report"}),
                ("task_update", {"task_id": "t2", "status": "blocked"}),
                ("task_list", {"status": "blocked"}),
                ("task_remove", {"task_id": "t2"}),
                ("task_remove", {"task_id": "t2"}),
                ("note_get", {"key": "nothing"}),
                ("note_write", {"key": "", "value": "x"}),
            ]
            results = [await client.call_tool(name, args) for name, args in calls]
            context = await client.call_tool("read_context", {"query": "bisect"})
            return [names, results, context]

    names, results, context = anyio.run(main)
    assert {"note_write", "note_delete", "note_get", "task_add", "task_list"} <= names
    out = [r.structured_content for r in results]
    assert out[0] == {"key": "plan", "result": "created"}
    assert out[1] == {"key": "plan", "result": "updated"}
    assert out[3]["value"] == "bisect from v1.4"
    assert out[4]["keys"] == ["finding", "plan"]
    assert out[4]["count"] == 2
    assert out[5]["result"] == "deleted"
    assert out[6]["result"] == "already_absent"
    assert out[7]["id"] == "t1"
    assert out[8]["id"] == "t2"
    assert out[10]["count"] == 1
    assert out[10]["tasks"][0]["status"] == "blocked"
    assert out[11]["result"] == "deleted"
    assert out[12]["result"] == "already_absent"
    assert results[13].is_error
    assert out[13]["error"]["reason"] == "not_found"
    assert results[14].is_error
    assert out[14]["error"]["reason"] == "invalid_arguments"
    assert context.structured_content is not None
    assert "memory" in context.structured_content["coverage"]


def test_no_memory_tools_without_session_memory(project: Path) -> None:
    """Without a session_memory binding only the three read tools are served."""
    service = ContextService.from_config(make_config(project))

    async def main() -> set[str]:
        async with Client(build_server(service), mode="legacy") as client:
            return {t.name for t in (await client.list_tools()).tools}

    assert anyio.run(main) == {"read_context", "read_next", "read_ref"}


# the 2025 wire's resources/subscribe, which the SDK's client flags as removed in 2026
LEGACY_SUBSCRIBE = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")


@LEGACY_SUBSCRIBE
def test_a_subscriber_is_told_when_its_binding_moves(project: Path) -> None:
    """After resources/subscribe, a change to the workspace sends resources/updated for
    the subscribed URI (the server polls revisions every 0.1 s)."""
    service = ContextService.from_config(make_config(project, resources={"poll_interval": 0.1}))
    seen: list[Any] = []
    updated = anyio.Event()

    async def handler(message: Any) -> None:
        seen.append(message)
        if isinstance(message, types.ResourceUpdatedNotification):
            updated.set()

    async def main() -> None:
        async with Client(build_server(service), mode="legacy", message_handler=handler) as c:
            await c.subscribe_resource("taskctx://files/notes.txt")
            await anyio.sleep(0.3)
            (project / "notes.txt").write_text("line one changed\n")
            with anyio.fail_after(10):
                await updated.wait()

    anyio.run(main)
    uris = [m.params.uri for m in seen if isinstance(m, types.ResourceUpdatedNotification)]
    assert uris
    assert set(uris) == {"taskctx://files/notes.txt"}


@LEGACY_SUBSCRIBE
def test_subscribing_to_an_unbound_uri_is_refused(project: Path) -> None:
    """resources/subscribe checks the URI names a bound source."""

    service = ContextService.from_config(make_config(project, resources={"poll_interval": 0}))

    async def main() -> MCPError:
        async with Client(build_server(service), mode="legacy") as client:
            with pytest.raises(MCPError) as caught:
                await client.subscribe_resource("taskctx://elsewhere/x.txt")
            return caught.value

    assert anyio.run(main).data == {"reason": "unknown_binding"}


@LEGACY_SUBSCRIBE
def test_an_unsubscribed_uri_is_not_notified(project: Path) -> None:
    """After resources/unsubscribe (a later request of the same connection) a change
    sends no resources/updated for the URI; one still subscribed is notified."""
    service = ContextService.from_config(make_config(project, resources={"poll_interval": 0.1}))
    seen: list[str] = []
    updated = anyio.Event()

    async def handler(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            seen.append(message.params.uri)
            updated.set()

    async def main() -> None:
        async with Client(build_server(service), mode="legacy", message_handler=handler) as c:
            await c.subscribe_resource("taskctx://files/notes.txt")
            await c.subscribe_resource("taskctx://files/main.py")
            await c.unsubscribe_resource("taskctx://files/notes.txt")
            await anyio.sleep(0.3)
            (project / "notes.txt").write_text("changed\n")
            with anyio.fail_after(10):
                await updated.wait()
            await anyio.sleep(0.3)

    anyio.run(main)
    assert set(seen) == {"taskctx://files/main.py"}
