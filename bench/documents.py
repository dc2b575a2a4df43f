"""Document parsing cost on the eval documents: raw library, handler, first and cached read.

For every document of ``../shared/eval/docs`` with a FileIOHandler (PDF, DOCX, XLSX/XLSM,
PPTX/PPTM), per document (median of ``rounds``):

- ``raw``: the plain library doing the equivalent extraction on the same bytes;
- ``handler``: our handler's ``parse(data, path)`` alone;
- ``first_read``: ``TaskWorkspace.read_file`` on a fresh workspace (parse and cache write);
- ``cached_read``: a second ``read_file`` on the same TaskWorkspace (digest and parse cache).
- ``cached_read_new_workspace``: ``read_file`` on a new TaskWorkspace over the same folder
  (reported, not a target: it also pays for opening the workspace's digest database).

Targets (issue 3, "make demo and bench"): parsing adds at most 10 % to the raw library
(handler/raw <= 1.10) and a cached re-read is at least 20x faster than the first.
"""

from __future__ import annotations

import gc
import io
import logging
import shutil
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any

import docx
import openpyxl
import pptx
import pypdf
import taskctx_documents.plugin as documents_plugin
from taskctx_workspace.workspace import HEAD_BYTES, TaskWorkspace

from bench.common import result_header, skipped_result, summarize
from bench.evaldata import docs_dir
from taskctx import PluginHost
from taskctx.errors import MediaError
from taskctx.media import classify
from taskctx.model import Representation
from taskctx.protocols import FileIOHandler, ParsedDocument

__all__ = [
    "DEFAULT_DOCS_DIR",
    "DESCRIPTION",
    "FULL",
    "MAX_PARSE_RATIO",
    "MIN_CACHE_SPEEDUP",
    "NAME",
    "QUICK",
    "RAW_EXTRACTORS",
    "DocumentsParams",
    "run",
    "run_documents",
    "summary_lines",
]

NAME = "documents"
DESCRIPTION = "eval documents: raw library vs handler parse, first vs cached read_file"
MAX_PARSE_RATIO = 1.10
MIN_CACHE_SPEEDUP = 20.0
DEFAULT_DOCS_DIR = docs_dir()
"""The 80 documents (:func:`bench.evaldata.docs_dir`; never part of the repository)."""
QUICK_KINDS = ("pdf", "docx", "xlsx", "pptx", "pdf")
"""Formats of the quick selection, one document each (the one nearest 20 KB)."""
QUICK_NEAR_BYTES = 20_000
NOISY_LOGGERS = ("pypdf",)
"""Loggers set to ERROR during the run (both raw and handler runs would log alike)."""
PHASES = ("raw", "handler", "first_read", "cached_read", "cached_read_new_workspace")


@dataclass(frozen=True)
class DocumentsParams:
    """Rounds and document selection of one documents benchmark run."""

    rounds: int = 3
    quick_selection: bool = False
    """Only :data:`QUICK_KINDS`, one document each (the one nearest 20 KB)."""


FULL = DocumentsParams()
QUICK = DocumentsParams(rounds=1, quick_selection=True)

