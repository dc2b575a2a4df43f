"""Size, work and wall-clock limits of the document handlers, and the clock that enforces them.

Every limit that is exceeded raises :class:`~taskctx.errors.MediaError`: ``too_large`` for
sizes and counts, ``timeout`` for the wall clock, each message naming the limit (its field
name in :class:`DocumentLimits`). One :class:`Deadline` runs from the start of a parse to
its end: the package guard checks it between inflated chunks, the XML pre-scan between
parsed chunks, the handlers between units of work (pages, rows, slides, paragraphs). One
unit that hangs inside a library cannot be interrupted from the same thread; the
pre-scan bounds what a unit can cost before the library sees it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from pydantic import Field

from taskctx.codes import ProblemCode
from taskctx.errors import MediaError
from taskctx.model import FrozenModel

__all__ = ["GIB", "MIB", "Deadline", "DocumentLimits", "check_size", "over_limit"]

MIB = 1024 * 1024
GIB = 1024 * MIB


class DocumentLimits(FrozenModel):
    """What one parse may cost. The defaults suit documents people write by hand.

    The ``zip_*`` limits bound an OOXML package before any library inflates it: the
    number of members, their uncompressed total (declared and actually inflated: every
    member is inflated once, in chunks, and one that inflates past its declared size is
    refused), the compression ratio of each member and of the whole archive, and the
    inflated bytes a library holds in memory at once. Members and archives smaller than
    ``zip_ratio_grace_bytes`` are not ratio-checked (tiny repetitive XML parts compress
    very well and are harmless).

    The ``xml_*`` limits bound what the XML parts cost once a library parses them into
    trees; a streaming pre-scan counts them before the library runs. XLSX worksheet
    rows are streamed by openpyxl and bounded by ``max_cells`` instead.

    ``max_text_chars`` bounds the parsed text (text can repeat: one shared string in a
    million cells, one form drawn on every page). The ``pdf_*`` limits bound what pypdf
    may decode.
    """

    max_bytes: int = Field(default=100 * MIB, gt=0)
    max_pages: int = Field(default=5_000, gt=0)
    max_cells: int = Field(default=5_000_000, gt=0)
    max_slides: int = Field(default=5_000, gt=0)
    max_seconds: float = Field(default=30.0, gt=0)
    max_text_chars: int = Field(default=32_000_000, gt=0)
    zip_max_total_bytes: int = Field(default=GIB, gt=0)
    zip_max_ratio: float = Field(default=200.0, gt=1)
    zip_max_members: int = Field(default=100_000, gt=0)
    zip_ratio_grace_bytes: int = Field(default=MIB, ge=0)
    zip_max_loaded_bytes: int = Field(default=256 * MIB, gt=0)
    xml_max_bytes: int = Field(default=64 * MIB, gt=0)
    xml_max_elements: int = Field(default=2_000_000, gt=0)
    xml_max_depth: int = Field(default=256, gt=0)
    pdf_max_stream_bytes: int = Field(default=32 * MIB, gt=0)
    pdf_max_decoded_bytes: int = Field(default=256 * MIB, gt=0)

    def fingerprint(self) -> str:
        """A short digest of these limits: part of each handler's parse-cache version."""
        import hashlib

        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()[:8]


def over_limit(path: str, what: str, limit: str, value: int) -> MediaError:
    """``too_large`` for ``path``: ``what`` exceeds the limit named ``limit`` (``value``)."""
    return MediaError(f"{path}: {what} (limit {limit}={value:,})", code=ProblemCode.TOO_LARGE)


def check_size(data: bytes, path: str, limits: DocumentLimits) -> None:
    """Raise ``too_large`` when ``data`` is longer than ``limits.max_bytes``."""
    if len(data) > limits.max_bytes:
        raise MediaError(
            f"{path}: {len(data):,} bytes exceed the limit of {limits.max_bytes:,} bytes "
            "(limit max_bytes)",
            code=ProblemCode.TOO_LARGE,
        )


def _now() -> float:
    """The clock of every :class:`Deadline` made without one (tests replace it)."""
    return time.monotonic()


class Deadline:
    """A wall-clock budget started at construction; :meth:`check` raises ``timeout``."""

    __slots__ = ("_clock", "_end", "_path", "_seconds")

    def __init__(self, seconds: float, path: str, clock: Callable[[], float] | None = None) -> None:
        clock = clock if clock is not None else _now
        self._clock = clock
        self._seconds = seconds
        self._path = path
        self._end = clock() + seconds

    def check(self, where: str | Callable[[], str]) -> None:
        """Raise ``timeout`` naming ``where`` (``page 3 of 40``) once the budget is spent.

        ``where`` may be a function, called only when the budget is spent (hot loops).
        """
        if self._clock() > self._end:
            place = where() if callable(where) else where
            raise MediaError(
                f"{self._path}: parsing took longer than {self._seconds:g} s "
                f"(stopped at {place}; limit max_seconds)",
                code=ProblemCode.TIMEOUT,
            )
