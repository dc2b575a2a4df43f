"""The one place where library exceptions become ``MediaError`` and warnings are recorded.

Only :class:`~taskctx.errors.MediaError` leaves a handler's ``parse``: any other
``Exception`` from a library becomes ``parse_failed`` naming the file, the exception
type and its message; ``MemoryError`` becomes ``too_large``. ``KeyboardInterrupt``,
``SystemExit`` and other ``BaseException`` pass through untouched.

Warnings the libraries emit while parsing are recorded (and so never turned into
errors by a caller's warning filter) and returned in the document's metadata. Like
every use of :func:`warnings.catch_warnings`, this swaps process-wide warning state
for the duration of a parse.

What the libraries *log* while parsing (pypdf reports every repaired xref, font
dictionary and stream through ``logging``, 1,592 lines for 80 real PDFs) is recorded
the same way and re-logged at DEBUG on ``taskctx_documents.<library>``, so it never
reaches a terminal through logging's last-resort handler. Records the libraries log
outside a parse go on to the root logger as they would have.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from taskctx.codes import ProblemCode
from taskctx.errors import MediaError

__all__ = ["MAX_MESSAGE", "ParseLog", "describe", "parse_boundary"]

MAX_MESSAGE = 300
"""Longest library message quoted in an error (some libraries quote whole objects)."""
MAX_WARNINGS = 20
LOGGING_LIBRARIES = ("pypdf",)
"""Top-level loggers of the parsing libraries that report through ``logging``."""

_parse_records: ContextVar[list[logging.LogRecord] | None] = ContextVar(
    "taskctx_documents_parse_records", default=None
)


class _LibraryLogRouter(logging.Handler):
    """The one handler of a library's top logger (which no longer propagates): during a
    parse it keeps each record for the document's metadata and re-logs it at DEBUG;
    otherwise it hands the record to the root logger, as propagation would have."""

    def emit(self, record: logging.LogRecord) -> None:
        """Route one record (see the class)."""
        kept = _parse_records.get()
        if kept is None:
            logging.getLogger().handle(record)  # root's handlers, else the last resort
            return
        kept.append(record)
        library = record.name.split(".", 1)[0]
        logging.getLogger(f"taskctx_documents.{library}").debug(
            "%s: %s", record.name, record.getMessage()
        )


def _install_router() -> None:
    for name in LOGGING_LIBRARIES:
        logger = logging.getLogger(name)
        if not any(isinstance(h, _LibraryLogRouter) for h in logger.handlers):
            logger.addHandler(_LibraryLogRouter())
        logger.propagate = False


_install_router()


def describe(exc: BaseException) -> str:
    """``Type: message``, the message cut to :data:`MAX_MESSAGE` characters."""
    message = " ".join(str(exc).split())
    if len(message) > MAX_MESSAGE:
        message = message[: MAX_MESSAGE - 3] + "..."
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


class ParseLog:
    """Warnings caught during one parse, as ``Category: message`` strings."""

    __slots__ = ("_caught", "_logged")

    def __init__(
        self, caught: list[warnings.WarningMessage], logged: list[logging.LogRecord]
    ) -> None:
        self._caught = caught
        self._logged = logged

    def warnings(self) -> list[str]:
        """Distinct warnings and logged messages (``pypdf: ...``) in the order first seen,
        at most 20."""
        seen: dict[str, None] = {}
        texts = [f"{w.category.__name__}: {w.message}" for w in self._caught]
        texts += [f"{r.name.split('.', 1)[0]}: {r.getMessage()}" for r in self._logged]
        for text in texts:
            seen.setdefault(" ".join(text.split())[:MAX_MESSAGE], None)
            if len(seen) >= MAX_WARNINGS:
                break
        return list(seen)


@contextmanager
def parse_boundary(kind: str, path: str) -> Iterator[ParseLog]:
    """Run a parse of ``kind`` (``PDF``) for ``path``: record warnings, wrap exceptions."""
    logged: list[logging.LogRecord] = []
    token = _parse_records.set(logged)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield ParseLog(caught, logged)
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
        finally:
            _parse_records.reset(token)