NOTES = (
    "Host: PluginHost(allow=[]) with taskctx_documents.plugin registered in-process "
    "(host.register(module, name='documents')); the handler timed in 'handler' is the one "
    "the TaskWorkspace picks for the file.",
    "Every document is copied into a temp workspace folder (never into the repo). Each "
    "round, per document, in this order: raw, handler, first_read, cached_read, "
    "cached_read_new_workspace; the "
    "median of the rounds is reported (min/max kept). Per document: gc.collect(), then one "
    "untimed settling round of all phases, then the timed rounds; the collector stays "
    "enabled. (A gc.collect() right before each phase would add about 0.5 ms of cold-cache "
    "cost to every phase: fivefold the ~0.1 ms of a cached read.)",
    "first_read: the workspace's .taskctx/ is deleted, a new TaskWorkspace is made "
    "(untimed) and read_file(path) is timed: head, classify, stamp digest (sha256 once), "
    "parse, JSON cache write. cached_read: read_file again on the same workspace: head, "
    "classify, stamp-digest lookup, JSON cache load and validation (the target). "
    "cached_read_new_workspace: the same on a new TaskWorkspace object, which also opens "
    "the digest database (reported only).",
    "raw baselines on the same bytes: pypdf PdfReader (decrypt('') when encrypted, as the "
    "handler does) and page.extract_text() for each page; python-docx Document paragraphs "
    "text then every table's rows' cells text; openpyxl load_workbook(read_only=True, "
    "data_only=True), every worksheet's reset_dimensions() then iter_rows(values_only=True) "
    "joined as text; python-pptx every slide's shapes with a text frame plus the notes "
    "text frame.",
    "handler/raw compares CPU time (time.process_time, medians of the rounds): both sides "
    "are single-threaded CPU work in this process, and on a shared machine wall time also "
    "counts other processes' turns; the wall-time ratio is reported beside it "
    "(handler_over_raw_wall). first/cached compares wall time (a cached read waits on I/O).",
    "The raw XLSX baseline calls reset_dimensions() (the library's documented remedy for "
    "wrong declared dimensions, which the handler also uses): without it "
    "calamine__issue_174.xlsx (declares A1:XFD1048576) takes minutes in plain openpyxl.",
    "What the handlers do beyond the raw baselines (all inside 'handler'): for OOXML, a ZIP "
    "central directory check (bomb guard, OLE/encryption sniffing), then every member "
    "inflated once in chunks (held to its declared size) and every XML part pre-scanned by "
    "expat (elements, depth, entities, worksheet rows); for PDF, a tightened pypdf "
    "configuration, the streams each page reads decoded and charged before it, and the "
    "clock and the text budget checked at every content operator; DOCX: body XML walked "
    "in document order with text boxes, content controls, fields, tracked insertions and "
    "OMML equations, heading levels from every style, headers and footers; PPTX: tables, "
    "grouped shapes and slide titles; all: warnings recorded, text cleaned, exact section "
    "offsets, ParsedDocument validation. Per document, chars_raw and chars_handler show "
    "where the handler extracts more (or less) text.",
    "Ratio aggregates: handler/raw over documents the raw library extracts without error "
    "and the handler parses or reports no_text (both did the full extraction); total = "
    "sum of medians / sum of medians, median = median of per-document ratios. "
    "first/cached over documents read_file delivers as parsed text. Excluded documents "
    "are listed with the reason.",
    f"Loggers {', '.join(NOISY_LOGGERS)} are set to ERROR during the run (pypdf logs "
    "warnings for malformed files in raw and handler runs alike).",
    "Targets are judged on full runs only (targets.met null with --quick).",
)


# -- raw library baselines -----------------------------------------------------------------


def _raw_pdf(data: bytes) -> int:
    reader = pypdf.PdfReader(io.BytesIO(data))
    if reader.is_encrypted:
        reader.decrypt("")
    return sum(len(page.extract_text()) for page in reader.pages)


def _raw_docx(data: bytes) -> int:
    document = docx.Document(io.BytesIO(data))
    parts = [paragraph.text for paragraph in document.paragraphs]
    for table in document.tables:
        for row in table.rows:
            parts.append("\t".join(cell.text for cell in row.cells))
    return len("\n".join(parts))


def _raw_xlsx(data: bytes) -> int:
    workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    chars = 0
    try:
        for sheet in workbook.worksheets:
            reset = getattr(sheet, "reset_dimensions", None)
            if callable(reset):
                reset()
            for row in sheet.iter_rows(values_only=True):
                chars += len("\t".join("" if value is None else str(value) for value in row))
    finally:
        workbook.close()
    return chars


