"""One handler lookup: the host and a TaskWorkspace find the same FileIOHandler, aliases too."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from taskctx_workspace import TaskWorkspace

from taskctx import ContextReadIntent, PluginHost, TaskContext
from taskctx.hookspecs import hookimpl
from taskctx.media import handler_for, handler_missing, handler_missing_message
from taskctx.protocols import FileIOHandler, ParsedDocument


class Handler:
    """A FileIOHandler that parses nothing; only its claims matter here."""

    def __init__(self, name: str, media_types: tuple[str, ...], suffixes: tuple[str, ...]) -> None:
        self.name = name
        self.media_types = media_types
        self.suffixes = suffixes

    def parse(self, data: bytes, path: str) -> ParsedDocument:
        """The bytes as text."""
        return ParsedDocument(text=data.decode(), media_type=self.media_types[0])


def _host(*handlers: Handler) -> PluginHost:
    """A built-ins-only host with ``handlers`` registered in-process."""

    class Handlers:
        @hookimpl
        def register_file_io_handlers(self, register: Callable[[FileIOHandler], None]) -> None:
            for handler in handlers:
                register(handler)

    host = PluginHost(allow=[], load_entrypoints=False, strict=True)
    host.register(Handlers(), name="handlers")
    return host


CANONICAL = Handler("pdf", ("application/pdf",), ("pdf",))
ALIASED = Handler("xpdf", ("Application/X-PDF",), ("xpdf",))
TARRED = Handler("targz", ("application/x-tdoc-gz",), ("tar.gz",))


@pytest.mark.parametrize(
    ("registered", "path", "media_type", "expected"),
    [
        (CANONICAL, None, "application/x-pdf", "pdf"),  # an alias of the claimed type
        (CANONICAL, None, "APPLICATION/PDF; version=1.7", "pdf"),
        (ALIASED, None, "application/pdf", "xpdf"),  # the handler claims the alias
        (ALIASED, None, "application/x-pdf", "xpdf"),
        (CANONICAL, "docs/Report.PDF", None, "pdf"),
        (CANONICAL, "docs/report.txt", "text/plain", None),
        (TARRED, "a/b.TAR.GZ", None, "targz"),
        (CANONICAL, None, None, None),
    ],
)
def test_host_and_workspace_find_the_same_handler(
    tmp_path: Path,
    registered: Handler,
    path: str | None,
    media_type: str | None,
    expected: str | None,
) -> None:
    """host.file_io_handler_for and TaskWorkspace.file_io_handler_for agree, resolving
    media-type aliases on both sides (on main the host did not resolve them)."""
    host = _host(registered)
    workspace = TaskWorkspace(tmp_path, host=host)
    found = host.file_io_handler_for(path, media_type)
    assert getattr(found, "name", None) == expected
    assert workspace.file_io_handler_for(path, media_type) is found
    assert handler_for(host.file_io_handlers(), path, media_type) is found


def test_first_claimant_and_longest_suffix_win() -> None:
    """Among handlers, the first claiming the media type wins, else the longest suffix."""
    gz = Handler("gz", ("application/gzip",), ("gz",))
    handlers = (gz, TARRED, CANONICAL)
    assert handler_for(handlers, "x/y.tar.gz", None) is TARRED
    assert handler_for(handlers, "x/y.gz", None) is gz
    assert handler_for(handlers, "x/y.tar.gz", "application/x-gzip") is gz  # alias of gzip
    assert handler_for((), "x/y.pdf", "application/pdf") is None


def test_handler_missing_has_one_wording(tmp_path: Path) -> None:
    """The workspace's problem and the reader's diagnostic for a document without a
    handler use the kernel's one sentence."""
    (tmp_path / "report.pdf").write_bytes(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    message = handler_missing_message("report.pdf", "application/pdf")
    assert handler_missing("report.pdf", "application/pdf").message == message
    assert "taskctx-documents" not in message  # the kernel names no plugin
    from taskctx_workspace import plugin

    host = PluginHost(allow=[], load_entrypoints=False)
    host.register(plugin, name="workspace")
    ctx = TaskContext("t", host=host)
    ctx.attach(host.source("task_workspace", root=str(tmp_path)), binding_id="files")
    package = ctx.reader(consumer="a").read(ContextReadIntent(query="report"))
    assert [(d.code, d.message) for d in package.diagnostics] == [("handler_missing", message)]
