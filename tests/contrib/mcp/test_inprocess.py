"""The server through the SDK's own client, in process (legacy and 2026 protocol paths)."""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from taskctx_mcp import ContextService, ServerConfig, build_server

from tests.contrib.mcp.conftest import PNG, make_config
from tests.contrib.mcp.exercise import check, exercise, exercise_config

MODES = ["legacy", "auto"]


def run(service: ContextService, mode: str, body: Callable[[Client], Awaitable[Any]]) -> Any:
    """Run ``body`` with a client connected in process to a server over ``service``."""

    async def main() -> Any:
        async with Client(build_server(service), mode=mode) as client:
            return await body(client)

    return anyio.run(main)


async def all_resources(client: Client) -> list[types.Resource]:
    """Every resource, following the cursor through every page."""
    found: list[types.Resource] = []
    cursor: str | None = None
    pages = 0
    while True:
        page = await client.list_resources(cursor=cursor)
        found += page.resources
        pages += 1
        assert pages < 50, "the listing does not end"
        if page.next_cursor is None:
            return found
        cursor = page.next_cursor


def error_of(result: types.CallToolResult) -> dict[str, str]:
    """The reason and message of a tool error result."""
    assert result.is_error
    assert isinstance(result.structured_content, dict)
    error = result.structured_content["error"]
    assert isinstance(error, dict)
    text = result.content[0]
    assert isinstance(text, types.TextContent)
    assert "Traceback" not in text.text
    return error


@pytest.mark.parametrize("mode", MODES)
def test_resources_are_listed_page_by_page_and_read(service: ContextService, mode: str) -> None:
    """Every whole item of every binding is listed once across pages of two, hidden files
    and links out are not, and every text resource reads back its text."""

    async def body(client: Client) -> tuple[list[str], dict[str, str]]:
        resources = await all_resources(client)
        texts: dict[str, str] = {}
        for resource in resources:
            if resource.mime_type == "image/png":
                continue
            read = await client.read_resource(resource.uri)
            content = read.contents[0]
            assert isinstance(content, types.TextResourceContents)
            texts[resource.uri] = content.text
        return [r.uri for r in resources], texts

    uris, texts = run(service, mode, body)
    files = [u for u in uris if u.startswith("taskctx://files/")]
    assert sorted(files) == [
        "taskctx://files/chart.png",
        "taskctx://files/docs/upload.md",
        "taskctx://files/main.py",
        "taskctx://files/notes.txt",
    ]
    assert len(uris) == len(set(uris))
    assert any(u.startswith("taskctx://records/") for u in uris)
    assert texts["taskctx://files/main.py"] == "print('hello')\n"
    assert "30 s" in texts["taskctx://files/docs/upload.md"]


@pytest.mark.parametrize("mode", MODES)
def test_read_context_read_next_and_read_ref(service: ContextService, mode: str) -> None:
    """read_context returns the view and structure; read_next continues the pinned
    snapshot; read_ref resolves an alias of the latest read, whole or scoped."""

    async def body(client: Client) -> list[types.CallToolResult]:
        first = await client.call_tool("read_context", {"query": "upload", "max_blocks": 1})
        assert first.structured_content is not None
        cursor = first.structured_content["cursor"]
        second = await client.call_tool("read_next", {"cursor": cursor})
        alias = first.structured_content["blocks"][0]["alias"]
        whole = await client.call_tool("read_ref", {"ref_or_alias": f"[[ref:{alias}]]"})
        notes = await client.call_tool(
            "read_context", {"query": "line", "filters": {"glob": "notes.txt"}}
        )
        assert notes.structured_content is not None
        notes_alias = notes.structured_content["blocks"][0]["alias"]
        scoped = await client.call_tool(
            "read_ref", {"ref_or_alias": notes_alias, "scope": "lines:2-2"}
        )
        return [first, second, whole, scoped]

    first, second, whole, scoped = run(service, mode, body)
    for result in (first, second, whole, scoped):
        assert not result.is_error, result.content
    out = first.structured_content
    assert out is not None
    assert out["has_more"] is True
    assert out["page"] == 1
    assert set(out["coverage"]) == {"files", "records"}
    assert out["coverage"]["files"]["outcome"] == "matched"
    assert "[[ref:ref_1]]" in out["view"]
    assert "ctx://" not in str(out)  # the model sees aliases, never canonical refs
    assert second.structured_content is not None
    assert second.structured_content["page"] == 2
    assert second.structured_content["snapshot"] == out["snapshot"]
    assert whole.structured_content is not None
    assert whole.structured_content["blocks"][0]["completeness"] == "complete"
    assert scoped.structured_content is not None
    assert scoped.structured_content["blocks"][0]["content"] == "line two\n"