def _raw_pptx(data: bytes) -> int:
    presentation = pptx.Presentation(io.BytesIO(data))
    parts: list[str] = []
    for slide in presentation.slides:
        for shape in slide.shapes:
            if shape.has_text_frame:
                parts.append(shape.text_frame.text)
        if slide.has_notes_slide:
            frame = slide.notes_slide.notes_text_frame
            if frame is not None:
                parts.append(frame.text)
    return len("\n".join(parts))


RAW_EXTRACTORS: dict[str, Callable[[bytes], int]] = {
    "pdf": _raw_pdf,
    "docx": _raw_docx,
    "xlsx": _raw_xlsx,
    "pptx": _raw_pptx,
}
"""Raw extraction by handler name; each returns the characters it extracted."""


# -- selection -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Document:
    name: str
    data: bytes
    handler: FileIOHandler
    media_type: str


def _handled(docs_dir: Path, workspace: TaskWorkspace) -> tuple[list[_Document], list[str]]:
    """Top-level files of ``docs_dir`` with a handler (sorted), and the names without one."""
    found: list[_Document] = []
    unhandled: list[str] = []
    for path in sorted(p for p in docs_dir.iterdir() if p.is_file()):
        if path.name == "MANIFEST.tsv":
            continue
        data = path.read_bytes()
        media_type = classify(path.name, head=data[:HEAD_BYTES]).media_type
        handler = workspace.file_io_handler_for(path.name, media_type)
        if handler is None or handler.name not in RAW_EXTRACTORS:
            unhandled.append(path.name)
            continue
        found.append(_Document(path.name, data, handler, media_type))
    return found, unhandled


def _nearness(document: _Document) -> tuple[int, str]:
    return abs(len(document.data) - QUICK_NEAR_BYTES), document.name


def _quick(documents: Sequence[_Document]) -> list[_Document]:
    """For each of :data:`QUICK_KINDS`, the unpicked document nearest 20 KB."""
    chosen: list[_Document] = []
    for kind in QUICK_KINDS:
        candidates = [d for d in documents if d.handler.name == kind and d not in chosen]
        if candidates:
            chosen.append(min(candidates, key=_nearness))
    return chosen


# -- measuring -------------------------------------------------------------------------------


def _describe(exc: BaseException) -> str:
    message = " ".join(str(exc).split())[:200]
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _timed(action: Callable[[], Any]) -> tuple[float, float, Any, BaseException | None]:
    """Run ``action``; its wall and CPU time, result and exception (the collector stays on)."""
    start, start_cpu = time.perf_counter(), time.process_time()
    try:
        result = action()
    except Exception as exc:
        return time.perf_counter() - start, time.process_time() - start_cpu, None, exc
    return time.perf_counter() - start, time.process_time() - start_cpu, result, None


def _raw(document: _Document) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return RAW_EXTRACTORS[document.handler.name](document.data)


@contextmanager
def _quiet_loggers() -> Iterator[None]:
    levels = {name: logging.getLogger(name).level for name in NOISY_LOGGERS}
    for name in levels:
        logging.getLogger(name).setLevel(logging.ERROR)
    try:
        yield
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)


