"""The `task_workspace` source: stamps, descriptors by file and section, reads, media."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from taskctx_workspace import TaskWorkspace
from taskctx_workspace.source import WorkspaceSource

from taskctx import (
    ContextBudget,
    ContextConsumer,
    ContextReadIntent,
    MediaError,
    PluginHost,
    PolicyError,
    StaleReaderError,
    TaskContext,
    hookimpl,
)
from taskctx.model import (
    Completeness,
    CoverageStatus,
    EnumerationRequest,
    OmissionReason,
    Representation,
    SectionInfo,
)
from taskctx.protocols import ContextSource, ParsedDocument
from taskctx.testing import SourceContract
from tests.plugins.workspace.helpers import png_bytes


class PagesHandler:
    """A test FileIOHandler: 'PDFs' whose pages are separated by form feeds."""

    name = "test-pages"
    version = "1"
    suffixes = ("pdf",)
    media_types = ("application/pdf",)

    def __init__(self) -> None:
        self.calls = 0

    def parse(self, data: bytes, path: str) -> ParsedDocument:
        """Split the text after the header into pages."""
        self.calls += 1
        if b"ENCRYPTED" in data:
            raise MediaError(f"{path} is encrypted", code="encrypted")
        body = data.split(b"\n", 1)[1].decode()
        text, sections = "", []
        for number, page in enumerate(body.split("\f"), start=1):
            start = len(text)
            text += page
            sections.append(
                SectionInfo(
                    title=f"Page {number}",
                    scope=f"page:{number}",
                    chars=len(page),
                    start=start,
                    end=len(text),
                )
            )
        return ParsedDocument(text=text, media_type="application/pdf", sections=tuple(sections))


def host_with(handler: PagesHandler | None = None) -> PluginHost:
    """A host with the workspace plugin and, optionally, the test handler."""
    from taskctx_workspace import plugin

    host = PluginHost(allow=[])
    host.register(plugin, name="workspace")
    if handler is not None:

        class Handlers:
            @hookimpl
            def register_file_io_handlers(self, register: Callable[[Any], None]) -> None:
                register(handler)

        host.register(Handlers(), name="test-handlers")
    return host


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A small project folder with text, Markdown, a long file, a document and an image."""
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def upload():\n    return 'times out after 30 s'\n")
    (root / "README.md").write_text("# Project\n\nintro\n\n## Upload\n\nit times out\n")
    (root / "long.txt").write_text("".join(f"line {n}: " + "x" * 60 + "\n" for n in range(300)))
    (root / "report.pdf").write_bytes(b"%PDF-fake\nfirst page text\fsecond page about uploads")
    (root / "pic.png").write_bytes(png_bytes())
    (root / ".env").write_text("SECRET=1\n")
    return root


def run(coroutine: Any) -> Any:
    """Run one coroutine."""
    return asyncio.run(coroutine)


class TestWorkspaceContract(SourceContract):
    """The workspace source keeps the kernel's source contract."""

    covers = "task_workspace"

    @pytest.fixture
    def source(self, project: Path) -> ContextSource:
        """A read-only workspace over the project fixture."""
        return host_with(PagesHandler()).source("task_workspace", root=str(project))


def test_host_source_and_workspace_source_agree(project: Path) -> None:
    """host.source('task_workspace', ...) and TaskWorkspace(...).source() see the same files."""
    host = host_with()
    by_kind = host.source("task_workspace", root=str(project))
    direct = TaskWorkspace(project, host=host).source()
    assert isinstance(by_kind, WorkspaceSource)
    assert run(by_kind.async_revision()) == run(direct.async_revision())
    assert by_kind.identity == direct.identity


def test_revision_costs_no_hashing_after_the_first_scan(project: Path) -> None:
    """After one enumeration, revisions and re-enumerations hash nothing; one change hashes one."""
    source = TaskWorkspace(project, host=host_with(PagesHandler())).source()
    run(source.async_enumerate_descriptors(EnumerationRequest()))
    hashed = source.workspace.hashed_count
    first = run(source.async_revision())
    run(source.async_enumerate_descriptors(EnumerationRequest()))
    assert run(source.async_revision()) == first
    assert source.workspace.hashed_count == hashed
    (project / "src" / "app.py").write_text("def upload():\n    return 'fixed'\n")
    assert run(source.async_revision()) != first
    changes = run(source.async_changes(first))
    assert changes is not None
    assert [d.path for d in changes.upserts] == ["src/app.py"]


