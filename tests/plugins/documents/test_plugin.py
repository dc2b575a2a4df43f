"""The entry point registers the four handlers; the host finds them by suffix and type."""

from __future__ import annotations

import pytest
import taskctx_documents
from taskctx_documents import DocxHandler, PdfHandler, PptxHandler, XlsxHandler

from taskctx import PluginHost


@pytest.fixture
def host() -> PluginHost:
    """A strict host that loads only this distribution."""
    return PluginHost(allow={"taskctx-documents"}, strict=True)


def test_entry_point_registers_four_handlers(host: PluginHost) -> None:
    """``taskctx-documents`` loads and registers pdf, docx, xlsx and pptx."""
    record = next(r for r in host.plugins() if r.name == "taskctx-documents")
    assert record.status == "loaded"
    assert sorted(h.name for h in host.file_io_handlers()) == ["docx", "pdf", "pptx", "xlsx"]


@pytest.mark.parametrize(
    ("path", "handler_type"),
    [
        ("a/Report.PDF", PdfHandler),
        ("notes.docx", DocxHandler),
        ("book.xlsx", XlsxHandler),
        ("macro.xlsm", XlsxHandler),
        ("deck.pptx", PptxHandler),
        ("macro.pptm", PptxHandler),
    ],
)
def test_host_finds_handler_by_suffix(
    host: PluginHost, path: str, handler_type: type[object]
) -> None:
    """Suffix lookup is case-insensitive and covers macro-enabled variants."""
    found = host.file_io_handler_for(path=path)
    assert found is not None
    assert found.name == handler_type.name  # type: ignore[attr-defined]
    assert found.version == handler_type().version  # type: ignore[attr-defined]


def test_loading_the_plugin_imports_no_parser_library() -> None:
    """Registering the handlers does not import pypdf, python-docx, openpyxl or python-pptx."""
    import subprocess
    import sys

    code = (
        "import sys; from taskctx import PluginHost; "
        "host = PluginHost(allow=['taskctx-documents']); "
        "assert len(host.file_io_handlers()) == 4; "
        "print(sorted(m for m in ('pypdf', 'docx', 'openpyxl', 'pptx') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_host_finds_handler_by_media_type(host: PluginHost) -> None:
    """Each handler's media types resolve to it."""
    for handler in host.file_io_handlers():
        for media_type in handler.media_types:
            assert host.file_io_handler_for(media_type=media_type) is handler


def test_handlers_share_limits() -> None:
    """``default_handlers(limits)`` hands one limits object to all four."""
    limits = taskctx_documents.DocumentLimits(max_pages=3)
    handlers = taskctx_documents.default_handlers(limits)
    assert all(getattr(h, "limits", None) is limits for h in handlers)


def test_versions_differ_per_handler(host: PluginHost) -> None:
    """Every handler exposes a distinct, non-empty version string for parse caches."""
    versions = [getattr(h, "version", "") for h in host.file_io_handlers()]
    assert all(versions)
    assert len(set(versions)) == 4
