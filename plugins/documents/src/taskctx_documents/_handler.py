"""The part every handler shares: its format facts, limits, cache version and boundary."""

from __future__ import annotations

from typing import ClassVar

from taskctx.protocols import ParsedDocument
from taskctx_documents._boundary import ParseLog, parse_boundary
from taskctx_documents.formats import Format
from taskctx_documents.limits import DocumentLimits, check_size
from taskctx_documents.ziputil import check_package

__all__ = ["HandlerBase"]


class HandlerBase:
    """A FileIOHandler skeleton: subclasses set the class facts and implement ``_parse``."""

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
            check_size(data, path, self.limits)
            if self.ZIP_PACKAGE:
                check_package(data, path, self.LABEL, self.limits)
            return self._parse(data, path, log)

    def _parse(self, data: bytes, path: str, log: ParseLog) -> ParsedDocument:
        raise NotImplementedError
