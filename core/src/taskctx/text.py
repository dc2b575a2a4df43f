"""Text as the kernel accepts it: strict UTF-8, no NUL, newlines normalised, no controls.

The media module re-exports these (``taskctx.media.decode_text`` and the rest); they
live apart because they need no media table or classification.
"""

from __future__ import annotations

import codecs

from taskctx.errors import MediaError

__all__ = ["clean_text", "decode_text", "text_nul"]


def text_nul(text: str) -> int | None:
    """Offset of the first NUL character of ``text``, or None: text never holds NUL."""
    offset = text.find("\x00")
    return offset if offset >= 0 else None


_CONTROL_CHARACTERS: dict[int, None] = {
    code: None for code in (*range(0x20), 0x7F, *range(0x80, 0xA0)) if code not in (0x09, 0x0A)
}


def clean_text(text: str) -> str:
    """Normalize newlines to ``\\n``, drop a leading BOM and C0/C1 controls but tab/newline."""
    if text.startswith("\ufeff"):
        text = text[1:]
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.translate(_CONTROL_CHARACTERS)


def decode_text(data: bytes) -> str:
    """Decode strict UTF-8, dropping a leading BOM; MediaError names a bad byte offset."""
    start = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        return data[start:].decode("utf-8", errors="strict")
    except UnicodeDecodeError as exc:
        offset = start + exc.start
        raise MediaError(
            f"invalid UTF-8 at byte offset {offset}: {exc.reason} (byte 0x{data[offset]:02X})"
        ) from None
