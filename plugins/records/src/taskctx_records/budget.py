"""The materialization budget: how many records one operation may expand (decode, return).

Over the limit, the operation warns (:class:`MaterializationWarning`) and the call site
(``file:line`` of the first caller outside this package) is recorded; in strict mode it
raises :class:`~taskctx.errors.MaterializationBudgetError` before expanding anything.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from types import FrameType

from taskctx.errors import MaterializationBudgetError
from taskctx_records.values import MaterializationEvent

__all__ = ["DEFAULT_MATERIALIZATION_LIMIT", "MaterializationBudget", "MaterializationWarning"]

DEFAULT_MATERIALIZATION_LIMIT = 50_000
_PACKAGE_DIR = str(Path(__file__).resolve().parent)


class MaterializationWarning(UserWarning):
    """One operation expanded more records than the materialization budget allows."""


def _call_site() -> tuple[str, int]:
    """File and line of the nearest frame outside taskctx_records."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(_PACKAGE_DIR):
            return filename, frame.f_lineno
        frame = frame.f_back
    return "<unknown>", 0


class MaterializationBudget:
    """Checks each operation's expansion count against ``limit``; keeps the overruns."""

    __slots__ = ("events", "limit", "strict")

    def __init__(self, limit: int = DEFAULT_MATERIALIZATION_LIMIT, *, strict: bool = False):
        if limit < 1:
            raise ValueError("materialization_limit must be at least 1")
        self.limit = limit
        self.strict = strict
        self.events: list[MaterializationEvent] = []

    def charge(self, operation: str, count: int) -> None:
        """Account for one operation about to expand ``count`` records."""
        if count <= self.limit:
            return
        filename, lineno = _call_site()
        site = f"{filename}:{lineno}"
        message = (
            f"{operation} expands {count} records, over the materialization budget of "
            f"{self.limit} (called from {site}); page the query or raise the limit"
        )
        if self.strict:
            raise MaterializationBudgetError(message)
        self.events.append(
            MaterializationEvent(operation=operation, count=count, limit=self.limit, call_site=site)
        )
        warnings.warn_explicit(message, MaterializationWarning, filename, lineno)
