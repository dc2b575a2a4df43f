"""Hostile documents built at run time, and a child process that parses one and measures it.

The ZIP writer here writes local headers, central directory and end record itself, so a
test can give a member any declared size (a lying header) and any raw deflate stream.
:func:`repeated` makes a deflate stream of ``times`` copies of a chunk by repeating one
independently compressed block (zlib's full flush resets the compressor, so a block
never refers back before itself): gigabytes of XML cost a few megabytes and milliseconds.
"""

from __future__ import annotations

import io
import json
import os
import random
import struct
import subprocess
import sys
import time
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from taskctx_documents.testing import pdf_file as testing_pdf_file

from tests.childpeak import PEAK_RSS_SOURCE

__all__ = [
    "DOCX_BODY",
    "SHEET",
    "ChildResult",
    "ZipMember",
    "deflated",
    "docx_with_body",
    "flate",
    "noisy",
    "parse_in_child",
    "pdf_file",
    "pdf_file_with_object_streams",
    "pdf_pages",
    "pdf_stream",
    "repack",
    "repeated",
    "stored",
    "write_zip",
    "xlsx_with",
]

MIB = 1024 * 1024


@dataclass(frozen=True)
class ZipMember:
    """One ZIP member: raw (compressed) bytes and what its headers say about them."""

    name: str
    raw: bytes
    crc: int
    size: int
    """The real uncompressed size."""
    method: int = zipfile.ZIP_DEFLATED
    declared: int | None = None
    """The uncompressed size written in both headers (the real size when None)."""
    flags: int = 0


