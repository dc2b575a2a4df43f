"""The shared eval set of 80 real documents, read through a workspace and a TaskContext.

``tests/plugins/documents/test_eval.py`` checks the handlers on the raw bytes. This
module checks the whole path an agent uses: a ``task_workspace`` source attached to a
TaskContext, a reader, and the document asked for as an explicit ref. Every file of
the manifest (the legacy ``.doc``/``.xls`` included) must end in one of two ways,
within 30 s:

- a ``parsed_text`` block, complete, whose whitespace-normalised content contains the
  expected snippet; or
- reference only: an omission of the required ref and a diagnostic whose code is the
  fitting one (``encrypted``, ``parse_failed``, ``no_text``, or ``handler_missing`` for a
  suffix no installed FileIOHandler parses).

Which outcome is fitting is decided once, by the documents plugin's own eval test: its
general rule, its password tables and its table of documented differences (``DIFFERS``)
are imported, not re-decided here.

The eval set lives beside the clone (``<repo>/../shared/eval/docs``) and is read-only;
each file is copied into a fresh temporary workspace, never into the repository. When
the folder is absent (a plain clone) every test here skips.
"""

from __future__ import annotations

import csv
import hashlib
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple, TypeVar

import pytest
from taskctx_workspace import TaskWorkspace

from bench.evaldata import docs_dir, missing_reason
from taskctx import (
    ContextBudget,
    ContextPackage,
    ContextReadIntent,
    ContextRef,
    PluginHost,
    TaskContext,
)
from taskctx.model import Completeness, OmissionReason, Representation
from tests.plugins.documents.helpers import words
from tests.plugins.documents.test_eval import DIFFERS, HANDLERS, Case, _expected

EVAL_DOCS = docs_dir()
MANIFEST = EVAL_DOCS / "MANIFEST.tsv"
EXPECTED_FILES = 80
MAX_SECONDS = 30.0
BINDING = "eval-files"
PLUGINS = ("taskctx-workspace", "taskctx-documents")

# Budget choice. An explicit ref is required: it is never cut, and over budget the read
# raises RequiredOverflowError unless the intent asks for required_overflow="lossy_digest".
# A lossy digest is an outline of section headings, not the text, so it could not show
# that the expected snippet was extracted. The largest document of the set parses to
# about 140,000 characters (pdfsamples__GeoTopo-komprimiert.pdf); a page budget of
# 2,000,000 characters holds every document whole, so no exception is expected at all
# and any that escapes the read fails the test.
BUDGET = ContextBudget(max_chars=2_000_000, max_blocks=1)

# The reference-only codes and the omission reason the kernel gives each.
OMISSION_REASONS = {
    "handler_missing": OmissionReason.UNSUPPORTED_MEDIA,
    "encrypted": OmissionReason.UNSUPPORTED_MEDIA,
    "parse_failed": OmissionReason.UNSUPPORTED_MEDIA,
    "no_text": OmissionReason.REFERENCE_ONLY,
}


class Row(NamedTuple):
    """One document of the manifest and the outcome it must reach."""

    file: str
    sha256_prefix: str
    expected: str  # "parsed" or a diagnostic code
    snippet: str | None


def _expected_outcome(row: dict[str, str]) -> tuple[str, str | None]:
    suffix = row["file"].rsplit(".", 1)[-1].lower()
    if suffix not in HANDLERS:
        return "handler_missing", None
    case = Case(
        file=row["file"],
        flags=frozenset(row["flags"].split(";")),
        parse_result=row["parse_result"],
        snippet=row["expected_snippet"],
    )
    return _expected(case)


def _rows() -> list[Row]:
    if not MANIFEST.is_file():
        return []
    with MANIFEST.open(encoding="utf-8", newline="") as stream:
        manifest = list(csv.DictReader(stream, delimiter="\t"))
    rows = []
    for row in manifest:
        if "/" in row["file"]:
            continue  # expected/*.txt: reference texts of other rows, not documents
        expected, snippet = _expected_outcome(row)
        rows.append(Row(row["file"], row["sha256"], expected, snippet))
    return rows