def _measure(document: _Document, root: Path, host: PluginHost, rounds: int) -> dict[str, Any]:
    """Every phase of one document, ``rounds`` times; one JSON-safe row."""
    samples: dict[str, list[float]] = {phase: [] for phase in PHASES}
    cpu: dict[str, list[float]] = {phase: [] for phase in PHASES}
    raw_error: str | None = None
    raw_chars: int | None = None
    outcome = "parsed"
    handler_text: str | None = None
    handler_error: str | None = None
    first_repr = cached_repr = None
    first_text = cached_text = None
    cached_parses = 0
    gc.collect()
    for number in range(rounds + 1):  # round 0 settles: imports, caches, post-collect state
        if number == 1:
            samples = {phase: [] for phase in PHASES}
            cpu = {phase: [] for phase in PHASES}
        seconds, cpu_seconds, chars, exc = _timed(lambda: _raw(document))
        samples["raw"].append(seconds)
        cpu["raw"].append(cpu_seconds)
        raw_error, raw_chars = (_describe(exc), None) if exc else (None, chars)

        seconds, cpu_seconds, parsed, exc = _timed(
            lambda: document.handler.parse(document.data, document.name)
        )
        samples["handler"].append(seconds)
        cpu["handler"].append(cpu_seconds)
        if isinstance(exc, MediaError):
            outcome, handler_text, handler_error = exc.code, None, _describe(exc)
        elif exc is not None:
            outcome, handler_text, handler_error = "uncaught", None, _describe(exc)
        else:
            assert isinstance(parsed, ParsedDocument)
            outcome, handler_text, handler_error = "parsed", parsed.text, None

        shutil.rmtree(root / ".taskctx", ignore_errors=True)
        first = TaskWorkspace(root, host=host)
        seconds, cpu_seconds, result, exc = _timed(partial(first.read_file, document.name))
        if exc is not None:
            raise RuntimeError(f"read_file({document.name!r}) raised {_describe(exc)}") from exc
        samples["first_read"].append(seconds)
        cpu["first_read"].append(cpu_seconds)
        first_repr, first_text = result.representation, result.text

        parses_before = first.parse_count
        seconds, cpu_seconds, result, exc = _timed(partial(first.read_file, document.name))
        cached_parses += first.parse_count - parses_before
        first.close()
        if exc is not None:
            raise RuntimeError(f"read_file({document.name!r}) raised {_describe(exc)}") from exc
        samples["cached_read"].append(seconds)
        cpu["cached_read"].append(cpu_seconds)
        cached_repr, cached_text = result.representation, result.text

        reopened = TaskWorkspace(root, host=host)
        seconds, cpu_seconds, result, exc = _timed(partial(reopened.read_file, document.name))
        cached_parses += reopened.parse_count
        reopened.close()
        if exc is not None:
            raise RuntimeError(f"read_file({document.name!r}) raised {_describe(exc)}") from exc
        samples["cached_read_new_workspace"].append(seconds)
        cpu["cached_read_new_workspace"].append(cpu_seconds)
    timings = {
        phase: {**summarize(values), "cpu_median_s": statistics.median(cpu[phase])}
        for phase, values in samples.items()
    }
    medians = {phase: timings[phase]["median_s"] for phase in PHASES}
    cpu_medians = {phase: timings[phase]["cpu_median_s"] for phase in PHASES}
    delivered = first_repr == Representation.PARSED_TEXT
    return {
        "document": document.name,
        "format": document.handler.name,
        "bytes": len(document.data),
        "media_type": document.media_type,
        "raw_ok": raw_error is None,
        "raw_error": raw_error,
        "handler_outcome": outcome,
        "handler_error": handler_error,
        "chars_raw": raw_chars,
        "chars_handler": len(handler_text) if handler_text is not None else None,
        "read_representation": str(first_repr.value if first_repr else None),
        "timings": timings,
        "handler_over_raw": cpu_medians["handler"] / cpu_medians["raw"],
        "handler_over_raw_wall": medians["handler"] / medians["raw"],
        "first_over_cached": medians["first_read"] / medians["cached_read"],
        "first_read_over_handler": medians["first_read"] / medians["handler"],
        "checks": {
            "cached_read_did_not_parse": cached_parses == 0,
            "cached_matches_first": cached_repr == first_repr and cached_text == first_text,
            "read_matches_handler": (not delivered) or first_text == handler_text,
            "no_uncaught_handler_error": outcome != "uncaught",
        },
    }


# -- aggregates ------------------------------------------------------------------------------


