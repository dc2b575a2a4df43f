"""The one place where library exceptions become ``MediaError`` and warnings are recorded.

Only :class:`~taskctx.errors.MediaError` leaves a handler's ``parse``: any other
``Exception`` from a library becomes ``parse_failed`` naming the file, the exception
type and its message; ``MemoryError`` becomes ``too_large``. ``KeyboardInterrupt``,
``SystemExit`` and other ``BaseException`` pass through untouched.

Warnings the libraries emit while parsing are recorded (and so never turned into
errors by a caller's warning filter) and returned in the document's metadata. Like
every use of :func:`warnings.catch_warnings`, this swaps process-wide warning state
for the duration of a parse.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager

from taskctx.codes import ProblemCode
from taskctx.errors import MediaError

__all__ = ["MAX_MESSAGE", "ParseLog", "describe", "parse_boundary"]

MAX_MESSAGE = 300
"""Longest library message quoted in an error (some libraries quote whole objects)."""
MAX_WARNINGS = 20


def describe(exc: BaseException) -> str:
    """``Type: message``, the message cut to :data:`MAX_MESSAGE` characters."""
    message = " ".join(str(exc).split())
    if len(message) > MAX_MESSAGE:
        message = message[: MAX_MESSAGE - 3] + "..."
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


class ParseLog:
    """Warnings caught during one parse, as ``Category: message`` strings."""

    __slots__ = ("_caught",)

    def __init__(self, caught: list[warnings.WarningMessage]) -> None:
        self._caught = caught

    def warnings(self) -> list[str]:
        """Distinct warnings in the order first seen, at most 20."""
        seen: dict[str, None] = {}
        for item in self._caught:
            text = f"{item.category.__name__}: {' '.join(str(item.message).split())}"
            seen.setdefault(text[:MAX_MESSAGE], None)
            if len(seen) >= MAX_WARNINGS:
                break
        return list(seen)


@contextmanager
def parse_boundary(kind: str, path: str) -> Iterator[ParseLog]:
    """Run a parse of ``kind`` (``PDF``) for ``path``: record warnings, wrap exceptions."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield ParseLog(caught)
        except MediaError:
            raise
        except MemoryError:
            raise MediaError(
                f"{path}: ran out of memory while parsing the {kind} file",
                code=ProblemCode.TOO_LARGE,
            ) from None
        except RecursionError as exc:
            raise MediaError(
                f"{path}: cannot parse {kind}: nesting too deep ({describe(exc)})",
                code=ProblemCode.PARSE_FAILED,
            ) from None
        except Exception as exc:
            raise MediaError(
                f"{path}: cannot parse {kind}: {describe(exc)}", code=ProblemCode.PARSE_FAILED
            ) from exc