ROWS = _rows()


def _require_eval_set() -> None:
    if not ROWS:
        pytest.skip(missing_reason(EVAL_DOCS))


@pytest.fixture(scope="module")
def host() -> PluginHost:
    """Exactly the two plugins under test, whatever the environment says."""
    built = PluginHost(allow=PLUGINS)
    loaded = {record.name for record in built.plugins() if record.status == "loaded"}
    assert set(PLUGINS) <= loaded, built.plugins()
    return built


T = TypeVar("T")


def _within(seconds: float, work: Callable[[], T]) -> tuple[T, float]:
    """``work()`` and its duration; fail (not hang) if it takes longer than ``seconds``.

    The work runs in a daemon thread so that a parse stuck inside a library fails this
    test after ``seconds`` instead of hanging the run.
    """
    outcome: list[T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(work())
        except BaseException as exc:
            failure.append(exc)

    started = time.monotonic()
    thread = threading.Thread(target=run, name="eval-read", daemon=True)
    thread.start()
    thread.join(seconds)
    elapsed = time.monotonic() - started
    if thread.is_alive():
        pytest.fail(f"the read did not finish within {seconds:g} s")
    if failure:
        raise failure[0]
    return outcome[0], elapsed


def test_manifest_lists_the_80_documents() -> None:
    """The manifest names 80 documents, each present with the recorded digest prefix."""
    _require_eval_set()
    assert len(ROWS) == EXPECTED_FILES
    for row in ROWS:
        digest = hashlib.sha256((EVAL_DOCS / row.file).read_bytes()).hexdigest()
        assert digest.startswith(row.sha256_prefix), row.file
    assert set(DIFFERS) <= {row.file for row in ROWS}


def _param(row: Row) -> object:
    return pytest.param(row, id=row.file)


# Not marked slow: all 80 reads take about 11 s together (the slowest, GeoTopo, about 3 s).
@pytest.mark.parametrize("row", [_param(row) for row in ROWS] or [pytest.param(None, id="absent")])
def test_eval_document_through_a_workspace(
    row: Row | None, host: PluginHost, tmp_path: Path
) -> None:
    """Read as an explicit ref: parsed text with the snippet, or reference only with the code."""
    _require_eval_set()
    assert row is not None
    folder = tmp_path / "workspace"
    folder.mkdir()
    shutil.copyfile(EVAL_DOCS / row.file, folder / row.file)  # the eval set is read-only
    workspace = TaskWorkspace(folder, host=host)
    ctx = TaskContext("eval-docs", host=host)
    ctx.attach(workspace.source(), binding_id=BINDING)
    ref = ContextRef(binding=BINDING, path=row.file)  # ctx://eval-files/<name>
    assert ContextRef.parse(str(ref)) == ref
    intent = ContextReadIntent(explicit_refs=[ref], optional_selection="none")

    def read() -> ContextPackage:
        return ctx.reader(consumer="eval", budget=BUDGET).read(intent)

    package, elapsed = _within(MAX_SECONDS, read)
    assert elapsed < MAX_SECONDS, f"took {elapsed:.1f} s"

    if row.expected == "parsed":
        assert not package.omissions, package.omissions
        assert [block.ref for block in package.blocks] == [ref]
        block = package.blocks[0]
        assert block.representation is Representation.PARSED_TEXT
        assert block.completeness is Completeness.COMPLETE
        assert block.required
        assert block.chars == len(block.content)
        assert row.snippet is not None
        assert words(row.snippet) in words(block.content)
        return

    assert not package.blocks, [block.ref for block in package.blocks]
    assert [(o.ref, o.required) for o in package.omissions] == [(ref, True)]
    assert package.omissions[0].reason is OMISSION_REASONS[row.expected]
    codes = [d.code for d in package.diagnostics if d.ref == ref]
    assert codes == [row.expected], [(d.code, d.message) for d in package.diagnostics]
    diagnostic = next(d for d in package.diagnostics if d.ref == ref)
    assert row.file in diagnostic.message, "the message names the file"
