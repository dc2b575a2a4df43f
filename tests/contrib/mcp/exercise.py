"""One walk through everything the server offers, run by the in-process and stdio tests:
every resource page, every read, every tool, and the three kinds of forged input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mcp_types as types
from mcp import Client
from mcp.shared.exceptions import MCPError

__all__ = ["TOOL_CALLS", "check", "exercise", "exercise_config", "tamper"]

TOOL_CALLS: dict[str, list[dict[str, Any]]] = {
    "read_context": [{"query": "upload", "max_blocks": 1}],
    "read_next": [],  # called with the cursor of read_context
    "read_ref": [{"ref_or_alias": "ref_1"}, {"ref_or_alias": "ref_1", "scope": "lines:1-1"}],
    "note_write": [{"key": "plan", "value": "bisect"}, {"key": "plan", "value": "bisect v1.4"}],
    "note_get": [{"key": "plan"}, {}],
    "note_delete": [{"key": "plan"}, {"key": "plan"}],
    "task_add": [{"title": "bisect", "status": "in_progress"}],
    "task_update": [{"task_id": "t1", "status": "done"}],
    "task_get": [{"task_id": "t1"}],
    "task_list": [{}],
    "task_remove": [{"task_id": "t1"}, {"task_id": "t1"}],
}


def exercise_config(project: Path, state_dir: Path, memory: Path) -> dict[str, Any]:
    """The configuration both tests serve: files, records and session memory, pages of 2."""
    return {
        "plugins": [
            "taskctx-workspace",
            "taskctx-records",
            "taskctx-memory",
            "taskctx-fts",
        ],
        "bindings": [
            {"kind": "task_workspace", "id": "files", "options": {"root": str(project)}},
            {"kind": "record_store", "id": "records", "options": {"root": str(state_dir)}},
            {
                "kind": "session_memory",
                "id": "memory",
                "options": {"root": str(memory), "session_id": "session-7"},
            },
        ],
        "resources": {"page_size": 2, "poll_interval": 0},
    }


def tamper(cursor: str) -> str:
    """``cursor`` with one character of its signed payload changed."""
    payload, signature = cursor.split(".")
    flipped = "B" if payload[5] == "A" else "A"
    return f"{payload[:5]}{flipped}{payload[6:]}.{signature}"


async def _error(call: Any) -> MCPError:
    try:
        await call
    except MCPError as exc:
        return exc
    raise AssertionError("expected an MCP error")


async def exercise(client: Client) -> dict[str, Any]:
    """Walk the server and return what it answered."""
    pages: list[list[str]] = []
    cursor: str | None = None
    first_cursor: str | None = None
    while True:
        page = await client.list_resources(cursor=cursor)
        pages.append([r.uri for r in page.resources])
        first_cursor = first_cursor or page.next_cursor
        cursor = page.next_cursor
        if cursor is None or len(pages) > 100:
            break
    reads: dict[str, Any] = {}
    for uri in (u for page in pages for u in page):
        try:
            content = (await client.read_resource(uri)).contents[0]
            reads[uri] = (
                content.text if isinstance(content, types.TextResourceContents) else content
            )
        except MCPError as exc:
            reads[uri] = exc
    listed = {tool.name for tool in (await client.list_tools()).tools}
    results: dict[str, list[types.CallToolResult]] = {}
    for name, calls in TOOL_CALLS.items():
        if name == "read_next":
            continue  # called below, with read_context's cursor
        results[name] = [await client.call_tool(name, args) for args in calls]
        if name == "read_context":
            context_cursor = results[name][0].structured_content["cursor"]
            results["read_next"] = [
                await client.call_tool("read_next", {"cursor": context_cursor}),
                await client.call_tool("read_next", {"cursor": tamper(context_cursor)}),
            ]
    assert first_cursor is not None
    return {
        "pages": pages,
        "reads": reads,
        "listed_tools": listed,
        "results": results,
        "unknown_uri": await _error(client.read_resource("taskctx://files/no/such/file.txt")),
        "unbound_uri": await _error(client.read_resource("taskctx://elsewhere/a.txt")),
        "forged_alias": await client.call_tool("read_ref", {"ref_or_alias": "ref_4242"}),
        "tampered_listing": await _error(client.list_resources(cursor=tamper(first_cursor))),
    }


def check(walk: dict[str, Any]) -> None:
    """What every transport must have answered."""
    pages, reads = walk["pages"], walk["reads"]
    uris = [u for page in pages for u in page]
    assert len(pages) > 2
    assert all(len(page) <= 2 for page in pages)
    assert len(uris) == len(set(uris))
    files = sorted(u for u in uris if u.startswith("taskctx://files/"))
    assert files == [
        "taskctx://files/chart.png",
        "taskctx://files/docs/upload.md",
        "taskctx://files/main.py",
        "taskctx://files/notes.txt",
    ]
    assert any(u.startswith("taskctx://records/") for u in uris)
    assert reads["taskctx://files/main.py"] == "print('hello')\n"
    assert isinstance(reads["taskctx://files/chart.png"], MCPError)
    assert reads["taskctx://files/chart.png"].data == {"reason": "reference_only"}
    assert all(isinstance(v, str) for u, v in reads.items() if not u.endswith(".png"))
    assert walk["listed_tools"] == set(TOOL_CALLS)
    results = walk["results"]
    out = {name: [r.structured_content for r in calls] for name, calls in results.items()}
    for name, calls in results.items():
        expected_errors = {"read_next": [False, True]}.get(name, [False] * len(calls))
        assert [r.is_error for r in calls] == expected_errors, (name, calls)
    assert out["read_context"][0]["has_more"] is True
    assert out["read_next"][0]["page"] == 2
    assert out["read_next"][1]["error"]["reason"] == "invalid_cursor"
    assert out["read_ref"][1]["blocks"][0]["scope"] == "lines:1-1"
    assert [o["result"] for o in out["note_write"]] == ["created", "updated"]
    assert out["note_get"][0]["value"] == "bisect v1.4"
    assert out["note_get"][1]["keys"] == ["plan"]
    assert out["note_get"][1]["count"] == 1
    assert [o["result"] for o in out["note_delete"]] == ["deleted", "already_absent"]
    assert out["task_update"][0]["status"] == "done"
    assert out["task_list"][0]["count"] == 1
    assert [o["result"] for o in out["task_remove"]] == ["deleted", "already_absent"]
    assert walk["unknown_uri"].data == {"reason": "not_found"}
    assert walk["unbound_uri"].data == {"reason": "unknown_binding"}
    assert walk["forged_alias"].is_error
    assert walk["forged_alias"].structured_content["error"]["reason"] == "unknown_alias"
    assert walk["tampered_listing"].data == {"reason": "invalid_cursor"}
