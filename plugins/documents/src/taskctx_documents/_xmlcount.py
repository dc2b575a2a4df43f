"""Which XML parts need expat's full pre-scan, and the fast count for all the others.

The full scan (:class:`~taskctx_documents._xmlscan.PartScan`) costs a Python callback
per element: as much as python-docx spends parsing a small document. Most parts do not
need it. Their library parses them with libxml2 (python-docx, python-pptx, and openpyxl
for everything but worksheets and shared strings), which refuses nesting deeper than 256
levels and entity amplification itself; what it does not bound is the number of
elements. That number is bounded from above, at the speed of ``bytes.count``, by the
``<`` that do not open an end tag: every element has a start tag or an empty-element
tag, and ``<`` stands for nothing else in well-formed XML outside comments, CDATA and
processing instructions (which only add to the bound).

The bound is sound only when ``<`` is the byte 0x3C and no entity can expand into
markup, so a part gets the full scan when:

- its root element is a ``worksheet`` or an ``sst`` (shared strings), which openpyxl
  parses with expat (no depth limit) and whose rows it streams, or it holds a ``row``
  start tag (openpyxl reads whole rows wherever it finds them);
- a document type declaration, or anything but comments and processing instructions,
  comes before the root element (entities are declared there);
- it is not in an ASCII-compatible single-byte encoding or UTF-8 (UTF-16 and the rest);
- its bound would pass ``xml_max_elements``: the part is then scanned again, exactly
  (:class:`Recount`), so a part heavy with comments is not refused for them.
"""

from __future__ import annotations

import re

from taskctx_documents._xmlscan import PartScan, XmlTally
from taskctx_documents.limits import DocumentLimits

__all__ = ["PartCount", "Recount", "open_scan"]

EXPAT_ROOTS = frozenset({b"worksheet", b"sst"})
"""Local names of the roots of the parts openpyxl reads with expat: the full scan."""
_HEAD = re.compile(
    rb"(?:[ \t\r\n]+|<\?(?:[^?]|\?(?!>))*\?>|<!--(?:[^-]|-(?!->))*-->)*"
    rb"<((?:[A-Za-z_][-\w.]*:)?[A-Za-z_][-\w.]*)"
)
"""Whitespace, the XML declaration, processing instructions and comments, then the root."""
_ENCODING = re.compile(rb"""<\?xml[^>]*?\sencoding\s*=\s*["']([^"']{1,40})["']""")
_SAFE_ENCODING = re.compile(
    r"utf-?8|(us-)?ascii|latin-?1|iso[-_]?8859-([1-9]|1[0-5])|(windows|cp)-?125[0-8]", re.I
)
"""Encodings in which ``<`` is always the byte 0x3C (and 0x3C always ``<``)."""
_ROW_TAG = re.compile(rb"<(?:[A-Za-z_][-\w.]*:)?row[ \t\r\n/>]")
_TAIL = 64
"""Bytes of one chunk searched again with the next (a tag cut between two chunks)."""


class Recount(Exception):
    """The fast bound passed the limit, or a row turned up: scan the part again, fully."""


class PartCount:
    """The fast count of one XML part: an upper bound on its elements, added to the tally."""

    __slots__ = ("_count", "_limit", "_tail", "_tally", "name", "root")

    row_elements = 0
    """No worksheet is counted this way: no rows."""

    def __init__(self, name: str, root: str, limits: DocumentLimits, tally: XmlTally) -> None:
        self.name = name
        self.root = root
        """The local name of the root element."""
        self._limit = limits.xml_max_elements
        self._tally = tally
        self._count = 0
        self._tail = b""

    def feed(self, chunk: bytes) -> None:
        """Count the next bytes; raise :class:`Recount` once the bound passes the limit.

        A ``</`` cut between two chunks is counted as an element: the bound only grows.
        """
        found = chunk.count(b"<") - chunk.count(b"</")
        self._count += found
        self._tally.elements += found
        joined = self._tail + chunk[:_TAIL]
        rows = (b"row" in joined and _ROW_TAG.search(joined)) or (
            b"row" in chunk and _ROW_TAG.search(chunk)  # find() first: the regex is slow
        )
        self._tail = chunk[-_TAIL:]
        if self._tally.elements > self._limit or rows:
            self._tally.elements -= self._count
            raise Recount(self.name)

    def close(self) -> None:
        """Nothing to finish: the count is in the tally already."""


def open_scan(
    name: str, head: bytes, path: str, limits: DocumentLimits, tally: XmlTally
) -> PartScan | PartCount:
    """The scan for a part beginning with ``head`` (its first chunk): fast when sound."""
    root = _root(head)
    if root is None or root.rpartition(b":")[2] in EXPAT_ROOTS:
        return PartScan(name, path, limits, tally)
    return PartCount(name, root.rpartition(b":")[2].decode("ascii"), limits, tally)


def _root(head: bytes) -> bytes | None:
    """The root element's name, if nothing but comments and declarations precedes it in an
    encoding where ``<`` is 0x3C; None otherwise (the full scan decides)."""
    head = head.removeprefix(b"\xef\xbb\xbf")
    declared = _ENCODING.match(head)
    if declared is not None and not _SAFE_ENCODING.fullmatch(declared[1].decode("latin-1")):
        return None
    found = _HEAD.match(head)
    return found[1] if found else None