def test_long_text_files_are_described_in_passages(project: Path) -> None:
    """A file longer than chunk_chars also has passage descriptors that cover it."""
    source = TaskWorkspace(project, host=host_with()).source()
    page = run(source.async_enumerate_descriptors(EnumerationRequest()))
    chunks = [d for d in page.descriptors if d.path == "long.txt" and d.scope is not None]
    whole = next(d for d in page.descriptors if d.path == "long.txt" and d.scope is None)
    assert len(chunks) == 6
    assert sum(c.chars or 0 for c in chunks) == whole.chars
    assert all((c.chars or 0) <= 4000 for c in chunks)
    assert chunks[0].scope == "lines:1-57"


def test_documents_are_parsed_once_and_read_by_page(project: Path) -> None:
    """A document becomes parsed text with page descriptors; page scopes read exactly."""
    handler = PagesHandler()
    ctx = TaskContext("t", host=host_with(handler))
    ctx.attach(ctx.host.source("task_workspace", root=str(project)), binding_id="files")
    intent = ContextReadIntent(explicit_refs=["ctx://files/report.pdf#page:2"])
    package = ctx.reader(consumer="a").read(intent)
    (block,) = [b for b in package.blocks if b.ref.path == "report.pdf"]
    assert block.content == "second page about uploads"
    assert block.representation is Representation.PARSED_TEXT
    assert handler.calls == 1


def test_encrypted_document_is_reference_only_with_its_code(project: Path) -> None:
    """A document the handler refuses is reference only with the handler's code."""
    (project / "report.pdf").write_bytes(b"%PDF-fake\nENCRYPTED")
    ctx = TaskContext("t", host=host_with(PagesHandler()))
    ctx.attach(ctx.host.source("task_workspace", root=str(project)), binding_id="files")
    package = ctx.reader(consumer="a").read(ContextReadIntent(filters={"glob": "*.pdf"}))
    assert [o.reason for o in package.omissions] == [OmissionReason.UNSUPPORTED_MEDIA]
    assert [d.code for d in package.diagnostics] == ["encrypted"]


def test_documents_without_handler_say_handler_missing(project: Path) -> None:
    """With no FileIOHandler installed a PDF is reference only with handler_missing."""
    ctx = TaskContext("t", host=host_with())
    ctx.attach(ctx.host.source("task_workspace", root=str(project)), binding_id="files")
    package = ctx.reader(consumer="a").read(ContextReadIntent(filters={"glob": "*.pdf"}))
    assert [d.code for d in package.diagnostics] == ["handler_missing"]


def test_images_attach_only_for_image_consumers(project: Path) -> None:
    """An image is an attachment for an image consumer and reference only for others."""
    ctx = TaskContext("t", host=host_with())
    ctx.attach(ctx.host.source("task_workspace", root=str(project)), binding_id="files")
    intent = ContextReadIntent(filters={"glob": "*.png"})
    plain = ctx.reader(consumer="text-only").read(intent)
    assert [o.reason for o in plain.omissions] == [OmissionReason.REFERENCE_ONLY]
    vision = ContextConsumer(name="vision", capabilities={"attachments": {"image": True}})
    package = ctx.reader(consumer=vision).read(intent)
    (attachment,) = package.attachments
    assert (attachment.width, attachment.height) == (4, 3)


@pytest.mark.parametrize("payload", [b"", b"\x89PNG\r\n\x1a\n", b"\x89PNG\r\n\x1a\ngarbage" * 3])
def test_broken_images_fail_the_read(project: Path, payload: bytes) -> None:
    """An empty, truncated or garbage image fails the read for an image consumer."""
    (project / "pic.png").write_bytes(payload)
    ctx = TaskContext("t", host=host_with())
    ctx.attach(ctx.host.source("task_workspace", root=str(project)), binding_id="files")
    vision = ContextConsumer(name="vision", capabilities={"attachments": {"image": True}})
    with pytest.raises(MediaError):
        ctx.reader(consumer=vision).read(ContextReadIntent(filters={"glob": "*.png"}))


