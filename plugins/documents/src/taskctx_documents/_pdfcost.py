"""What pypdf may cost while the PDF handler extracts text, and the checks that bound it.

pypdf 7 bounds a lot itself, configured per call through ``pypdf.apply_configuration``
(a context variable, so other pypdf users in the process are untouched): the output of
every decode filter, array and dictionary sizes, tokens per content stream, page-tree
depth and entries, form invocations per page. What it does not bound, and this module
does:

- :func:`pypdf_configuration`: each decoded stream to ``pdf_max_stream_bytes`` (pypdf's
  default is 75 MB) and the page tree to what ``max_pages`` needs;
- :class:`StreamCharges`: pypdf keeps every stream it decodes for the life of the
  reader, so the streams text extraction reads (object streams, page contents, form
  XObjects and their resources, fonts' ToUnicode, encodings and font files) are
  decoded once, before the page that needs them, and their decoded bytes held to
  ``pdf_max_decoded_bytes`` for the document, each stream counted once;
- :class:`PageWatch`: a page's extraction runs with pypdf's operator visitor, which
  checks the clock at every content operator and stops the page once its text would
  pass ``max_text_chars``. pypdf swallows errors raised while it extracts a form
  XObject, so the first error is kept and raised again at the next operator, and
  after the page.
"""

from __future__ import annotations

from typing import Any

from pypdf import Configuration, PageObject, PdfReader, get_configuration
from pypdf.errors import LimitReachedError
from pypdf.generic import ArrayObject, DictionaryObject, IndirectObject, StreamObject

from taskctx.codes import ProblemCode
from taskctx.errors import MediaError
from taskctx_documents._boundary import describe
from taskctx_documents._text import TextBudget
from taskctx_documents.limits import Deadline, DocumentLimits, over_limit

__all__ = ["PageWatch", "StreamCharges", "pypdf_configuration"]

_FONT_FILES = ("/FontFile", "/FontFile2", "/FontFile3")
_STREAM_LIMITS = (
    "zlib_maximum_output_length",
    "lzw_maximum_output_length",
    "run_length_maximum_output_length",
    "brotli_maximum_output_length",
    "jbig2_maximum_output_length",
    "array_based_stream_maximum_output_length",
)


def pypdf_configuration(limits: DocumentLimits) -> Configuration:
    """The current pypdf configuration, tightened for a parse under ``limits`` (a value
    the caller set lower stays lower)."""
    ours = dict.fromkeys(_STREAM_LIMITS, limits.pdf_max_stream_bytes)
    ours["stream_decoding_work_maximum_length"] = 2 * limits.pdf_max_stream_bytes
    ours["page_tree_maximum_entries"] = 2 * limits.max_pages + 1_000
    current = get_configuration()
    lower = {name: min(value, getattr(current, name)) for name, value in ours.items()}
    return current.with_overwrites(**lower)


def _key(value: Any) -> object:
    """Identity of a PDF object: its object number when indirect, else the Python object."""
    if isinstance(value, IndirectObject):
        return (value.idnum, value.generation)
    reference = getattr(value, "indirect_reference", None)
    if isinstance(reference, IndirectObject):
        return (reference.idnum, reference.generation)
    return id(value)


def _resolve(value: Any) -> Any:
    return value.get_object() if isinstance(value, IndirectObject) else value


