"""Only MediaError leaves parse: library errors are wrapped, warnings are recorded."""

from __future__ import annotations

import io
import logging
import re
import warnings
from pathlib import Path

import openpyxl
import pypdf
import pytest
from taskctx_documents import PdfHandler, XlsxHandler

from taskctx import PluginHost, TaskContext
from taskctx.errors import MediaError
from taskctx.model import Severity
from tests.plugins.documents.builders import make_pdf, make_xlsx


class _Boom:
    """A stand-in for a library entry point that raises ``error``."""

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def __call__(self, *args: object, **kwargs: object) -> object:
        raise self.error


def test_library_exception_becomes_parse_failed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any exception from the library is ``parse_failed`` naming file, type and message."""
    monkeypatch.setattr(pypdf, "PdfReader", _Boom(RuntimeError("something odd")))
    with pytest.raises(MediaError) as caught:
        PdfHandler().parse(make_pdf(["x"]), "odd.pdf")
    assert caught.value.code == "parse_failed"
    assert str(caught.value) == "odd.pdf: cannot parse PDF: RuntimeError: something odd"
    assert isinstance(caught.value.__cause__, RuntimeError)


def test_long_library_message_is_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    """A huge library message is shortened so errors stay readable."""
    monkeypatch.setattr(pypdf, "PdfReader", _Boom(ValueError("x" * 10_000)))
    with pytest.raises(MediaError) as caught:
        PdfHandler().parse(make_pdf(["x"]), "long.pdf")
    assert len(str(caught.value)) < 400
    assert str(caught.value).endswith("...")


def test_memory_error_becomes_too_large(monkeypatch: pytest.MonkeyPatch) -> None:
    """Running out of memory inside a library is reported as ``too_large``."""
    monkeypatch.setattr(openpyxl, "load_workbook", _Boom(MemoryError()))
    with pytest.raises(MediaError) as caught:
        XlsxHandler().parse(make_xlsx(), "huge.xlsx")
    assert caught.value.code == "too_large"


@pytest.mark.parametrize("error", [KeyboardInterrupt(), SystemExit(3)])
def test_interrupts_pass_through(monkeypatch: pytest.MonkeyPatch, error: BaseException) -> None:
    """KeyboardInterrupt and SystemExit are never swallowed."""
    monkeypatch.setattr(pypdf, "PdfReader", _Boom(error))
    with pytest.raises(type(error)):
        PdfHandler().parse(make_pdf(["x"]), "stop.pdf")


def test_library_warnings_are_recorded_not_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    """A warning from the library (an error under ``filterwarnings = error``) lands in metadata."""
    real = openpyxl.load_workbook

    def chatty(*args: object, **kwargs: object) -> object:
        warnings.warn("Workbook contains no default style", UserWarning, stacklevel=2)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(openpyxl, "load_workbook", chatty)
    parsed = XlsxHandler().parse(make_xlsx(), "chatty.xlsx")
    assert parsed.metadata["warnings"] == ["UserWarning: Workbook contains no default style"]


class _Kept(logging.Handler):
    """A root handler that keeps what reaches it."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        """Keep ``record``."""
        self.records.append(record)


def _misplaced_startxref() -> bytes:
    """A real PDF whose startxref points 7 bytes off: pypdf repairs it and logs that."""
    data = make_pdf(["hello world"])
    found = re.search(rb"startxref\s+(\d+)", data)
    assert found is not None
    offset = str(int(found[1]) + 7).encode()
    return data[: found.start(1)] + offset + data[found.end(1) :]


def test_library_log_messages_become_metadata_not_terminal_output(
    capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """pypdf's repair messages stay off stderr, are kept in the document's metadata and
    are logged at DEBUG on taskctx_documents.pypdf."""
    caplog.set_level(logging.DEBUG, logger="taskctx_documents")
    at_root = _Kept()
    logging.getLogger().addHandler(at_root)
    try:
        parsed = PdfHandler().parse(_misplaced_startxref(), "repaired.pdf")
    finally:
        logging.getLogger().removeHandler(at_root)
    assert parsed.text.strip().endswith("hello world")
    assert any(w.startswith("pypdf: incorrect startxref") for w in parsed.metadata["warnings"])
    assert capfd.readouterr().err == ""
    records = [r for r in caplog.records if r.name == "taskctx_documents.pypdf"]
    assert records
    assert all(r.levelno == logging.DEBUG for r in records)
    # pytest hangs its own handlers on non-propagating loggers; a root handler is what
    # an application (and logging's last resort) sees
    assert not [r for r in at_root.records if r.name.startswith("pypdf")]


def test_library_log_messages_outside_a_parse_reach_the_root_logger() -> None:
    """pypdf used directly in the same process logs as it always did (level and name)."""
    at_root = _Kept()
    logging.getLogger().addHandler(at_root)
    try:
        reader = pypdf.PdfReader(io.BytesIO(_misplaced_startxref()))
        assert "hello world" in reader.pages[0].extract_text()
    finally:
        logging.getLogger().removeHandler(at_root)
    (first, *_) = [r for r in at_root.records if r.name.startswith("pypdf")]
    assert first.levelno == logging.WARNING
    assert "incorrect startxref" in first.getMessage()


def test_what_a_parse_noted_becomes_one_diagnostic_of_the_package(tmp_path: Path) -> None:
    """A repaired PDF is delivered, and the package says what was repaired, once, as an
    info ``read_notes`` diagnostic naming the file."""
    root = tmp_path / "docs"
    root.mkdir()
    (root / "repaired.pdf").write_bytes(_misplaced_startxref())
    host = PluginHost(allow=["taskctx-workspace", "taskctx-documents", "taskctx-fts"])
    ctx = TaskContext("t", host=host, state_dir=tmp_path / "state")
    ctx.attach(host.source("task_workspace", root=str(root)), binding_id="docs")
    package = ctx.reader("a").read("hello world")
    assert [b.ref.path for b in package.blocks] == ["repaired.pdf"]
    (note,) = [d for d in package.diagnostics if d.code == "read_notes"]
    assert note.severity is Severity.INFO
    assert note.message.startswith("reading repaired.pdf noted: pypdf: incorrect startxref")
    assert note.ref is not None
    assert note.ref.scope is None
    assert "read_notes" in package.render()
