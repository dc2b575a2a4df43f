"""Media rules through resources, budgets, listing staleness and 2026 listen streams."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import anyio
import docx
import mcp_types as types
import openpyxl
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from taskctx_documents.testing import minimal_pdf
from taskctx_mcp import ContextService, ServerConfig, build_server

from taskctx.errors import CursorError
from tests.contrib.mcp.conftest import PLUGINS


def _docx() -> bytes:
    document = docx.Document()
    document.add_heading("Overview", level=1)
    document.add_paragraph("The upload times out after 30 s.")
    document.add_heading("Details", level=1)
    document.add_paragraph("Retry twice.")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _xlsx() -> bytes:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.title = "Data"
    sheet.append(["Name", "Qty"])
    sheet.append(["Apple", 3])
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


@pytest.fixture
def documents(tmp_path: Path) -> Path:
    """A workspace holding a DOCX, an XLSX and a two-page PDF."""
    root = tmp_path / "documents"
    root.mkdir()
    (root / "report.docx").write_bytes(_docx())
    (root / "prices.xlsx").write_bytes(_xlsx())
    (root / "manual.pdf").write_bytes(minimal_pdf(["first page text", "second page text"]))
    return root


def _service(root: Path, plugins: tuple[str, ...], **fields: Any) -> ContextService:
    base = ServerConfig.model_validate({"plugins": list(plugins), **fields})
    return ContextService.from_config(ServerConfig.from_flags(workspace=[str(root)], base=base))


def _read(service: ContextService, uris: list[str]) -> dict[str, Any]:
    async def main() -> dict[str, Any]:
        found: dict[str, Any] = {}
        async with Client(build_server(service), mode="legacy") as client:
            for uri in uris:
                try:
                    found[uri] = (await client.read_resource(uri)).contents[0]
                except MCPError as exc:
                    found[uri] = exc
        return found

    return anyio.run(main)


def test_documents_read_as_parsed_text_with_scoped_templates(documents: Path) -> None:
    """With taskctx-documents, a DOCX reads as its parsed text (text/plain), and the
    section, sheet and page templates read one part of each document."""
    service = _service(documents, (*PLUGINS, "taskctx-documents"))
    found = _read(
        service,
        [
            "taskctx://files/report.docx",
            "taskctx://files/report.docx?section=Details",
            "taskctx://files/prices.xlsx?sheet=Data",
            "taskctx://files/manual.pdf?page=2",
        ],
    )
    for uri, content in found.items():
        assert isinstance(content, types.TextResourceContents), (uri, content)
        assert content.mime_type == "text/plain"
    assert "The upload times out after 30 s." in found["taskctx://files/report.docx"].text
    details = found["taskctx://files/report.docx?section=Details"].text
    assert "Retry twice." in details
    assert "30 s" not in details
    assert "Apple" in found["taskctx://files/prices.xlsx?sheet=Data"].text
    page = found["taskctx://files/manual.pdf?page=2"].text
    assert "second page text" in page
    assert "first page" not in page


def test_documents_without_a_handler_are_reference_only(documents: Path) -> None:
    """Without taskctx-documents a DOCX and a PDF are refused as reference only, never
    read as guessed text."""
    service = _service(documents, PLUGINS)
    found = _read(service, ["taskctx://files/report.docx", "taskctx://files/manual.pdf"])
    for uri, error in found.items():
        assert isinstance(error, MCPError), (uri, error)
        assert error.data == {"reason": "reference_only"}
        assert "reference only" in error.message


def test_a_read_over_its_budget_fails_closed(project: Path) -> None:
    """read_ref of a file larger than max_chars is an over_budget error, never cut."""
    service = _service(project, PLUGINS)

    async def main() -> types.CallToolResult:
        async with Client(build_server(service), mode="legacy") as client:
            return await client.call_tool(
                "read_ref", {"ref_or_alias": "taskctx://files/notes.txt", "max_chars": 5}
            )

    result = anyio.run(main)
    assert result.is_error
    assert isinstance(result.structured_content, dict)
    assert result.structured_content["error"]["reason"] == "over_budget"


def test_a_listing_continues_its_snapshot_and_a_moved_source_is_stale(project: Path) -> None:
    """A resources/list cursor pins the revisions of the first page: after the workspace
    changed, the next pages still list the pinned state (the source serves it), and a new
    server instance, which cannot, refuses the cursor as stale; never a mix of states."""
    service = _service(project, PLUGINS, resources={"page_size": 1, "poll_interval": 0})

    async def main() -> tuple[list[str], MCPError]:
        async with Client(build_server(service), mode="legacy") as client:
            first = await client.list_resources()
            assert first.next_cursor is not None
            (project / "new.txt").write_text("new\n")
            uris = [r.uri for r in first.resources]
            cursor: str | None = first.next_cursor
            while cursor is not None:
                page = await client.list_resources(cursor=cursor)
                uris += [r.uri for r in page.resources]
                cursor = page.next_cursor
        async with Client(build_server(ContextService.from_config(service.config))) as other:
            with pytest.raises(MCPError) as caught:
                await other.list_resources(cursor=first.next_cursor)
        return uris, caught.value

    uris, error = anyio.run(main)
    assert "taskctx://files/new.txt" not in uris
    assert "taskctx://files/notes.txt" in uris
    assert error.data == {"reason": "stale"}
    assert "list again" in error.message


def test_a_cursor_of_another_server_key_is_refused(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A resource cursor signed under another state directory's key does not verify."""
    service = _service(project, PLUGINS, resources={"page_size": 1, "poll_interval": 0})
    first = anyio.run(service.list_resources, None)
    assert first.next_cursor is not None
    monkeypatch.setenv("TASKCTX_STATE_DIR", str(tmp_path / "other-state"))
    other = ContextService.from_config(service.config)
    with pytest.raises(CursorError, match="signature"):
        anyio.run(other.list_resources, first.next_cursor)


