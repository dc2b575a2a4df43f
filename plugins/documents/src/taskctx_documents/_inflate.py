"""The second gate of an OOXML package: every member inflated once, held to its claims.

Python's ``zipfile`` trusts a member's declared size: reading a member whole inflates as
much as the deflate stream holds (up to about 2 GiB in one call) before it cuts the
result to the declared size and fails the CRC check. So before any library opens the
package, :func:`inflate_package` inflates every member itself, in chunks of at most
:data:`CHUNK_BYTES`, and counts the bytes actually produced:

- a member that produces more than its declared size stops there (``too_large``): no
  more than one chunk past the claim is ever inflated, so the declared total (held to
  ``zip_max_total_bytes`` by the central-directory check) bounds all inflation; one
  that produces fewer bytes, fails its CRC or is cut short is ``parse_failed``;
- the bytes surely held in memory are counted as they come (an early stop; the exact
  check is :meth:`Package.check_budgets`);
- every member that may be read as XML is fed, chunk by chunk, to its scan: the fast
  count of :mod:`taskctx_documents._xmlcount` where it is sound, else expat's full
  :class:`~taskctx_documents._xmlscan.PartScan` (and the full scan again, from the
  start, when the fast bound passes the limit);
- the wall clock is checked after every chunk.

Nothing inflated is kept. Once every member matches its claim, the libraries' own
reads (which trust the claims) are bounded by what was checked here; the same
immutable bytes go to the library. :meth:`Package.check_budgets` then holds the parts a
library will keep in memory to ``zip_max_loaded_bytes``, ``xml_max_bytes`` and
``xml_max_elements``, given which worksheets (if any) the library streams.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from collections.abc import Iterator

import attrs

from taskctx.codes import ProblemCode
from taskctx.errors import MediaError
from taskctx_documents._xmlcount import PartCount, Recount, open_scan
from taskctx_documents._xmlscan import WORKSHEET, PartScan, XmlTally, looks_like_xml
from taskctx_documents.limits import Deadline, DocumentLimits, over_limit

__all__ = ["CHUNK_BYTES", "Package", "Part", "inflate_package"]

CHUNK_BYTES = 256 * 1024
"""Most bytes inflated (or read) at once; also the most a lying member can overshoot."""
_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")
_LOCAL_SIGNATURE = b"PK\x03\x04"


@attrs.define(slots=True)
class Part:
    """One inflated member: its size and, when it may be read as XML, its pre-scan."""

    name: str
    size: int
    scan: PartScan | PartCount | None

    @property
    def xml(self) -> bool:
        """Whether a library may read this member as XML."""
        return self.scan is not None


@attrs.define(slots=True)
class Package:
    """An OOXML package whose members all matched their declared sizes and passed the scan."""

    archive: zipfile.ZipFile
    parts: list[Part]
    tally: XmlTally
    path: str
    limits: DocumentLimits

    def part(self, name: str) -> Part | None:
        """The member named ``name``, if any."""
        for part in self.parts:
            if part.name == name:
                return part
        return None

    def check_budgets(self, streamed: frozenset[str]) -> None:
        """Hold what the library keeps in memory to the limits; ``streamed`` parts are
        XLSX worksheets whose rows the library streams (their rows are not kept)."""
        limits, path = self.limits, self.path
        kept = [part for part in self.parts if part.name not in streamed]
        elements = self.tally.elements + sum(p.scan.row_elements for p in kept if p.scan)
        if elements > limits.xml_max_elements:
            raise over_limit(
                path,
                f"{elements:,} XML elements to parse",
                "xml_max_elements",
                limits.xml_max_elements,
            )
        xml_bytes = sum(part.size for part in kept if part.xml)
        if xml_bytes > limits.xml_max_bytes:
            raise over_limit(
                path,
                f"{xml_bytes:,} bytes of XML to parse",
                "xml_max_bytes",
                limits.xml_max_bytes,
            )
        loaded = sum(part.size for part in kept)
        if loaded > limits.zip_max_loaded_bytes:
            raise over_limit(
                path,
                f"{loaded:,} inflated bytes to hold in memory",
                "zip_max_loaded_bytes",
                limits.zip_max_loaded_bytes,
            )


def inflate_package(
    archive: zipfile.ZipFile,
    data: bytes,
    path: str,
    kind: str,
    limits: DocumentLimits,
    deadline: Deadline,
) -> Package:
    """Inflate and scan every member of ``archive`` (opened on ``data``); see the module."""
    tally = XmlTally()
    counter = _Counter(path, limits)
    reader = _MemberReader(memoryview(data), path, kind, limits, deadline, tally, counter)
    parts: list[Part] = []
    for info in archive.infolist():
        held = (counter.xml_held, counter.held)
        try:
            parts.append(reader.read(info, exact=False))
        except Recount:  # the fast bound passed the limit: count this part exactly
            counter.xml_held, counter.held = held
            parts.append(reader.read(info, exact=True))
    return Package(archive, parts, tally, path, limits)


@attrs.define(slots=True)
class _MemberReader:
    """Inflates one member at a time, feeding its chunks to the scan it calls for."""

    view: memoryview
    path: str
    kind: str
    limits: DocumentLimits
    deadline: Deadline
    tally: XmlTally
    counter: _Counter

    def read(self, info: zipfile.ZipInfo, *, exact: bool) -> Part:
        """Inflate, check and scan ``info``; ``exact``: the full scan for any XML."""
        path = self.path
        scan: PartScan | PartCount | None = None
        sniffed: bool | None = None
        produced = 0
        crc = 0
        where = f"reading ZIP member {info.filename!r}"
        for chunk in _inflated(self.view, info, path, self.kind):
            produced += len(chunk)
            if produced > info.file_size:
                raise MediaError(
                    f"{path}: refused as a possible decompression bomb: member "
                    f"{info.filename!r} inflates past its declared size of "
                    f"{info.file_size:,} bytes",
                    code=ProblemCode.TOO_LARGE,
                )
            crc = zlib.crc32(chunk, crc)
            if sniffed is None:
                sniffed = looks_like_xml(chunk)
                if sniffed:
                    chunk = chunk.lstrip(b" \t\r\n")
                    scan = self._scan(info.filename, chunk, exact)
            if scan is not None:
                scan.feed(chunk)
            self.counter.hold(info.filename, len(chunk), scan)
            self.deadline.check(where)
        if produced != info.file_size or crc != info.CRC:
            found = "a wrong CRC-32" if produced == info.file_size else f"{produced:,} bytes"
            raise MediaError(
                f"{path}: cannot parse {self.kind}: ZIP member {info.filename!r} inflates to "
                f"{found}, not what its header declares ({info.file_size:,} bytes)",
                code=ProblemCode.PARSE_FAILED,
            )
        if scan is not None:
            scan.close()
        return Part(info.filename, produced, scan)

    def _scan(self, name: str, head: bytes, exact: bool) -> PartScan | PartCount:
        if exact:
            return PartScan(name, self.path, self.limits, self.tally)
        return open_scan(name, head, self.path, self.limits, self.tally)


@attrs.define(slots=True)
class _Counter:
    """Running totals while inflating: the bytes surely held in memory (members hold to
    their declared sizes, so the declared total already bounds all inflated bytes)."""

    path: str
    limits: DocumentLimits
    xml_held: int = 0
    held: int = 0

    def hold(self, name: str, size: int, scan: PartScan | PartCount | None) -> None:
        """Count ``size`` bytes of member ``name`` that no library streams (only a
        worksheet can be streamed: its bytes are counted by :meth:`Package.check_budgets`)."""
        if scan is not None and scan.root in (None, WORKSHEET):
            return  # maybe a streamed worksheet: decided once the roles are known
        limits = self.limits
        if scan is not None:
            self.xml_held += size
            if self.xml_held > limits.xml_max_bytes:
                raise over_limit(
                    self.path,
                    f"more than {limits.xml_max_bytes:,} bytes of XML to parse (stopped in "
                    f"part {name!r})",
                    "xml_max_bytes",
                    limits.xml_max_bytes,
                )
        self.held += size
        if self.held > limits.zip_max_loaded_bytes:
            raise over_limit(
                self.path,
                f"more than {limits.zip_max_loaded_bytes:,} inflated bytes to hold in memory "
                f"(stopped in member {name!r})",
                "zip_max_loaded_bytes",
                limits.zip_max_loaded_bytes,
            )


def _inflated(view: memoryview, info: zipfile.ZipInfo, path: str, kind: str) -> Iterator[bytes]:
    """The member's uncompressed bytes in chunks of at most :data:`CHUNK_BYTES`."""
    raw = _raw(view, info, path, kind)
    if info.compress_type == zipfile.ZIP_STORED:
        for start in range(0, len(raw), CHUNK_BYTES):
            yield bytes(raw[start : start + CHUNK_BYTES])
        return
    inflater = zlib.decompressobj(-zlib.MAX_WBITS)
    try:
        for start in range(0, len(raw), CHUNK_BYTES):
            pending: bytes | memoryview = raw[start : start + CHUNK_BYTES]
            while pending and not inflater.eof:
                chunk = inflater.decompress(pending, CHUNK_BYTES)
                pending = inflater.unconsumed_tail
                if chunk:
                    yield chunk
            if inflater.eof:
                return
        while not inflater.eof:  # input consumed, output pending
            chunk = inflater.decompress(b"", CHUNK_BYTES)
            if not chunk:
                break
            yield chunk
    except zlib.error as exc:
        raise MediaError(
            f"{path}: cannot parse {kind}: ZIP member {info.filename!r} is not a valid "
            f"deflate stream ({exc})",
            code=ProblemCode.PARSE_FAILED,
        ) from None
    if not inflater.eof:
        raise MediaError(
            f"{path}: cannot parse {kind}: ZIP member {info.filename!r} is cut short "
            "(its deflate stream does not end)",
            code=ProblemCode.PARSE_FAILED,
        )


