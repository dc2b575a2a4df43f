"""The handlers against the shared eval set of 80 real documents (``shared/eval/docs``).

Every document whose suffix has a handler must parse within 30 s of CPU time and raise
nothing but MediaError. The handlers' wall-clock limit is raised for this test, so a busy
machine cannot turn a document into a ``timeout``; what a parse costs is the CPU time. The
general rule, from the manifest: a non-empty ``expected_snippet`` must appear in the
whitespace-normalised text, unless the file needs a password (``encrypted``); with no
snippet, the plain library either failed (``parse_failed``) or found nothing (``no_text``).
Where our result legitimately differs from the plain library's, :data:`DIFFERS` says how and
why, file by file.
"""

from __future__ import annotations

import csv
import time
from typing import NamedTuple

import pytest
from taskctx_documents import DocumentLimits, default_handlers

from bench.evaldata import docs_dir, missing_reason
from taskctx.errors import MediaError
from taskctx.media import clean_text
from tests.plugins.documents.helpers import words

EVAL_DOCS = docs_dir()
"""The 80 documents (:func:`bench.evaldata.docs_dir`)."""
MANIFEST = EVAL_DOCS / "MANIFEST.tsv"
MAX_SECONDS = 30.0
"""CPU time one document may take."""
WALL_LIMIT_S = 600.0
HANDLERS = {
    suffix: handler
    for handler in default_handlers(DocumentLimits(max_seconds=WALL_LIMIT_S))
    for suffix in handler.suffixes
}

NEEDS_PASSWORD: dict[str, str] = {
    "calamine__pass_protected.xlsx": "OLE container with EncryptionInfo; password not recorded",
    "msoffcrypto__ecma376standard_password.docx": "ECMA-376 standard encryption",
    "msoffcrypto__example_password.docx": "ECMA-376 agile encryption",
    "msoffcrypto__example_password.xlsx": "ECMA-376 agile encryption",
    "pdfsamples__libreoffice-writer-password.pdf": "RC4 user password 'openpassword'",
    "pypdf__r4-aes-user-password.pdf": "AES-128 user password; decrypt('') fails",
}
"""Files flagged ``encrypted`` that the empty password does not open: ``encrypted``."""

OPENS_WITH_EMPTY_PASSWORD: dict[str, str] = {
    "pypdf__r6-user-password.pdf": "AES-256 with an empty owner password",
    "pypdf__encrypted_doc_no_id.pdf": "empty user password (trailer lacks /ID)",
    "textract__ocr_text.pdf": "empty user password",
}
"""Files flagged ``encrypted`` that open with the empty password and follow the general rule."""


class Difference(NamedTuple):
    """How our result differs from the plain library's, and why."""

    outcome: str  # "parsed" or a MediaError code
    snippet: str | None
    reason: str


DIFFERS: dict[str, Difference] = {
    "markitdown__equations.docx": Difference(
        "parsed",
        "The angle is θ=sin-1\u20612.2×10-4=2.2×10-4rad. From Eq. 36.1.3,",
        "we read OMML equations, which python-docx's paragraph text drops; the manifest "
        "snippet 'For , The angle is . From Eq. 36.1.3,' has gaps where they stand",
    ),
    "pydocx__blk-paras-and-tables.docx": Difference(
        "parsed",
        "adipiscing elit. Text before Table Between Text after Donec semper facilisis",
        "tables sit where they are in the body; the manifest snippet joins two paragraphs "
        "that a table (with a nested table) separates",
    ),
    "textract__paragraphs_and_tables.docx": Difference(
        "parsed",
        "Inner 2,1 Inner 1,2 This is the paragraph after the table. It should appear last.",
        "body order again: the manifest's paragraphs-then-tables walk puts the table last",
    ),
    "pdfsamples__GeoTopo-komprimiert.pdf": Difference(
        "parsed",
        "SIMPLIZIALKOMPLEX Beweis: n ist die konvexe Hülle von",
        "the manifest snippet holds U+0001 from pypdf's raw output; parsed text drops "
        "control characters (DESIGN: parsed text keeps only newlines and tabs)",
    ),
    "calamine__strict_iso_paths.xlsx": Difference(
        "parse_failed",
        None,
        "a Strict OOXML workbook with a real worksheet: openpyxl silently sees 0 sheets; "
        "no_text would claim the workbook is empty, so we report that we cannot read it",
    ),
}