@pytest.mark.parametrize("mode", MODES)
def test_bad_tool_input_is_a_tool_error_naming_it(service: ContextService, mode: str) -> None:
    """A forged alias, a tampered or empty cursor, an unknown binding filter, a traversal
    and a bad argument each come back as an error result with a reason, no traceback."""

    async def body(client: Client) -> dict[str, dict[str, str]]:
        first = await client.call_tool("read_context", {"query": "upload", "max_blocks": 1})
        assert first.structured_content is not None
        cursor = first.structured_content["cursor"]
        payload, signature = cursor.split(".")
        tampered = (
            payload[:-2] + ("A" if payload[-2] != "A" else "B") + payload[-1] + "." + signature
        )
        calls = {
            "forged": ("read_ref", {"ref_or_alias": "ref_999"}),
            "tampered": ("read_next", {"cursor": tampered}),
            "garbage": ("read_next", {"cursor": "not-a-cursor"}),
            "binding": ("read_context", {"query": "x", "filters": {"bindings": ["nope"]}}),
            "traversal": ("read_ref", {"ref_or_alias": "ctx://files/../outside.txt"}),
            "absolute": ("read_ref", {"ref_or_alias": "taskctx://files//etc/passwd"}),
            "link": ("read_ref", {"ref_or_alias": "taskctx://files/link.txt"}),
            "argument": ("read_context", {"query": "x", "max_chars": 0}),
            "extra": ("read_context", {"query": "x", "bogus": 1}),
            "unbound": ("read_ref", {"ref_or_alias": "ctx://elsewhere/a.txt"}),
            "missing": ("read_ref", {"ref_or_alias": "ctx://files/missing.txt"}),
            "scope": ("read_ref", {"ref_or_alias": "ctx://files/notes.txt", "scope": "lines:9-3"}),
            "image": ("read_ref", {"ref_or_alias": "taskctx://files/chart.png"}),
            "empty": ("read_ref", {"ref_or_alias": ""}),
        }
        return {
            name: error_of(await client.call_tool(tool, args))
            for name, (tool, args) in calls.items()
        }

    errors = run(service, mode, body)
    assert errors["forged"]["reason"] == "unknown_alias"
    assert "ref_999" in errors["forged"]["message"]
    assert errors["tampered"]["reason"] == "invalid_cursor"
    assert "signature" in errors["tampered"]["message"]
    assert errors["garbage"]["reason"] == "invalid_cursor"
    assert errors["binding"]["reason"] == "unknown_binding"
    assert errors["traversal"]["reason"] == "policy_refused"
    assert errors["absolute"]["reason"] == "policy_refused"
    assert errors["link"]["reason"] in {"policy_refused", "not_found"}
    assert errors["argument"]["reason"] == "invalid_arguments"
    assert "max_chars" in errors["argument"]["message"]
    assert errors["extra"]["reason"] == "invalid_arguments"
    assert errors["unbound"]["reason"] == "unknown_binding"
    assert errors["missing"]["reason"] == "not_found"
    assert errors["scope"]["reason"] == "unsupported_scope"
    assert errors["image"]["reason"] == "reference_only"
    assert "never as guessed text" in errors["image"]["message"]
    assert errors["empty"]["reason"] == "invalid_arguments"


