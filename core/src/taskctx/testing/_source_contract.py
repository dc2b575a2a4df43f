"""SourceContract: the protocol rules every ContextSource keeps, as a pytest base class."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

from taskctx.digests import SHA256_PREFIX, is_digest
from taskctx.dispatch import dispatch_read
from taskctx.errors import NotFoundError, PolicyError, StaleReaderError
from taskctx.media import MediaClass, classify, read_mismatch
from taskctx.model import (
    BINDING_ID_PATTERN,
    ContextRef,
    DescriptorPage,
    EnumerationRequest,
    ExactRead,
    Representation,
    SourceDescriptor,
)
from taskctx.plugins import PluginHost
from taskctx.policy import RunConfiguration
from taskctx.protocols import ContextSource
from taskctx.testing._common import run as _run
from taskctx.testing._common import sha256_of
from taskctx.testing._read_many import ReadManyRules

__all__ = ["SourceContract"]

_BINDING = "contract"
_NO_SUCH_PREFIX = "no/such/prefix-7f3a9c/"


class SourceContract(ReadManyRules):
    """The protocol rules every ContextSource keeps. Provide a ``source`` fixture.

    The source should hold at least two text items, ideally some in folders and some
    with sections, so that every rule has something to check. Set ``covers`` to the
    kind the subclass tests (``covers = "json_folder"``): the kit then checks that the
    fixture's source is of that kind, and a meta-test can find which kinds have a
    conformance test. Override :meth:`scoped_read_host` if the source's scoped refs
    are served by scoped readers another plugin registers.
    """

    max_pages = 100_000
    covers: str | None = None
    page_sizes: tuple[int, ...] = (1, 2, 3)
    limits: tuple[int, ...] = (0, 1, 2, 3)
    _scoped_host: PluginHost | None = None

    @pytest.fixture
    def source(self) -> ContextSource:
        """Override: return the source under test, holding at least two text items."""
        raise NotImplementedError("subclass SourceContract and define a `source` fixture")

    def scoped_read_host(self) -> PluginHost:
        """The host whose scoped readers serve scoped refs the source does not serve itself.

        The default has the kernel's built-ins only: the ``lines:A-B`` reader.
        """
        return PluginHost(allow=[], load_entrypoints=False)

    def rebuild_host(self) -> PluginHost:
        """The host whose factory ``test_rebuild_options_rebuild_the_source`` rebuilds the
        source with (default: from the environment). Without the kind, only the options'
        JSON-safety is checked."""
        return PluginHost.from_environment()

    # -- helpers -------------------------------------------------------------------------

    def _all(
        self,
        source: ContextSource,
        page_size: int = 500,
        *,
        path_prefix: str | None = None,
        revision: str | None = None,
    ) -> list[DescriptorPage]:
        pages: list[DescriptorPage] = []
        cursor: str | None = None
        for _ in range(self.max_pages):
            request = EnumerationRequest(
                cursor=cursor, page_size=page_size, path_prefix=path_prefix, revision=revision
            )
            page = _run(source.async_enumerate_descriptors(request))
            pages.append(page)
            if page.next_cursor is None:
                return pages
            assert page.next_cursor != cursor, "cursor did not advance"
            cursor = page.next_cursor
        raise AssertionError("enumeration did not end")

    def _descriptors(self, source: ContextSource, **request: Any) -> list[SourceDescriptor]:
        return [d for page in self._all(source, **request) for d in page.descriptors]

    @staticmethod
    def _readable(descriptor: SourceDescriptor) -> bool:
        """Whether the kernel would read this descriptor's content (not reference only)."""
        return descriptor.problem is None and (
            descriptor.representation is not Representation.REFERENCE_ONLY
        )

    def _whole_items(self, source: ContextSource) -> list[SourceDescriptor]:
        return [d for d in self._descriptors(source) if d.scope is None and self._readable(d)]

    @staticmethod
    def _read(
        source: ContextSource, path: str, limit: int | None = None, version: str | None = None
    ) -> ExactRead:
        ref = ContextRef(binding=_BINDING, path=path, version=version)
        return _run(source.async_read_exact(ref, limit))

    def _read_scoped(
        self, source: ContextSource, ref: ContextRef, media_type: str, limit: int | None
    ) -> ExactRead:
        """Read a scoped ref the way the kernel does: the source's own scoped read, else a
        registered scoped reader for the scope kind and media type, else the exact read.
        The kernel pins ``ref.version`` to the item's content version; pass it in ``ref``."""
        if self._scoped_host is None:
            self._scoped_host = self.scoped_read_host()
        read, _ = _run(dispatch_read(source, ref, media_type, limit, self._scoped_host))
        return read

    def _text_descriptors(self, source: ContextSource) -> list[SourceDescriptor]:
        found = []
        for descriptor in self._whole_items(source):
            if descriptor.chars == 0:
                continue
            read = self._read(source, descriptor.path)
            if read.text is not None and len(read.text) > 1:
                found.append(descriptor)
        assert found, "the source fixture must hold at least one text item of 2+ characters"
        return found

    # -- the source itself ---------------------------------------------------------------

    def test_kind_is_a_name(self, source: ContextSource) -> None:
        """The source is a ContextSource whose kind is a name usable as a binding id.

        ``ctx.attach(source)`` uses the kind as the default binding id, and the CLI's
        ``--source KIND:k=v`` splits at the first colon, so the kind matches the binding
        id pattern: a letter or digit, then letters, digits, ``_``, ``.``, ``-``.
        """
        assert isinstance(source, ContextSource)
        assert isinstance(source.kind, str)
        assert BINDING_ID_PATTERN.fullmatch(source.kind), f"kind {source.kind!r} is no name"

    def test_covers_the_declared_kind(self, source: ContextSource) -> None:
        """A subclass that declares ``covers`` tests a source of exactly that kind."""
        if self.covers is None:
            pytest.skip("the subclass declares no `covers` kind")
        assert source.kind == self.covers

    def test_with_configuration_keeps_the_source(self, source: ContextSource) -> None:
        """``with_configuration`` returns a source of the same kind holding the same items.

        Every configuration allowing all hosts is accepted; one allowing none is accepted
        or refused with PolicyError (a source that contacted a host). A source without
        the method is skipped here: a TaskContext restricting ``allowed_hosts`` refuses it.
        """
        method = getattr(source, "with_configuration", None)
        if not callable(method):
            pytest.skip("no with_configuration(): contexts restricting allowed_hosts refuse it")
        keys = [d.key for d in self._descriptors(source)]
        for configuration in (RunConfiguration(), RunConfiguration(allowed_hosts=())):
            try:
                governed = method(configuration)
            except PolicyError:
                if configuration.host_policy.unrestricted:
                    raise
                continue
            assert isinstance(governed, ContextSource), f"with_configuration gave {governed!r}"
            assert governed.kind == source.kind
            assert [d.key for d in self._descriptors(governed)] == keys

    def test_revision_is_a_non_empty_str(self, source: ContextSource) -> None:
        """``async_revision()`` returns a non-empty str."""
        revision = _run(source.async_revision())
        assert isinstance(revision, str)
        assert revision

    def test_revision_is_stable_while_nothing_changes(self, source: ContextSource) -> None:
        """Two revision calls with no change in between agree."""
        assert _run(source.async_revision()) == _run(source.async_revision())

    # -- enumeration ---------------------------------------------------------------------

    def test_pages_carry_the_revision(self, source: ContextSource) -> None:
        """Every descriptor page names the revision it was taken at, the current one."""
        revision = _run(source.async_revision())
        for page in self._all(source):
            assert page.revision == revision

    def test_enumeration_at_the_current_revision(self, source: ContextSource) -> None:
        """Asked for the current revision (as the kernel asks), the pages are the same."""
        revision = _run(source.async_revision())
        pinned = self._all(source, revision=revision)
        assert all(page.revision == revision for page in pinned)
        assert [d.key for page in pinned for d in page.descriptors] == [
            d.key for d in self._descriptors(source)
        ]

    def test_cursors_advance_and_end(self, source: ContextSource) -> None:
        """Paging a few descriptors at a time visits each descriptor once, in order, and ends."""
        whole = [d.key for d in self._descriptors(source)]
        for page_size in self.page_sizes:
            paged = [d.key for d in self._descriptors(source, page_size=page_size)]
            assert paged == whole, f"page_size={page_size} enumerates other descriptors"
            assert len(set(paged)) == len(paged), "a descriptor was enumerated twice"

    def test_page_size_is_honoured(self, source: ContextSource) -> None:
        """No page holds more descriptors than ``request.page_size`` asked for."""
        for page_size in (*self.page_sizes, 500):
            for page in self._all(source, page_size=page_size):
                assert len(page.descriptors) <= page_size, (
                    f"a page of {len(page.descriptors)} descriptors for page_size={page_size}"
                )

    def test_descriptor_keys_are_unique(self, source: ContextSource) -> None:
        """Across all pages, no two descriptors share a key ``(path, scope)``."""
        keys = [d.key for d in self._descriptors(source)]
        duplicates = sorted({k for k in keys if keys.count(k) > 1}, key=str)
        assert not duplicates, f"descriptor keys enumerated twice: {duplicates}"

    def test_path_prefix_is_honoured(self, source: ContextSource) -> None:
        """``request.path_prefix`` yields exactly the descriptors whose path starts with it."""
        whole = self._descriptors(source)
        prefixes = {_NO_SUCH_PREFIX}
        for descriptor in whole[:10]:
            prefixes.add(descriptor.path)
            prefixes.add(descriptor.path[:1])
            if "/" in descriptor.path:
                prefixes.add(descriptor.path.rsplit("/", 1)[0] + "/")
        for number, prefix in enumerate(sorted(prefixes)):
            expected = [d.key for d in whole if d.path.startswith(prefix)]
            for page_size in (1, 500) if number < 5 else (500,):
                found = self._descriptors(source, page_size=page_size, path_prefix=prefix)
                got = [d.key for d in found]
                assert got == expected, f"path_prefix={prefix!r} page_size={page_size}"

    def test_descriptors_round_trip_through_json(self, source: ContextSource) -> None:
        """Every page (descriptors, metadata included) survives a JSON round trip."""
        for page in self._all(source):
            assert DescriptorPage.model_validate_json(page.model_dump_json()) == page

    def test_descriptor_fields_are_typed(self, source: ContextSource) -> None:
        """Descriptor fields have their types: ``required`` a bool, ``summary`` None or text,
        a non-empty ``content_version``, a ``type/subtype`` media type, sizes >= 0."""
        for d in self._descriptors(source):
            where = f"descriptor {d.key}"
            assert isinstance(d.path, str)
            assert d.path, where
            assert isinstance(d.required, bool), f"{where}: required is not a bool"
            assert d.summary is None or (isinstance(d.summary, str) and d.summary.strip()), (
                f"{where}: summary must be None or non-blank text"
            )
            assert isinstance(d.content_version, str)
            assert d.content_version, f"{where}: empty content_version"
            assert "/" in d.media_type, f"{where}: media type {d.media_type!r}"
            assert d.title is None or isinstance(d.title, str)
            for name in ("chars", "size"):
                value = getattr(d, name)
                assert value is None or (isinstance(value, int) and value >= 0), f"{where}: {name}"
            assert d.scope is None or d.scope, f"{where}: empty scope"
            assert all(s.scope and s.title for s in d.sections), f"{where}: unnamed section"

    def test_refs_round_trip(self, source: ContextSource) -> None:
        """Every ref a descriptor offers (its path, its scope, its sections) survives
        ``ContextRef.parse(str(ref))``: refs are shown to models and come back as text."""
        for d in self._descriptors(source):
            scopes = {d.scope, *(s.scope for s in d.sections)}
            for scope in scopes:
                ref = ContextRef(binding=_BINDING, path=d.path, scope=scope)
                assert ContextRef.parse(str(ref)) == ref, f"{ref!r} does not round-trip"

    # -- exact reads ---------------------------------------------------------------------

    def test_exact_reads_match_ref_and_digest(self, source: ContextSource) -> None:
        """An exact read of a whole item returns the ref's path, no scope, all of the
        content, and ``digest`` = ``sha256:<64 hex>`` of the text (UTF-8) or of the bytes."""
        for descriptor in self._whole_items(source):
            read = self._read(source, descriptor.path)
            assert (read.path, read.scope) == (descriptor.path, None)
            assert is_digest(read.digest), f"digest {read.digest!r}"
            assert read.text is not None or read.data is not None, f"{descriptor.path}: empty"
            if read.text is not None:
                assert read.complete
                assert read.digest == sha256_of(read.text)
                assert read.chars_total in (None, len(read.text))
            else:
                assert read.data is not None
                assert read.digest == sha256_of(read.data)

    def test_content_versions_agree(self, source: ContextSource) -> None:
        """Every exact read of a whole item reports ``content_version``, the descriptor's: it
        is what proves the read came from the pinned snapshot. The kernel fails a read
        closed when it differs (``StaleReaderError``) or is missing (``UnverifiedReadError``)."""
        for descriptor in self._whole_items(source):
            for version in (None, descriptor.content_version):
                read = self._read(source, descriptor.path, version=version)
                where = f"{descriptor.path} (pinned {version!r})"
                assert read.content_version is not None, f"{where}: no content_version"
                assert read.content_version == descriptor.content_version, where

    def test_scoped_reads_report_the_version(self, source: ContextSource) -> None:
        """Every scope a descriptor offers, read as the kernel reads it (pinned to the
        item's content version), reports ``content_version``: the version of the whole-item
        bytes the scope was sliced from, which is the descriptor's. A scoped read that
        reports none, or another, cannot be proven to come from the snapshot."""
        for d in self._descriptors(source):
            if not self._readable(d):
                continue
            scopes = [d.scope] if d.scope is not None else [s.scope for s in d.sections]
            for scope in scopes:
                ref = ContextRef(
                    binding=_BINDING, path=d.path, scope=scope, version=d.content_version
                )
                read = self._read_scoped(source, ref, d.media_type, None)
                assert read.content_version is not None, f"{ref}: no content_version"
                assert read.content_version == d.content_version, (
                    f"{ref}: scoped read reports {read.content_version!r}, the item is "
                    f"{d.content_version!r}"
                )

    def test_reads_never_echo_a_foreign_pin(self, source: ContextSource) -> None:
        """A read pinned to a version the item never had either raises (StaleReaderError,
        NotFoundError) or reports the version it really read, never the pin it was handed:
        echoing ``ref.version`` back would let other bytes pass the kernel's check."""
        foreign = SHA256_PREFIX + "0" * 64
        for d in self._descriptors(source):
            if not self._readable(d):
                continue
            scopes = [d.scope] if d.scope is not None else [None, *(s.scope for s in d.sections)]
            for scope in scopes[:3]:
                ref = ContextRef(binding=_BINDING, path=d.path, scope=scope, version=foreign)
                try:
                    if scope is None:
                        read = _run(source.async_read_exact(ref, None))
                    else:
                        read = self._read_scoped(source, ref, d.media_type, None)
                except (StaleReaderError, NotFoundError):
                    continue
                assert read.content_version != foreign, f"{ref}: echoed the pinned version"

    def test_pinned_reads_match(self, source: ContextSource) -> None:
        """A ref pinned to the descriptor's content version (the kernel reads so) returns
        the same content as an unpinned read."""
        for descriptor in self._whole_items(source):
            plain = self._read(source, descriptor.path)
            pinned = self._read(source, descriptor.path, version=descriptor.content_version)
            assert (pinned.text, pinned.data, pinned.digest) == (
                plain.text,
                plain.data,
                plain.digest,
            ), descriptor.path

    def test_handed_texts_are_what_reads_give(self, source: ContextSource) -> None:
        """A page that hands over texts (``DescriptorPage.texts``) hands one per
        descriptor, each exactly the text a read of the descriptor's ref pinned at its
        content version returns: an index sync indexes it instead of that read."""
        for page in self._all(source):
            if page.texts is None:
                continue
            assert len(page.texts) == len(page.descriptors)
            for descriptor, text in zip(page.descriptors, page.texts, strict=True):
                if text is None:
                    continue
                ref = ContextRef(
                    binding=_BINDING,
                    path=descriptor.path,
                    scope=descriptor.scope,
                    version=descriptor.content_version,
                )
                read = self._read_scoped(source, ref, descriptor.media_type, None)
                assert read.content_version == descriptor.content_version, descriptor.path
                assert read.text == text, f"{descriptor.key}: the handed text is not the read's"

    def test_descriptor_chars_match_the_text(self, source: ContextSource) -> None:
        """A descriptor's ``chars`` (what budgets plan with) is the length of its text."""
        for descriptor in self._whole_items(source):
            if descriptor.chars is None:
                continue
            read = self._read(source, descriptor.path)
            if read.text is not None:
                assert descriptor.chars == len(read.text), descriptor.path

    def test_bounded_reads_are_honoured(self, source: ContextSource) -> None:
        """A read with a limit returns the first ``limit`` characters (cut at a character
        boundary, never more), says whether it is cut, and keeps the whole digest."""
        for descriptor in self._text_descriptors(source):
            whole = self._read(source, descriptor.path)
            text = whole.text or ""
            for limit in sorted({*self.limits, len(text) - 1, len(text), len(text) + 1}):
                cut = self._read(source, descriptor.path, limit)
                where = f"{descriptor.path} limit={limit}"
                assert cut.text is not None, where
                assert cut.text == text[:limit], where
                assert cut.complete is (limit >= len(text)), where
                assert cut.digest == whole.digest, f"{where}: the digest is of the whole content"
                assert cut.chars_total in (None, len(text)), where

    def test_scoped_refs_read_their_scope(self, source: ContextSource) -> None:
        """Every scope a descriptor offers (its own ``scope``, or a section's) reads back
        with that scope, the whole scoped text, its digest and honoured limits; read as the
        kernel reads it (the source's ``async_read_scoped``, else a registered scoped
        reader such as the kernel's ``lines:``, else ``async_read_exact``)."""
        for d in self._descriptors(source):
            if not self._readable(d):
                continue
            scopes = [d.scope] if d.scope is not None else [s.scope for s in d.sections]
            for scope in scopes:
                ref = ContextRef(binding=_BINDING, path=d.path, scope=scope)
                read = self._read_scoped(source, ref, d.media_type, None)
                where = str(ref)
                assert (read.path, read.scope) == (d.path, scope), f"{where} read {read.scope!r}"
                assert read.text is not None, f"{where}: no text"
                assert read.complete, where
                assert is_digest(read.digest), f"{where}: digest {read.digest!r}"
                assert read.digest == sha256_of(read.text), f"{where}: digest of the scoped text"
                cut = self._read_scoped(source, ref, d.media_type, 1)
                assert cut.text == read.text[:1], f"{where} limit=1"
                assert cut.digest == read.digest, f"{where} limit=1"

    # -- representation ------------------------------------------------------------------

    @staticmethod
    def _read_as_text(descriptor: SourceDescriptor) -> bool:
        """Whether the kernel reads this descriptor as text: plain text of a text media type,
        or parsed text of a document (or text) media type, with no problem."""
        if descriptor.problem is not None:
            return False
        media = classify(descriptor.path, descriptor.media_type).media_class
        if descriptor.representation is Representation.PARSED_TEXT:
            return media in (MediaClass.TEXT, MediaClass.DOCUMENT)
        return descriptor.representation is Representation.TEXT and media is MediaClass.TEXT

    def test_text_claims_fit_the_media(self, source: ContextSource) -> None:
        """A ``parsed_text`` descriptor has a document (or text) media type and no source
        claims ``lossy_digest``: the kernel refuses any other claim unread (an image's OCR
        text never enters as parsed text). A ``text`` claim on non-text media is decided by
        the media: the kernel never reads it as text."""
        for d in self._descriptors(source):
            media = classify(d.path, d.media_type).media_class
            where = f"descriptor {d.key} ({d.media_type}, {media.value})"
            assert d.representation is not Representation.LOSSY_DIGEST, f"{where}: lossy_digest"
            if d.representation is Representation.PARSED_TEXT and d.problem is None:
                assert media in (MediaClass.TEXT, MediaClass.DOCUMENT), f"{where}: parsed_text"

    def test_reads_back_the_claimed_representation(self, source: ContextSource) -> None:
        """Every read the kernel makes as text (whole or scoped) is text of the claimed
        representation, of a text media type, without NUL: plain text or bytes under a
        ``parsed_text`` claim, or bytes under a ``text`` claim, end as a ``read_failed``
        omission in every package (``taskctx.media.read_mismatch`` says why)."""
        for d in self._descriptors(source):
            if not self._read_as_text(d):
                continue
            ref = ContextRef(
                binding=_BINDING, path=d.path, scope=d.scope, version=d.content_version
            )
            if d.scope is None:
                read: ExactRead = _run(source.async_read_exact(ref, None))
            else:
                read = self._read_scoped(source, ref, d.media_type, None)
            problem = read_mismatch(d.representation, read)
            assert problem is None, f"{ref}: {problem}"

    def test_unknown_ref_raises_not_found(self, source: ContextSource) -> None:
        """Reading a ref the source does not hold raises NotFoundError."""
        ref = ContextRef(binding=_BINDING, path="no/such/item-7f3a9c.txt")
        with pytest.raises(NotFoundError):
            _run(source.async_read_exact(ref, None))

    def test_rebuild_options_rebuild_the_source(self, source: ContextSource) -> None:
        """rebuild_options() is JSON-safe and makes a source of the same identity and revision."""
        rebuild = getattr(source, "rebuild_options", None)
        if not callable(rebuild):
            pytest.skip("no rebuild_options(): a binding of it is exported as not rebuildable")
        options = rebuild()
        if options is None:
            pytest.skip("rebuild_options() says this instance cannot be made again")
        assert isinstance(options, Mapping), f"rebuild_options() returned {type(options)}"
        assert all(isinstance(key, str) for key in options), "option names must be str"
        text = json.dumps(dict(options), allow_nan=False)  # raises if not JSON-safe
        host = self.rebuild_host()
        if source.kind not in host.source_kinds():
            return  # the factory is not installed here: JSON-safety is what can be checked
        rebuilt = host.source(source.kind, **json.loads(text))
        assert getattr(rebuilt, "identity", None) == getattr(source, "identity", None)
        assert _run(rebuilt.async_revision()) == _run(source.async_revision())