def noisy(unit: bytes, size: int, noise: int, seed: int = 7) -> bytes:
    """About ``size`` bytes of ``unit`` repeated, then an XML comment of ``noise`` random hex
    digits: a chunk that compresses about ``size / (noise / 2)`` times, not a thousandfold,
    so a package of it passes the compression-ratio check."""
    rnd = random.Random(seed)
    digits = bytes(rnd.choice(b"0123456789abcdef") for _ in range(noise))
    return unit * (size // len(unit)) + b"<!--" + digits + b"-->"


def deflated(name: str, content: bytes, *, declared: int | None = None) -> ZipMember:
    """``content`` deflated; ``declared`` overrides the size the headers claim."""
    compressor = zlib.compressobj(6, zlib.DEFLATED, -15)
    raw = compressor.compress(content) + compressor.flush()
    return ZipMember(name, raw, zlib.crc32(content), len(content), declared=declared)


def stored(name: str, content: bytes, *, declared: int | None = None) -> ZipMember:
    """``content`` stored uncompressed."""
    return ZipMember(name, content, zlib.crc32(content), len(content), zipfile.ZIP_STORED, declared)


def repeated(
    name: str,
    chunk: bytes,
    times: int,
    *,
    prefix: bytes = b"",
    suffix: bytes = b"",
    declared: int | None = None,
    crc: bool = True,
) -> ZipMember:
    """``prefix + chunk * times + suffix`` deflated by repeating one compressed block.

    ``crc=False`` skips the checksum (a member whose size lies fails before it matters).
    """
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = compressor.compress(prefix) + compressor.flush(zlib.Z_FULL_FLUSH)
    block = compressor.compress(chunk) + compressor.flush(zlib.Z_FULL_FLUSH)
    tail = compressor.compress(suffix) + compressor.flush(zlib.Z_FINISH)
    checksum = 0
    if crc:
        checksum = zlib.crc32(prefix)
        for _ in range(times):
            checksum = zlib.crc32(chunk, checksum)
        checksum = zlib.crc32(suffix, checksum)
    size = len(prefix) + len(chunk) * times + len(suffix)
    return ZipMember(name, head + block * times + tail, checksum, size, declared=declared)


def write_zip(members: list[ZipMember]) -> bytes:
    """A ZIP archive of ``members`` in order, headers written exactly as the members say."""
    out = bytearray()
    central = bytearray()
    for member in members:
        name = member.name.encode()
        declared = member.size if member.declared is None else member.declared
        offset = len(out)
        fields = (20, member.flags, member.method, 0, 0x21, member.crc, len(member.raw))
        out += b"PK\x03\x04" + struct.pack("<HHHHHII", *fields)
        out += struct.pack("<IHH", declared, len(name), 0) + name + member.raw
        central += b"PK\x01\x02" + struct.pack("<HHHHHHII", 20, *fields)
        central += struct.pack("<IHHHHHII", declared, len(name), 0, 0, 0, 0, 0, offset) + name
    start = len(out)
    count = len(members)
    out += central
    out += b"PK\x05\x06" + struct.pack("<HHHHIIH", 0, 0, count, count, len(central), start, 0)
    return bytes(out)


def repack(package: bytes, replace: list[ZipMember], *, drop: tuple[str, ...] = ()) -> bytes:
    """``package`` (a real OOXML file) with members replaced or added, others deflated again."""
    by_name = {member.name: member for member in replace}
    members: list[ZipMember] = []
    with zipfile.ZipFile(io.BytesIO(package)) as archive:
        for info in archive.infolist():
            if info.filename in drop:
                continue
            member = by_name.pop(info.filename, None)
            members.append(member or deflated(info.filename, archive.read(info)))
    return write_zip(members + list(by_name.values()))


@dataclass(frozen=True)
class ChildResult:
    """What one parse in a child process ended with, and what it cost."""

    outcome: str
    """``parsed`` or the MediaError code."""
    message: str
    seconds: float
    """Wall time of the whole child process, measured by the parent."""
    peak_mib: float
    """The child's peak resident set size."""
    parse_seconds: float = 0.0
    """Wall time of the parse alone (no interpreter start or imports), measured in the child."""
    cpu_seconds: float = 0.0
    """CPU time of the parse alone: the work it did, whatever else loads the machine."""


_CHILD = (
    PEAK_RSS_SOURCE
    + """
import json, resource, sys, time
cap = int(sys.argv[3])
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
from taskctx.errors import MediaError
from taskctx_documents import DocumentLimits, default_handlers
limits = DocumentLimits(**json.loads(sys.argv[4]))
handler = {h.name: h for h in default_handlers(limits)}[sys.argv[1]]
path = sys.argv[2]
with open(path, "rb") as stream:
    data = stream.read()
started, started_cpu = time.monotonic(), time.process_time()
try:
    parsed = handler.parse(data, path.rsplit("/", 1)[-1])
    out = {"outcome": "parsed", "message": f"{len(parsed.text)} characters"}
except MediaError as exc:
    out = {"outcome": exc.code, "message": str(exc)}
out["parse_s"] = time.monotonic() - started
out["cpu_s"] = time.process_time() - started_cpu
out["peak_kib"] = peak_rss_kib()
print(json.dumps(out))
"""
)

ADDRESS_SPACE_CAP = 3 * 1024 * MIB
"""The child's address-space limit: a runaway parse fails there instead of eating the host."""
CHILD_TIMEOUT = 120.0


def parse_in_child(
    handler: str, data: bytes, path: Path, limits: dict[str, float] | None = None
) -> ChildResult:
    """Write ``data`` to ``path`` and parse it with handler ``handler`` in a fresh process,
    under the default limits with ``limits`` overridden."""
    path.write_bytes(data)
    environment = {**os.environ, "PYTHONWARNINGS": "ignore"}
    command = [
        sys.executable,
        "-c",
        _CHILD,
        handler,
        str(path),
        str(ADDRESS_SPACE_CAP),
        json.dumps(limits or {}),
    ]
    started = time.monotonic()
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=CHILD_TIMEOUT, env=environment
        )
    except subprocess.TimeoutExpired:
        return ChildResult("killed", f"still running after {CHILD_TIMEOUT:g} s", CHILD_TIMEOUT, 0)
    seconds = time.monotonic() - started
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = done.stderr.strip().splitlines()[-3:]
        return ChildResult("crashed", f"exit {done.returncode}: {' | '.join(tail)}", seconds, 0)
    report = json.loads(lines[-1])
    return ChildResult(
        report["outcome"],
        report["message"],
        seconds,
        report["peak_kib"] / 1024,
        report["parse_s"],
        report["cpu_s"],
    )


def flate(chunk: bytes, times: int = 1, *, prefix: bytes = b"", suffix: bytes = b"") -> bytes:
    """A zlib stream (PDF ``/FlateDecode``) of ``prefix + chunk * times + suffix``."""
    member = repeated("-", chunk, times, prefix=prefix, suffix=suffix, crc=False)
    adler = zlib.adler32(prefix)
    for _ in range(times):
        adler = zlib.adler32(chunk, adler)
    adler = zlib.adler32(suffix, adler)
    return b"\x78\xda" + member.raw + struct.pack(">I", adler)


def pdf_stream(data: bytes, entries: bytes = b"", *, filters: bytes = b"/FlateDecode") -> bytes:
    """A stream object body: ``data`` (already encoded) with its length and filters."""
    head = b"<< /Length %d /Filter %s %s >>" % (len(data), filters, entries)
    if not filters:
        head = b"<< /Length %d %s >>" % (len(data), entries)
    return head + b"\nstream\n" + data + b"\nendstream"