@pytest.mark.parametrize("mode", MODES)
def test_an_alias_before_any_read_is_refused(service: ContextService, mode: str) -> None:
    """read_ref with an alias when nothing was read says to read first."""

    async def body(client: Client) -> dict[str, str]:
        return error_of(await client.call_tool("read_ref", {"ref_or_alias": "ref_1"}))

    error = run(service, mode, body)
    assert error["reason"] == "invalid_arguments"
    assert "read_context first" in error["message"]


@pytest.mark.parametrize("mode", MODES)
def test_an_unknown_tool_is_a_protocol_error(service: ContextService, mode: str) -> None:
    """A tool the server does not have is a JSON-RPC error naming the tools it has."""

    async def body(client: Client) -> MCPError:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("delete_everything", {})
        return caught.value

    error = run(service, mode, body)
    assert error.code == types.INVALID_PARAMS
    assert "read_context" in error.message


BAD_URIS = {
    "taskctx://nope/a.txt": "unknown_binding",
    "taskctx://files/missing.txt": "not_found",
    "taskctx://files/../outside.txt": "policy_refused",
    "taskctx://files/%2e%2e/outside.txt": "policy_refused",
    "taskctx://files/docs/%2E%2E/%2E%2E/outside.txt": "policy_refused",
    "taskctx://files//etc/passwd": "policy_refused",
    "taskctx://files/link.txt": "policy_refused",
    "taskctx://files/main.py?bogus=1": "invalid_uri",
    "taskctx://files/main.py?lines=": "invalid_uri",
    "taskctx://files/main.py#lines:1-1": "invalid_uri",
    "file:///etc/passwd": "invalid_uri",
    "taskctx://files": "invalid_uri",
    "taskctx://files/chart.png": "reference_only",
    "taskctx://files/main.py?lines=9-3": "unsupported_scope",
}


@pytest.mark.parametrize("mode", MODES)
def test_bad_resource_uris_are_mcp_errors_with_a_reason(service: ContextService, mode: str) -> None:
    """Every class of bad URI is a JSON-RPC error (-32602) whose data names the reason,
    decided by the source's own boundary; nothing outside the workspace is read."""

    async def body(client: Client) -> dict[str, MCPError]:
        errors: dict[str, MCPError] = {}
        for uri in BAD_URIS:
            with pytest.raises(MCPError) as caught:
                await client.read_resource(uri)
            errors[uri] = caught.value
        return errors

    errors = run(service, mode, body)
    for uri, reason in BAD_URIS.items():
        error = errors[uri]
        assert error.code == types.INVALID_PARAMS, (uri, error.message)
        assert error.data == {"reason": reason}, (uri, error.data, error.message)
        assert "Traceback" not in error.message
        assert "not yours" not in error.message


@pytest.mark.parametrize("mode", MODES)
def test_a_tampered_resource_cursor_is_refused(service: ContextService, mode: str) -> None:
    """resources/list with a forged cursor is an invalid_cursor error."""

    async def body(client: Client) -> MCPError:
        page = await client.list_resources()
        assert page.next_cursor is not None
        with pytest.raises(MCPError) as caught:
            await client.list_resources(cursor=page.next_cursor[:-3] + "AAA")
        return caught.value

    error = run(service, mode, body)
    assert error.code == types.INVALID_PARAMS
    assert error.data == {"reason": "invalid_cursor"}


def test_scoped_resource_templates_are_listed(service: ContextService) -> None:
    """One template per scope kind, each a taskctx:// URI template."""

    async def body(client: Client) -> list[types.ResourceTemplate]:
        return (await client.list_resource_templates()).resource_templates

    templates = run(service, "legacy", body)
    assert {t.name for t in templates} == {
        "scoped-lines",
        "scoped-page",
        "scoped-sheet",
        "scoped-slide",
        "scoped-section",
        "scoped-scope",
    }
    assert all(t.uri_template.startswith("taskctx://{binding}/{+path}{?") for t in templates)


