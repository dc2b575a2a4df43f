"""The rules of ``edit_file``: text only, ``old`` non-empty and present exactly once.

Occurrences are counted overlapping (``"aa"`` occurs twice in ``"aaa"``), so "exactly
once" means one place in the file could be meant. A UTF-8 byte order mark is kept.
"""

from __future__ import annotations

from taskctx.codes import ProblemCode
from taskctx.errors import MediaError
from taskctx.media import MediaDecision, decode_text
from taskctx_workspace.errors import EditError

__all__ = ["count_occurrences", "replace_once"]

_BOM = b"\xef\xbb\xbf"


def count_occurrences(text: str, old: str) -> int:
    """How many places ``old`` starts at in ``text`` (overlapping ones included)."""
    count, start = 0, text.find(old)
    while start >= 0:
        count += 1
        start = text.find(old, start + 1)
    return count


def replace_once(data: bytes, old: str, new: str, *, rel: str, media: MediaDecision) -> bytes:
    """``data`` with its one occurrence of ``old`` replaced by ``new``.

    Raises ``EditError`` for an empty ``old`` or zero or several occurrences, and
    ``MediaError`` when the file is not text (``not_text``) or not UTF-8 (``invalid_text``).
    """
    if not old:
        raise EditError(f"{rel}: old must not be empty", path=rel, occurrences=0)
    if not media.enters_as_text:
        raise MediaError(f"{rel} is {media.media_type}, not text", code=ProblemCode.NOT_TEXT)
    try:
        text = decode_text(data)
    except MediaError as exc:
        raise MediaError(f"{rel}: {exc}", code=ProblemCode.INVALID_TEXT) from None
    first = text.find(old)
    if first < 0 or text.find(old, first + 1) >= 0:
        count = count_occurrences(text, old)
        where = "it is not in the file" if count == 0 else "say more to pick one"
        raise EditError(
            f"{rel}: old text must occur exactly once, found {count} occurrences ({where})",
            path=rel,
            occurrences=count,
        )
    bom = _BOM if data.startswith(_BOM) else b""
    return bom + (text[:first] + new + text[first + len(old) :]).encode("utf-8")
