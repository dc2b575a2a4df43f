"""Documents for tests and demos, written without a PDF library.

``minimal_pdf`` writes a small valid PDF with a real text layer (Helvetica, WinAnsi,
a correct cross-reference table), so tests and demos can make PDFs the handlers parse;
``pdf_file`` writes any list of object bodies with a correct cross-reference table.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["minimal_pdf", "pdf_file"]


def _pdf_string(text: str) -> str:
    return "(" + text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ")"


def minimal_pdf(pages: Sequence[str]) -> bytes:
    """A PDF with one page per string (lines split on newlines), Helvetica, correct xref."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        (
            "<< /Type /Pages /Kids ["
            + " ".join(f"{4 + 2 * i} 0 R" for i in range(len(pages)))
            + f"] /Count {len(pages)} >>"
        ).encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    ]
    for index, text in enumerate(pages):
        operations = ["BT", "/F1 12 Tf", "14 TL", "72 720 Td"]
        operations += [f"{_pdf_string(line)} Tj T*" for line in text.split("\n") if line]
        operations.append("ET")
        stream = "\n".join(operations).encode("latin-1")
        objects.append(
            (
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
                f"/Resources << /Font << /F1 3 0 R >> >> /Contents {5 + 2 * index} 0 R >>"
            ).encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
    return pdf_file(objects)


def pdf_file(objects: Sequence[bytes], *, version: bytes = b"1.4") -> bytes:
    """A PDF of ``objects`` (bodies of objects 1, 2, ...; object 1 is the catalog)."""
    out = bytearray(b"%%PDF-%s\n%%\xe2\xe3\xcf\xd3\n" % version)
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)