class Case(NamedTuple):
    """One manifest row with a handler for its suffix."""

    file: str
    flags: frozenset[str]
    parse_result: str
    snippet: str


def _cases() -> list[Case]:
    if not MANIFEST.is_file():
        return []
    with MANIFEST.open(encoding="utf-8", newline="") as stream:
        rows = list(csv.DictReader(stream, delimiter="\t"))
    return [
        Case(
            file=row["file"],
            flags=frozenset(row["flags"].split(";")),
            parse_result=row["parse_result"],
            snippet=row["expected_snippet"],
        )
        for row in rows
        if "/" not in row["file"] and row["file"].rsplit(".", 1)[-1].lower() in HANDLERS
    ]


CASES = _cases()


def _expected(case: Case) -> tuple[str, str | None]:
    """(``parsed`` or a MediaError code, snippet) for ``case``."""
    if case.file in DIFFERS:
        difference = DIFFERS[case.file]
        return difference.outcome, difference.snippet
    if case.file in NEEDS_PASSWORD:
        return "encrypted", None
    if case.snippet.strip():
        return "parsed", case.snippet
    if case.parse_result.startswith("ERROR"):
        return "parse_failed", None
    assert case.parse_result.startswith("ok"), case.parse_result
    return "no_text", None


def _require_eval_set() -> None:
    if not CASES:
        pytest.skip(missing_reason(EVAL_DOCS))


def test_encrypted_files_are_all_classified() -> None:
    """Every file flagged ``encrypted`` is in exactly one of the two password tables."""
    _require_eval_set()
    flagged = {case.file for case in CASES if "encrypted" in case.flags}
    assert flagged == set(NEEDS_PASSWORD) | set(OPENS_WITH_EMPTY_PASSWORD)
    assert not set(NEEDS_PASSWORD) & set(OPENS_WITH_EMPTY_PASSWORD)


def test_documented_differences_are_in_the_set() -> None:
    """The exceptions table names only files of the eval set."""
    _require_eval_set()
    assert set(DIFFERS) <= {case.file for case in CASES}


@pytest.mark.parametrize(
    "case",
    [pytest.param(case, id=case.file) for case in CASES] or [pytest.param(None, id="absent")],
)
def test_eval_document(case: Case | None) -> None:
    """The document parses to the expected text or fails with the fitting code, in time."""
    _require_eval_set()
    assert case is not None
    expected, snippet = _expected(case)
    data = (EVAL_DOCS / case.file).read_bytes()
    handler = HANDLERS[case.file.rsplit(".", 1)[-1].lower()]
    started = time.thread_time()
    if expected != "parsed":
        with pytest.raises(MediaError) as caught:
            handler.parse(data, case.file)
        elapsed = time.thread_time() - started
        assert elapsed < MAX_SECONDS, f"took {elapsed:.1f} s of CPU"
        assert caught.value.code == expected, f"{caught.value.code}: {caught.value}"
        assert case.file in str(caught.value), "the message names the file"
        return
    parsed = handler.parse(data, case.file)
    elapsed = time.thread_time() - started
    assert elapsed < MAX_SECONDS, f"took {elapsed:.1f} s of CPU"
    assert snippet is not None
    assert words(snippet) in words(parsed.text)
    assert clean_text(parsed.text) == parsed.text
    previous_end = 0
    for section in parsed.sections:
        assert section.start is not None
        assert section.end is not None
        assert previous_end <= section.start <= section.end <= len(parsed.text)
        assert section.chars == section.end - section.start
        previous_end = section.end
