"""Helpers for the workspace tests: a tiny FileIOHandler, real images, aged files."""

from __future__ import annotations

import io
import os
import time
from pathlib import Path

from PIL import Image

from taskctx.errors import MediaError
from taskctx.model import SectionInfo
from taskctx.protocols import ParsedDocument

PDF_MEDIA_TYPE = "application/pdf"


class TinyHandler:
    """A test FileIOHandler for 'PDFs': the text after the first line, upper-cased.

    Bytes containing ``ENCRYPTED`` raise ``MediaError(code="encrypted")``; bytes
    containing ``CRASH`` raise a plain ``RuntimeError`` (a handler bug).
    """

    def __init__(
        self,
        name: str = "tiny",
        version: str = "1",
        suffixes: tuple[str, ...] = ("pdf",),
        media_types: tuple[str, ...] = (PDF_MEDIA_TYPE,),
    ) -> None:
        self.name = name
        self.version = version
        self.suffixes = suffixes
        self.media_types = media_types
        self.calls = 0

    def parse(self, data: bytes, path: str) -> ParsedDocument:
        """Parse the body; count the call."""
        self.calls += 1
        if b"ENCRYPTED" in data:
            raise MediaError(f"{path} is encrypted", code="encrypted")
        if b"CRASH" in data:
            raise RuntimeError("handler bug")
        text = data.split(b"\n", 1)[-1].decode().upper()
        section = SectionInfo(
            title="Page 1", scope="page:1", chars=len(text), start=0, end=len(text)
        )
        return ParsedDocument(text=text, media_type=PDF_MEDIA_TYPE, sections=(section,))


def pdf_bytes(body: str = "first page") -> bytes:
    """Bytes a suffix and magic number both call a PDF."""
    return b"%PDF-1.4 test\n" + body.encode()


def png_bytes(width: int = 4, height: int = 3) -> bytes:
    """A real PNG made by Pillow."""
    out = io.BytesIO()
    Image.new("RGB", (width, height), (10, 200, 10)).save(out, format="PNG")
    return out.getvalue()


def age(*paths: Path, seconds: float = 60.0) -> None:
    """Set modification times in the past (not whole seconds), out of the racy window."""
    past = time.time_ns() - int(seconds * 1e9) + 123_457
    for path in paths:
        os.utime(path, ns=(past, past))


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Bytes and mtime of every file under ``root`` outside ``.taskctx/``."""
    found: dict[str, tuple[bytes, int]] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(".taskctx") or not path.is_file() or path.is_symlink():
            continue
        found[rel] = (path.read_bytes(), path.stat().st_mtime_ns)
    return found
