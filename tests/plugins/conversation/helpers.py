"""Small real inputs shared by the conversation tests."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from io import BytesIO

from PIL import Image

__all__ = ["PNG_1X1", "T0", "at", "png"]

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=timezone.utc)


def at(seconds: float) -> datetime:
    """``seconds`` after :data:`T0`."""
    return T0 + timedelta(seconds=seconds)


def png(width: int, height: int, color: tuple[int, int, int] = (40, 90, 200)) -> bytes:
    """A real PNG of one colour with a stripe every 100 rows (so segments differ)."""
    image = Image.new("RGB", (width, height), color)
    for y in range(0, height, 100):
        image.paste((250, 250, 250), (0, y, width, min(y + 2, height)))
    out = BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


PNG_1X1 = png(1, 1)
