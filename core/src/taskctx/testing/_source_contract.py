"""SourceContract: the protocol rules every ContextSource keeps, as a pytest base class."""

from __future__ import annotations

import pytest

from taskctx.errors import NotFoundError
from taskctx.model import ContextRef, DescriptorPage, EnumerationRequest, SourceDescriptor
from taskctx.protocols import ContextSource
from taskctx.testing._common import run as _run
from taskctx.testing._common import sha256_of

__all__ = ["SourceContract"]


class SourceContract:
    """The protocol rules every ContextSource keeps. Provide a ``source`` fixture."""

    max_pages = 100_000

    @pytest.fixture
    def source(self) -> ContextSource:
        """Override: return the source under test, holding at least two text items."""
        raise NotImplementedError("subclass SourceContract and define a `source` fixture")

    def _all(self, source: ContextSource, page_size: int = 500) -> list[DescriptorPage]:
        pages: list[DescriptorPage] = []
        cursor: str | None = None
        for _ in range(self.max_pages):
            page = _run(
                source.async_enumerate_descriptors(
                    EnumerationRequest(cursor=cursor, page_size=page_size)
                )
            )
            pages.append(page)
            if page.next_cursor is None:
                return pages
            assert page.next_cursor != cursor, "cursor did not advance"
            cursor = page.next_cursor
        raise AssertionError("enumeration did not end")

    def _text_descriptors(self, source: ContextSource) -> list[SourceDescriptor]:
        found = []
        for page in self._all(source):
            for descriptor in page.descriptors:
                if descriptor.scope is not None or descriptor.chars == 0:
                    continue
                ref = ContextRef(binding="contract", path=descriptor.path)
                read = _run(source.async_read_exact(ref, None))
                if read.text is not None and len(read.text) > 1:
                    found.append(descriptor)
        assert found, "the source fixture must hold at least one text item of 2+ characters"
        return found

    def test_kind_is_a_name(self, source: ContextSource) -> None:
        """The source names its kind."""
        assert isinstance(source.kind, str)
        assert source.kind

    def test_revision_is_stable_while_nothing_changes(self, source: ContextSource) -> None:
        """Two revision calls with no change in between agree."""
        assert _run(source.async_revision()) == _run(source.async_revision())

    def test_pages_carry_the_revision(self, source: ContextSource) -> None:
        """Every descriptor page names the revision it was taken at, the current one."""
        revision = _run(source.async_revision())
        for page in self._all(source):
            assert page.revision == revision

    def test_cursors_advance_and_end(self, source: ContextSource) -> None:
        """Paging one descriptor at a time visits each descriptor once and ends."""
        whole = [d.key for page in self._all(source) for d in page.descriptors]
        paged = [d.key for page in self._all(source, page_size=1) for d in page.descriptors]
        assert paged == whole
        assert len(set(paged)) == len(paged), "a descriptor was enumerated twice"

    def test_exact_reads_match_ref_and_digest(self, source: ContextSource) -> None:
        """An exact read returns the ref's path and scope, the digest of its content."""
        for descriptor in self._text_descriptors(source):
            ref = ContextRef(binding="contract", path=descriptor.path)
            read = _run(source.async_read_exact(ref, None))
            assert (read.path, read.scope) == (descriptor.path, None)
            assert read.complete
            assert read.text is not None
            assert read.digest == sha256_of(read.text)
            assert read.chars_total in (None, len(read.text))
            if read.content_version is not None:
                assert read.content_version == descriptor.content_version

    def test_bounded_reads_are_honoured(self, source: ContextSource) -> None:
        """A read with a limit returns at most that many characters and says it is cut."""
        for descriptor in self._text_descriptors(source):
            ref = ContextRef(binding="contract", path=descriptor.path)
            whole = _run(source.async_read_exact(ref, None))
            cut = _run(source.async_read_exact(ref, 1))
            assert cut.text is not None
            assert len(cut.text) <= 1
            assert cut.text == (whole.text or "")[:1]
            assert cut.complete is False
            assert cut.digest == whole.digest, "the digest is of the whole content"

    def test_unknown_ref_raises_not_found(self, source: ContextSource) -> None:
        """Reading a ref the source does not hold raises NotFoundError."""
        ref = ContextRef(binding="contract", path="no/such/item-7f3a9c.txt")
        with pytest.raises(NotFoundError):
            _run(source.async_read_exact(ref, None))