def test_a_2026_client_listens_for_updates(project: Path) -> None:
    """On the 2026 protocol, subscriptions/listen delivers resources/updated for a
    subscribed URI when its binding moves."""
    service = _service(project, PLUGINS, resources={"poll_interval": 0.1})

    async def main() -> list[Any]:
        events: list[Any] = []
        async with Client(build_server(service), mode="auto") as client:
            uri = "taskctx://files/notes.txt"
            async with client.listen(resource_subscriptions=[uri]) as subscription:
                await anyio.sleep(0.3)
                (project / "notes.txt").write_text("changed\n")
                with anyio.fail_after(10):
                    async for event in subscription:
                        events.append(event)
                        if getattr(event, "uri", None) == uri:
                            break
        return events

    events = anyio.run(main)
    assert any(getattr(e, "uri", None) == "taskctx://files/notes.txt" for e in events)


def test_a_binding_that_does_not_answer_is_listed_as_unavailable(
    project: Path, tmp_path: Path
) -> None:
    """A workspace whose root became a file after the server started is named in the page's
    ``_meta["taskctx/unavailable"]``, never listed as empty; the others still list."""
    import shutil

    gone = tmp_path / "gone"
    (gone / "docs").mkdir(parents=True)
    (gone / "docs" / "a.txt").write_text("a\n")
    base = ServerConfig.model_validate(
        {"plugins": list(PLUGINS), "resources": {"poll_interval": 0}}
    )
    service = ContextService.from_config(
        ServerConfig.from_flags(workspace=[str(project), str(gone)], base=base)
    )
    shutil.rmtree(gone)
    gone.write_text("a file now\n")  # the source refuses a root that is no real folder

    async def main() -> types.ListResourcesResult:
        async with Client(build_server(service), mode="legacy") as client:
            return await client.list_resources()

    page = anyio.run(main)
    assert page.meta == {"taskctx/unavailable": ["files-2"]}
    uris = [r.uri for r in page.resources]
    assert "taskctx://files-1/main.py" in uris
    assert not any(u.startswith("taskctx://files-2/") for u in uris)