class StreamCharges:
    """Decoded bytes of the streams text extraction reads, each stream charged once."""

    __slots__ = ("_deadline", "_limit", "_path", "_seen", "_total")

    def __init__(self, limits: DocumentLimits, path: str, deadline: Deadline) -> None:
        self._limit = limits.pdf_max_decoded_bytes
        self._path = path
        self._deadline = deadline
        self._seen: set[object] = set()
        self._total = 0

    def object_streams(self, reader: PdfReader) -> None:
        """Charge the object streams the cross-reference table names (pypdf keeps them
        decoded once an object in them is read)."""
        for number in sorted({stream for stream, _ in reader.xref_objStm.values()}):
            self._charge(IndirectObject(number, 0, reader), "the object streams")

    def page(self, page: PageObject, where: str) -> None:
        """Charge what extracting ``page`` (``page 3 of 40``) decodes."""
        contents = page.get("/Contents")
        resolved = _resolve(contents)
        if isinstance(resolved, ArrayObject):
            for item in resolved:
                self._charge(item, where)
        else:
            self._charge(contents, where)
        pending = [page.get("/Resources")]
        while pending:
            value = pending.pop()
            key = _key(value)
            resources = _resolve(value)
            if key in self._seen or not isinstance(resources, DictionaryObject):
                continue
            self._seen.add(key)
            fonts = _resolve(resources.get("/Font"))
            if isinstance(fonts, DictionaryObject):
                for font in fonts.values():
                    self._font(font, where)
            xobjects = _resolve(resources.get("/XObject"))
            if isinstance(xobjects, DictionaryObject):
                for reference in xobjects.values():
                    form = _resolve(reference)
                    if isinstance(form, StreamObject) and form.get("/Subtype") == "/Form":
                        self._charge(reference, where)
                        pending.append(form.get("/Resources"))

    def _font(self, value: Any, where: str) -> None:
        key = _key(value)
        font = _resolve(value)
        if key in self._seen or not isinstance(font, DictionaryObject):
            return
        self._seen.add(key)
        self._charge(font.get("/ToUnicode"), where)
        self._charge(font.get("/Encoding"), where)
        descriptors = [font.get("/FontDescriptor")]
        descendants = _resolve(font.get("/DescendantFonts"))
        if isinstance(descendants, ArrayObject):
            for descendant in descendants:
                descendant = _resolve(descendant)
                if isinstance(descendant, DictionaryObject):
                    descriptors.append(descendant.get("/FontDescriptor"))
        for descriptor in descriptors:
            descriptor = _resolve(descriptor)
            if isinstance(descriptor, DictionaryObject):
                for name in _FONT_FILES:
                    self._charge(descriptor.get(name), where)

    def _charge(self, value: Any, where: str) -> None:
        if value is None:
            return
        key = _key(value)
        if key in self._seen:
            return
        self._seen.add(key)
        try:
            stream = _resolve(value)
            if not isinstance(stream, StreamObject):
                return
            size = len(stream.get_data())
        except (LimitReachedError, MediaError):
            raise
        except Exception:  # a broken stream: pypdf's extraction reports (or skips) it
            return
        self._total += size
        if self._total > self._limit:
            raise over_limit(
                self._path,
                f"more than {self._limit:,} bytes of decoded PDF streams (stopped at {where})",
                "pdf_max_decoded_bytes",
                self._limit,
            )
        self._deadline.check(where)


class PageWatch:
    """Extracts one page's text under the clock and the text budget."""

    __slots__ = ("_budget", "_deadline", "_error", "_operators", "_pending", "_where")

    def __init__(self, deadline: Deadline, budget: TextBudget) -> None:
        self._deadline = deadline
        self._budget = budget
        self._error: MediaError | None = None
        self._operators = 0
        self._pending = 0
        self._where = ""

    def extract(self, page: PageObject, where: str, path: str) -> str:
        """The text of ``page``; ``timeout``/``too_large`` once past a limit."""
        self._where = where
        self._operators = 0
        self._pending = 0
        try:
            text: str = page.extract_text(
                visitor_operand_before=self._operator, visitor_text=self._text
            )
        except (MediaError, LimitReachedError):
            raise
        except Exception as exc:
            if self._error is not None:
                raise self._error from None
            raise MediaError(
                f"{path}: cannot extract the text of {where}: {describe(exc)}",
                code=ProblemCode.PARSE_FAILED,
            ) from exc
        if self._error is not None:  # raised inside a form, where pypdf swallows errors
            raise self._error
        self._budget.charge(len(text), where)
        return text

    def _operator(self, *_: object) -> None:
        if self._error is not None:
            raise self._error
        self._operators += 1
        try:
            self._deadline.check(self._place)
        except MediaError as exc:
            self._error = exc
            raise

    def _text(self, text: str, *_: object) -> None:
        if self._error is not None:
            raise self._error
        self._pending += len(text)
        if self._pending > self._budget.remaining:
            try:
                self._budget.exhausted(self._where)
            except MediaError as exc:
                self._error = exc
                raise

    def _place(self) -> str:
        return f"content operator {self._operators:,} of {self._where}"