def _aggregate(
    rows: Sequence[dict[str, Any]],
    upper: str,
    lower: str,
    ok: Callable[[float], bool],
    clock: str = "median_s",
) -> dict[str, Any]:
    """Total (sum over sum) and median of per-document ``upper``/``lower`` median ratios.

    ``clock`` names the timing compared (``median_s`` wall, ``cpu_median_s`` CPU time);
    ``documents_meeting`` counts the documents whose own ratio satisfies ``ok``.
    """
    if not rows:
        return {"documents": 0, "total_ratio": None, "median_ratio": None, "clock": clock}
    ups = [row["timings"][upper][clock] for row in rows]
    downs = [row["timings"][lower][clock] for row in rows]
    pairs = zip(ups, downs, rows, strict=True)
    ratios = sorted(((u / d, row["document"]) for u, d, row in pairs), key=lambda item: item[0])
    return {
        "documents": len(rows),
        "clock": clock,
        "total_s": {upper: sum(ups), lower: sum(downs)},
        "total_ratio": sum(ups) / sum(downs),
        "median_ratio": statistics.median(r for r, _ in ratios),
        "documents_meeting": sum(1 for r, _ in ratios if ok(r)),
        "min": {"ratio": ratios[0][0], "document": ratios[0][1]},
        "max": {"ratio": ratios[-1][0], "document": ratios[-1][1]},
    }


def _judge(
    aggregate: dict[str, Any], ok: Callable[[float], bool], quick: bool
) -> dict[str, bool | None]:
    """Whether the total and the median ratio each meet the target (None when not judged)."""
    return {
        key: None if quick or aggregate[f"{key}_ratio"] is None else ok(aggregate[f"{key}_ratio"])
        for key in ("total", "median")
    }


def _parse_ok(ratio: float) -> bool:
    return ratio <= MAX_PARSE_RATIO


def _cache_ok(ratio: float) -> bool:
    return ratio >= MIN_CACHE_SPEEDUP


def _skipped(docs_dir: Path, quick: bool, reason: str) -> dict[str, Any]:
    params = {"docs_dir": str(docs_dir)}
    return skipped_result(NAME, quick=quick, params=params, notes=NOTES, reason=reason)


def run_documents(
    params: DocumentsParams, *, docs_dir: Path | None = None, quick: bool = False
) -> dict[str, Any]:
    """Measure every handled document of ``docs_dir`` (default: the eval folder).

    A missing folder gives a result with ``skipped: true`` and the reason, not an error.
    """
    folder = DEFAULT_DOCS_DIR if docs_dir is None else Path(docs_dir)
    if not folder.is_dir():
        return _skipped(folder, quick, f"eval documents folder {str(folder)!r} is absent")
    host = PluginHost(allow=[])
    host.register(documents_plugin, name="documents")
    with tempfile.TemporaryDirectory(prefix="taskctx-bench-docs-") as temp, _quiet_loggers():
        root = Path(temp) / "workspace"
        root.mkdir()
        with TaskWorkspace(root, host=host) as workspace:
            documents, unhandled = _handled(folder, workspace)
        if params.quick_selection:
            documents = _quick(documents)
        if not documents:
            return _skipped(folder, quick, f"no document with a handler in {str(folder)!r}")
        for document in documents:
            (root / document.name).write_bytes(document.data)
        rows = [_measure(document, root, host, params.rounds) for document in documents]
    parse_rows = [r for r in rows if r["raw_ok"] and r["handler_outcome"] in ("parsed", "no_text")]
    read_rows = [r for r in rows if r["read_representation"] == Representation.PARSED_TEXT.value]
    excluded_parse = [
        {
            "document": r["document"],
            "reason": (
                f"raw library failed: {r['raw_error']}"
                if not r["raw_ok"]
                else f"handler refused ({r['handler_outcome']}): {r['handler_error']}"
            ),
        }
        for r in rows
        if r not in parse_rows
    ]
    excluded_read = [
        {"document": r["document"], "reason": f"read_file: {r['read_representation']}"}
        for r in rows
        if r not in read_rows
    ]
    handler_more = [
        {
            "document": r["document"],
            "chars_raw": r["chars_raw"],
            "chars_handler": r["chars_handler"],
        }
        for r in parse_rows
        if r["chars_handler"] is not None
        and r["chars_raw"] is not None
        and r["chars_handler"] > 1.05 * r["chars_raw"] + 10
    ]
    parse = _aggregate(parse_rows, "handler", "raw", _parse_ok, clock="cpu_median_s")
    parse_wall = _aggregate(parse_rows, "handler", "raw", _parse_ok)
    cache = _aggregate(read_rows, "first_read", "cached_read", _cache_ok)
    parse_met = _judge(parse, _parse_ok, quick)
    cache_met = _judge(cache, _cache_ok, quick)
    verdicts = [*parse_met.values(), *cache_met.values()]
    checks = {name: all(r["checks"][name] for r in rows) for name in rows[0]["checks"]}
    return {
        **result_header(
            NAME,
            quick=quick,
            params={
                **asdict(params),
                "docs_dir": str(folder),
                "documents": len(rows),
                "without_handler": unhandled,
                "host": "PluginHost(allow=[]) + taskctx_documents.plugin registered in-process",
                "libraries": {
                    "pypdf": pypdf.__version__,
                    "python-docx": docx.__version__,
                    "openpyxl": openpyxl.__version__,
                    "python-pptx": pptx.__version__,
                },
            },
            notes=NOTES,
        ),
        "skipped": False,
        "aggregates": {
            "handler_over_raw": parse,
            "handler_over_raw_wall": parse_wall,
            "first_over_cached": cache,
        },
        "excluded": {"handler_over_raw": excluded_parse, "first_over_cached": excluded_read},
        "handler_extracts_more": handler_more,
        "targets": {
            "max_handler_over_raw": MAX_PARSE_RATIO,
            "min_first_over_cached": MIN_CACHE_SPEEDUP,
            "handler_over_raw": parse_met,
            "first_over_cached": cache_met,
            "applies": not quick,
            "met": None if quick else all(verdicts),
        },
        "checks": checks,
        "documents": rows,
    }