def test_hidden_files_are_offered_only_when_asked(project: Path) -> None:
    """.env is enumerated but not offered unless include_hidden=True."""
    ctx = TaskContext("t", host=host_with())
    ctx.attach(ctx.host.source("task_workspace", root=str(project)), binding_id="files")
    plain = ctx.reader(consumer="a").read("x")
    assert ".env" not in {b.ref.path for b in plain.blocks}
    hidden = ctx.reader(consumer="a").read(
        ContextReadIntent(filters={"include_hidden": True, "glob": ".env"})
    )
    assert [b.content for b in hidden.blocks] == ["SECRET=1\n"]


def test_markdown_sections_are_chunks_of_long_markdown(tmp_path: Path) -> None:
    """A long Markdown file is described per top-level section when they fit a chunk."""
    root = tmp_path / "docs"
    root.mkdir()
    body = "".join(f"## Part {n}\n\n" + "words " * 100 + "\n\n" for n in range(1, 11))
    (root / "guide.md").write_text(body)
    source = TaskWorkspace(root, host=host_with()).source()
    page = run(source.async_enumerate_descriptors(EnumerationRequest()))
    scopes = [d.title for d in page.descriptors if d.scope is not None]
    assert scopes == [f"guide.md: Part {n}" for n in range(1, 11)]


def test_whole_project_read_is_honest(project: Path) -> None:
    """A read over the folder delivers text, reports media and says coverage is complete."""
    ctx = TaskContext("review", host=host_with(PagesHandler()))
    ctx.put(role="instruction", content="Do not modify files.", required=True)
    ctx.attach(ctx.host.source("task_workspace", root=str(project)), binding_id="project-files")
    package = ctx.reader(consumer="a", budget=ContextBudget(max_chars=60_000)).read("upload")
    paths = {b.ref.path for b in package.blocks if b.ref.binding == "project-files"}
    assert {"src/app.py", "README.md", "long.txt", "report.pdf"} <= paths
    assert all(b.completeness is Completeness.COMPLETE for b in package.blocks)
    cov = package.source_coverage["project-files"]
    assert cov.status is CoverageStatus.PARTIAL  # the image is reference only
    assert {o.reason for o in package.omissions} <= {
        OmissionReason.COVERED_BY_PARENT,
        OmissionReason.REFERENCE_ONLY,
    }


def test_changed_file_makes_the_reader_stale(project: Path) -> None:
    """A file changed after the pin makes the next read fail until refresh."""
    ctx = TaskContext("t", host=host_with())
    ctx.attach(ctx.host.source("task_workspace", root=str(project)), binding_id="files")
    reader = ctx.reader(consumer="a")
    reader.read("x")
    (project / "src" / "app.py").write_text("changed\n")
    with pytest.raises(StaleReaderError):
        reader.read("x")
    reader.refresh()
    assert any(b.content == "changed\n" for b in reader.read("x").blocks)


def test_traversal_refs_are_refused(project: Path) -> None:
    """An explicit ref that escapes the root is refused by policy."""
    ctx = TaskContext("t", host=host_with())
    ctx.attach(ctx.host.source("task_workspace", root=str(project)), binding_id="files")
    with pytest.raises(PolicyError):
        ctx.reader(consumer="a").read(ContextReadIntent(explicit_refs=["ctx://files/../x"]))


def test_symlink_escaping_the_root_is_not_enumerated(project: Path, tmp_path: Path) -> None:
    """A symlink pointing outside the workspace is never described or read."""
    outside = tmp_path / "outside.txt"
    outside.write_text("secret outside")
    os.symlink(outside, project / "link.txt")
    source = TaskWorkspace(project, host=host_with()).source()
    page = run(source.async_enumerate_descriptors(EnumerationRequest()))
    assert "link.txt" not in {d.path for d in page.descriptors}