def pdf_file(objects: list[bytes]) -> bytes:
    """A PDF 1.7 of ``objects`` (bodies of objects 1, 2, ...; object 1 is the catalog)."""
    return testing_pdf_file(objects, version=b"1.7")


PDF_FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"


def pdf_pages(contents: list[bytes], *, resources: bytes = b"/Font << /F1 3 0 R >>") -> list[bytes]:
    """Objects of a PDF: catalog (1), pages (2), font (3), then a page and its content
    stream (given whole, encoded) per entry of ``contents``."""
    kids = b" ".join(b"%d 0 R" % (4 + 2 * i) for i in range(len(contents)))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, len(contents)),
        PDF_FONT,
    ]
    for index, content in enumerate(contents):
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << %s >> "
            b"/Contents %d 0 R >>" % (resources, 5 + 2 * index)
        )
        objects.append(content)
    return objects


def pdf_file_with_object_streams(plain: list[bytes], packed: list[list[bytes]]) -> bytes:
    """A PDF with a cross-reference stream: objects ``1..len(plain)`` stored plainly (1 is
    the catalog), then each list of ``packed`` in an object stream of its own, numbered on
    from there. Each object stream is padded with 30 MiB of spaces (a flate bomb pypdf
    decodes, and keeps, to read one object of it)."""
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    rows: list[tuple[int, int, int]] = [(0, 0, 65535)]
    for number, body in enumerate(plain, start=1):
        rows.append((1, len(out), 0))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    number = len(plain)
    streams: list[tuple[int, list[bytes]]] = []
    for group in packed:
        streams.append((number + 1, group))
        number += len(group)
    stream_number = number
    for first, group in streams:
        stream_number += 1
        for index in range(len(group)):
            rows.insert(first + index, (2, stream_number, index))
    for first, group in streams:
        offsets: list[int] = []
        stream_body = bytearray()
        for item in group:
            offsets.append(len(stream_body))
            stream_body += item + b"\n"
        header = b" ".join(b"%d %d" % (first + i, offsets[i]) for i in range(len(group))) + b"\n"
        data = flate(b" " * MIB, 30, prefix=bytes(header + stream_body))
        rows.append((1, len(out), 0))
        out += b"%d 0 obj\n" % (len(rows) - 1)
        entries = b"/Type /ObjStm /N %d /First %d" % (len(group), len(header))
        out += pdf_stream(data, entries) + b"\nendobj\n"
    xref_number = len(rows)
    rows.append((1, len(out), 0))
    table = b"".join(struct.pack(">BIH", *row) for row in rows)
    entries = b"/Type /XRef /Size %d /W [1 4 2] /Root 1 0 R" % len(rows)
    xref_offset = len(out)
    out += b"%d 0 obj\n" % xref_number + pdf_stream(flate(table), entries) + b"\nendobj\n"
    out += b"startxref\n%d\n%%%%EOF\n" % xref_offset
    return bytes(out)


DOCX_BODY = (
    b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<w:document xmlns:w="http://'
    b'schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>',
    b"</w:body></w:document>",
)
"""The XML around the body of a ``word/document.xml``."""


def docx_with_body(package: bytes, chunk: bytes, times: int = 1, **options: object) -> bytes:
    """``package`` (a DOCX) whose ``word/document.xml`` body is ``chunk * times``."""
    head, tail = DOCX_BODY
    member = repeated("word/document.xml", chunk, times, prefix=head, suffix=tail, **options)  # type: ignore[arg-type]
    return repack(package, [member])


SHEET = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<worksheet xmlns="http://schemas.openxmlformats.'
    b'org/spreadsheetml/2006/main"><sheetData>',
    b"</sheetData></worksheet>",
)
"""The XML around the rows of a worksheet."""

SHARED_STRINGS_TYPE = (
    b'<Override PartName="/xl/sharedStrings.xml" ContentType="application/vnd.openxmlformats-'
    b'officedocument.spreadsheetml.sharedStrings+xml"/>'
)


def xlsx_with(package: bytes, members: list[ZipMember], *, shared_strings: bool = False) -> bytes:
    """``package`` (an XLSX) with ``members`` replaced or added; ``shared_strings`` declares
    ``xl/sharedStrings.xml`` in the content types (openpyxl reads it only then)."""
    replace = list(members)
    if shared_strings:
        with zipfile.ZipFile(io.BytesIO(package)) as archive:
            types = archive.read("[Content_Types].xml")
        replace.append(
            deflated(
                "[Content_Types].xml", types.replace(b"</Types>", SHARED_STRINGS_TYPE + b"</Types>")
            )
        )
    return repack(package, replace)