def test_images_are_blobs_only_for_a_consumer_that_takes_them(
    project: Path, state_dir: Path
) -> None:
    """With a consumer declaring image attachments an image reads as a blob of its bytes;
    read_ref delivers it as an image content item."""
    service = ContextService.from_config(
        make_config(
            project,
            consumer={"name": "viewer", "capabilities": {"attachments": {"image": True}}},
        )
    )

    async def body(client: Client) -> tuple[types.ReadResourceResult, types.CallToolResult]:
        read = await client.read_resource("taskctx://files/chart.png")
        tool = await client.call_tool("read_ref", {"ref_or_alias": "taskctx://files/chart.png"})
        return read, tool

    read, tool = run(service, "legacy", body)
    blob = read.contents[0]
    assert isinstance(blob, types.BlobResourceContents)
    assert blob.mime_type == "image/png"
    assert base64.b64decode(blob.blob) == PNG
    assert any(isinstance(c, types.ImageContent) for c in tool.content)


def test_a_tall_image_reads_as_its_segments_in_order(project: Path, state_dir: Path) -> None:
    """A consumer with the default image policy gets a tall screenshot as ordered segment
    blobs from a resource read, and as that many image items, each described, from
    read_ref; ``image_policy: None`` gives the original bytes."""
    from io import BytesIO

    from PIL import Image

    tall = BytesIO()
    Image.new("RGB", (200, 12000), "white").save(tall, format="PNG")
    (project / "page.png").write_bytes(tall.getvalue())

    def reads(
        attachments: dict[str, Any],
    ) -> tuple[types.ReadResourceResult, types.CallToolResult]:
        service = ContextService.from_config(
            make_config(
                project,
                consumer={"name": "viewer", "capabilities": {"attachments": attachments}},
            )
        )

        async def body(client: Client) -> tuple[types.ReadResourceResult, types.CallToolResult]:
            read = await client.read_resource("taskctx://files/page.png")
            tool = await client.call_tool("read_ref", {"ref_or_alias": "taskctx://files/page.png"})
            return read, tool

        read, tool = run(service, "legacy", body)
        return read, tool

    read, tool = reads({"image": True})
    blobs = [c for c in read.contents if isinstance(c, types.BlobResourceContents)]
    sizes = [Image.open(BytesIO(base64.b64decode(c.blob))).size for c in blobs]
    assert sizes == [(200, 4096), (200, 4096), (200, 3908)]
    assert sum(isinstance(c, types.ImageContent) for c in tool.content) == 3
    assert tool.structured_content is not None
    described = tool.structured_content["attachments"]
    assert [(a["segment"], a["segments"], a["original_height"]) for a in described] == [
        (1, 3, 12000),
        (2, 3, 12000),
        (3, 3, 12000),
    ]
    original, _ = reads({"image": True, "image_policy": None})
    kept = [c for c in original.contents if isinstance(c, types.BlobResourceContents)]
    assert [base64.b64decode(c.blob) for c in kept] == [tall.getvalue()]


def test_parsed_text_and_the_scope_parameter_round_trip(service: ContextService) -> None:
    """A ?scope= URI and a ?lines= URI name the same scoped read."""

    async def body(client: Client) -> tuple[str, str]:
        a = (await client.read_resource("taskctx://files/notes.txt?lines=1-2")).contents[0]
        b = (await client.read_resource("taskctx://files/notes.txt?scope=lines%3A1-2")).contents[0]
        assert isinstance(a, types.TextResourceContents)
        assert isinstance(b, types.TextResourceContents)
        return a.text, b.text

    a, b = run(service, "legacy", body)
    assert a == b == "line one\nline two\n"


@pytest.mark.parametrize("mode", MODES)
def test_every_resource_page_read_and_tool_in_process(
    project: Path, state_dir: Path, tmp_path: Path, mode: str
) -> None:
    """In process: every resource page and read, every tool, an unknown URI, a forged
    alias and tampered cursors, with the answers every transport must give."""
    config = ServerConfig.model_validate(exercise_config(project, state_dir, tmp_path / "mem"))
    walk = run(ContextService.from_config(config), mode, exercise)
    check(walk)
