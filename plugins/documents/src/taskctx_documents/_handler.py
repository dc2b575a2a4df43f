"""The part every handler shares: its format facts, limits, cache version and boundary."""

from __future__ import annotations

from typing import ClassVar

from taskctx.protocols import ParsedDocument
from taskctx_documents._boundary import ParseLog, parse_boundary
from taskctx_documents._inflate import Package, inflate_package
from taskctx_documents.formats import Format
from taskctx_documents.limits import Deadline, DocumentLimits, check_size
from taskctx_documents.ziputil import open_package

__all__ = ["HandlerBase"]


class HandlerBase:
    """A FileIOHandler skeleton: subclasses set the class facts and implement ``_parse``.

    :meth:`parse` starts one :class:`Deadline` for the whole parse. An OOXML package
    passes two gates before ``_parse`` hands it to a library: its central directory
    (:func:`~taskctx_documents.ziputil.open_package`), then every member inflated and
    every XML part pre-scanned (:func:`~taskctx_documents._inflate.inflate_package`),
    the parts the library keeps in memory held to the limits.
    """

    FORMAT: ClassVar[Format]
    LABEL: ClassVar[str]
    """Name of the format in messages (``PDF``)."""
    FORMAT_VERSION: ClassVar[str]
    """Bumped whenever the subclass changes the text or sections it produces."""
    LIBRARY: ClassVar[str]
    LIBRARY_VERSION: ClassVar[str]
    ZIP_PACKAGE: ClassVar[bool] = True
    """OOXML packages are checked by the bomb guard before the library sees them."""

    name: ClassVar[str]
    suffixes: ClassVar[tuple[str, ...]]
    media_types: ClassVar[tuple[str, ...]]

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        cls.name = cls.FORMAT.name
        cls.suffixes = cls.FORMAT.suffixes
        cls.media_types = cls.FORMAT.media_types

    def __init__(self, limits: DocumentLimits | None = None) -> None:
        self.limits = limits if limits is not None else DocumentLimits()

    @property
    def version(self) -> str:
        """Parse-cache key: the format version, the library's version and the limits
        (a result under other limits is another cache entry)."""
        return (
            f"{self.FORMAT_VERSION}+{self.LIBRARY}-{self.LIBRARY_VERSION}"
            f"+limits-{self.limits.fingerprint()}"
        )

    def parse(self, data: bytes, path: str) -> ParsedDocument:
        """Parsed text with sections; every failure is a ``MediaError`` with a code."""
        with parse_boundary(self.LABEL, path) as log:
            deadline = Deadline(self.limits.max_seconds, path)
            check_size(data, path, self.limits)
            if self.ZIP_PACKAGE:
                with open_package(data, path, self.LABEL, self.limits) as archive:
                    package = inflate_package(
                        archive, data, path, self.LABEL, self.limits, deadline
                    )
                    package.check_budgets(self._streamed_parts(package))
            return self._parse(data, path, log, deadline)

    def _streamed_parts(self, package: Package) -> frozenset[str]:
        """Members whose XML the library streams rather than keeps (none by default)."""
        return frozenset()

    def _parse(self, data: bytes, path: str, log: ParseLog, deadline: Deadline) -> ParsedDocument:
        raise NotImplementedError