def run(quick: bool) -> dict[str, Any]:
    """The registry entry point: every document, or ``QUICK`` (5 documents, 1 round)."""
    return run_documents(QUICK if quick else FULL, quick=quick)


def _verdict(met: bool | None) -> str:
    return "not judged (quick)" if met is None else "met" if met else "MISSED"


def summary_lines(result: dict[str, Any]) -> list[str]:
    """A few lines for humans: aggregates against the targets, the extreme documents."""
    if result.get("skipped"):
        return [f"skipped: {result['reason']}"]
    params, aggregates, targets = result["params"], result["aggregates"], result["targets"]
    parse, cache = aggregates["handler_over_raw"], aggregates["first_over_cached"]
    lines = [f"{params['documents']} documents, {params['rounds']} round(s); medians"]
    if parse["documents"]:
        met = targets["handler_over_raw"]
        lines.append(
            f"handler/raw (CPU time), {parse['documents']} docs, target <= {MAX_PARSE_RATIO:.2f}: "
            f"total "
            f"{parse['total_ratio']:.3f} ({_verdict(met['total'])}), median "
            f"{parse['median_ratio']:.3f} ({_verdict(met['median'])}); "
            f"{parse['documents_meeting']} docs within; max {parse['max']['ratio']:.2f} "
            f"{parse['max']['document']}"
        )
    if cache["documents"]:
        met = targets["first_over_cached"]
        lines.append(
            f"first/cached, {cache['documents']} docs, target >= {MIN_CACHE_SPEEDUP:.0f}x: total "
            f"{cache['total_ratio']:.1f}x ({_verdict(met['total'])}), median "
            f"{cache['median_ratio']:.1f}x ({_verdict(met['median'])}); "
            f"{cache['documents_meeting']} docs at or above; min {cache['min']['ratio']:.1f}x "
            f"{cache['min']['document']}"
        )
    for key, label in (("handler_over_raw", "handler/raw"), ("first_over_cached", "first/cached")):
        excluded = result["excluded"][key]
        if excluded:
            lines.append(f"excluded from {label}: {len(excluded)} (reasons in the JSON)")
    failed = [name for name, ok in result["checks"].items() if not ok]
    if failed:
        lines.append(f"CHECKS FAILED: {', '.join(failed)}")
    return lines