def _raw(view: memoryview, info: zipfile.ZipInfo, path: str, kind: str) -> memoryview:
    """The member's compressed bytes, found as ``zipfile`` finds them (local header)."""
    offset = info.header_offset
    header = bytes(view[offset : offset + _LOCAL_HEADER.size])
    if len(header) < _LOCAL_HEADER.size or not header.startswith(_LOCAL_SIGNATURE):
        raise MediaError(
            f"{path}: cannot parse {kind}: ZIP member {info.filename!r} has no local header",
            code=ProblemCode.PARSE_FAILED,
        )
    fields = _LOCAL_HEADER.unpack(header)
    name_length, extra_length = fields[-2], fields[-1]
    start = offset + _LOCAL_HEADER.size
    name = bytes(view[start : start + name_length])
    encoding = "utf-8" if info.flag_bits & 0x800 else "cp437"
    if name != info.orig_filename.encode(encoding, errors="replace"):
        raise MediaError(
            f"{path}: cannot parse {kind}: ZIP member {info.filename!r} is named "
            "differently in its local header",
            code=ProblemCode.PARSE_FAILED,
        )
    start += name_length + extra_length
    raw = view[start : start + info.compress_size]
    if len(raw) < info.compress_size:
        raise MediaError(
            f"{path}: cannot parse {kind}: ZIP member {info.filename!r} is cut short",
            code=ProblemCode.PARSE_FAILED,
        )
    return raw
