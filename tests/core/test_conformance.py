"""Every first-party source kind, FileIOHandler and IndexProvider runs its conformance kit.

The first-party plugins are loaded the way users get them, through their entry points;
their registrations are compared with the kit subclasses found in the test modules.
Each subclass names what it tests with ``covers = "<kind or name>"``, and the kit's own
``test_covers_the_declared_*`` rule checks that the fixture really is that thing. The
last tests show that the new source rules catch sources that break them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from taskctx import SectionInfo
from taskctx.errors import PolicyError
from taskctx.model import (
    ContextRef,
    DescriptorPage,
    EnumerationRequest,
    ExactRead,
    Representation,
    SourceDescriptor,
)
from taskctx.plugins import FIRST_PARTY_NAMES, PluginHost, PluginRecord, normalize_name
from taskctx.policy import RunConfiguration
from taskctx.sections import parse_line_scope, slice_lines
from taskctx.testing import MemorySource, SourceContract, make_png, sha256_of

TESTS = Path(__file__).resolve().parents[1]
FIRST_PARTY = (
    "taskctx-conversation",
    "taskctx-documents",
    "taskctx-fts",
    "taskctx-memory",
    "taskctx-records",
    "taskctx-repo",
    "taskctx-skills",
    "taskctx-workspace",
)
KITS = {
    "SourceContract": "source_kinds",
    "FileIOHandlerContract": "file_io_handlers",
    "IndexProviderContract": "index_providers",
}


class KitSubclass:
    """A class in a test module that subclasses one of the conformance kits."""

    def __init__(self, path: Path, name: str, kit: str, covers: str | None) -> None:
        self.path = path
        self.name = name
        self.kit = kit
        self.covers = covers

    def __repr__(self) -> str:
        return f"{self.path.relative_to(TESTS.parent)}::{self.name} ({self.kit})"


def _base_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _covers(node: ast.ClassDef) -> str | None:
    for statement in node.body:
        if (
            isinstance(statement, ast.Assign)
            and [_base_name(t) for t in statement.targets] == ["covers"]
            and isinstance(statement.value, ast.Constant)
            and isinstance(statement.value.value, str)
        ):
            return statement.value.value
    return None


def kit_subclasses() -> Iterator[KitSubclass]:
    """Every class in ``tests/**/test_*.py`` whose bases name a conformance kit."""
    for path in sorted(TESTS.rglob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            for base in node.bases:
                kit = _base_name(base)
                if kit in KITS:
                    yield KitSubclass(path, node.name, kit, _covers(node))


@pytest.fixture(scope="module")
def first_party() -> list[PluginRecord]:
    """Records of the kernel's built-ins and of every first-party plugin, loaded from
    their entry points."""
    host = PluginHost(allow=FIRST_PARTY)
    return [
        r
        for r in host.plugins()
        if r.builtin or (normalize_name(r.name) in FIRST_PARTY and r.status == "loaded")
    ]


def registered(records: list[PluginRecord], registry: str) -> dict[str, str]:
    """Name -> distribution of everything ``records`` registered in ``registry``."""
    return {name: r.name for r in records for name in r.registered.get(registry, ())}


def test_every_first_party_plugin_loads(first_party: list[PluginRecord]) -> None:
    """The eight first-party distributions load from their entry points, without errors."""
    loaded = {normalize_name(r.name) for r in first_party if not r.builtin}
    assert loaded == set(FIRST_PARTY)
    assert set(registered(first_party, "source_kinds")) == set(FIRST_PARTY_NAMES["source_kinds"])
    assert registered(first_party, "file_io_handlers")
    assert registered(first_party, "index_providers")
    assert set(registered(first_party, "request_filters")) == set(
        FIRST_PARTY_NAMES["request_filters"]
    )


def test_the_scan_finds_kit_subclasses() -> None:
    """The scan of the test modules sees subclasses of all three kits."""
    found = {subclass.kit for subclass in kit_subclasses()}
    assert found == set(KITS)


def test_every_kit_subclass_declares_what_it_covers() -> None:
    """Each kit subclass of the kernel's and first-party plugins' tests is collected by
    pytest (``Test*``) and says what it covers."""
    first_party_tests = (TESTS / "core", TESTS / "plugins")
    for subclass in kit_subclasses():
        if not any(subclass.path.is_relative_to(d) for d in first_party_tests):
            continue
        assert subclass.name.startswith("Test"), f"{subclass!r} is not collected by pytest"
        assert subclass.covers, f'{subclass!r} declares no `covers = "..."`'


@pytest.mark.parametrize("kit", sorted(KITS))
def test_every_first_party_implementation_has_a_conformance_test(
    kit: str, first_party: list[PluginRecord]
) -> None:
    """Every source kind / handler / provider a first-party plugin (or the kernel)
    registers is covered by a subclass of its conformance kit."""
    implementations = registered(first_party, KITS[kit])
    assert implementations, f"no first-party {KITS[kit]}"
    covered = {s.covers for s in kit_subclasses() if s.kit == kit}
    uncovered = {name: dist for name, dist in implementations.items() if name not in covered}
    assert not uncovered, f"no {kit} subclass covers {uncovered}"


# -- the kits catch what they claim to ------------------------------------------------


class IgnoresPrefix(MemorySource):
    """Drops ``path_prefix`` from every request."""

    async def async_enumerate_descriptors(self, request: EnumerationRequest) -> DescriptorPage:
        return await super().async_enumerate_descriptors(
            request.model_copy(update={"path_prefix": None})
        )


class OversizedPages(MemorySource):
    """Answers every request with one page holding every descriptor."""

    async def async_enumerate_descriptors(self, request: EnumerationRequest) -> DescriptorPage:
        return await super().async_enumerate_descriptors(
            request.model_copy(update={"page_size": 100_000, "cursor": None})
        )


class CutDigest(MemorySource):
    """Gives a cut read the digest of the cut text, not of the whole."""

    async def async_read_exact(self, ref: ContextRef, limit: int | None = None) -> ExactRead:
        read = await super().async_read_exact(ref, limit)
        if read.text is None:
            return read
        return read.model_copy(update={"digest": sha256_of(read.text)})


class DropsScope(MemorySource):
    """Offers ``page:`` sections that nothing serves."""

    def _descriptor(self, path: str, content: str | bytes) -> SourceDescriptor:
        descriptor = super()._descriptor(path, content)
        sections = (SectionInfo(title="Page 1", scope="page:1"),)
        return descriptor.model_copy(update={"sections": sections})


class NoVersion(MemorySource):
    """Reports no content version on whole reads."""

    async def async_read_exact(self, ref: ContextRef, limit: int | None = None) -> ExactRead:
        read = await super().async_read_exact(ref, limit)
        return read.model_copy(update={"content_version": None})


class ScopedWithoutVersion(MemorySource):
    """Serves line scopes itself and reports no content version for them."""

    async def async_read_scoped(self, ref: ContextRef, limit: int | None) -> ExactRead:
        whole = await super().async_read_exact(ref.with_scope(None), None)
        first, last = parse_line_scope(ref.scope or "")
        text = slice_lines(whole.text or "", first, last)
        return ExactRead.from_text(ref.path, text, limit, scope=ref.scope)


class ScopedVersionOfTheSlice(ScopedWithoutVersion):
    """Reports the digest of the slice as the content version of a scoped read."""

    async def async_read_scoped(self, ref: ContextRef, limit: int | None) -> ExactRead:
        read = await super().async_read_scoped(ref, limit)
        return read.model_copy(update={"content_version": read.digest})


class EchoesPin(MemorySource):
    """Hands the pinned version back as the content version, whatever it read."""

    async def async_read_exact(self, ref: ContextRef, limit: int | None = None) -> ExactRead:
        read = await super().async_read_exact(ref, limit)
        if ref.version is None:
            return read
        return read.model_copy(update={"content_version": ref.version})


class ClaimsParsedText(MemorySource):
    """Describes its text as parsed text but reads it back as plain text."""

    def _descriptor(self, path: str, content: str | bytes) -> SourceDescriptor:
        descriptor = super()._descriptor(path, content)
        return descriptor.model_copy(update={"representation": Representation.PARSED_TEXT})


class ReadsBytes(MemorySource):
    """Describes text but reads its bytes."""

    async def async_read_exact(self, ref: ContextRef, limit: int | None = None) -> ExactRead:
        read = await super().async_read_exact(ref, limit)
        data = (read.text or "").encode()
        return read.model_copy(update={"text": None, "data": data})


class ImageAsParsedText(MemorySource):
    """Describes a PNG as parsed text (its OCR, say)."""

    def _descriptor(self, path: str, content: str | bytes) -> SourceDescriptor:
        descriptor = super()._descriptor(path, content)
        if not path.endswith(".png"):
            return descriptor
        update = {"representation": Representation.PARSED_TEXT, "media_type": "image/png"}
        return descriptor.model_copy(update=update)


class HandsOtherTexts(MemorySource):
    """Hands its pages texts that are not what its reads return."""

    async def async_enumerate_descriptors(self, request: EnumerationRequest) -> DescriptorPage:
        page = await super().async_enumerate_descriptors(request)
        return page.model_copy(update={"texts": tuple(f"not {d.path}" for d in page.descriptors)})


ITEMS: dict[str, str | bytes] = {
    "notes/a.md": "# A\n\nalpha\n\n# B\n\nbeta\n",
    "b.txt": "beta",
    "c.txt": "gamma",
    "d.png": make_png(),
}


@pytest.mark.parametrize(
    ("source_class", "rule"),
    [
        (IgnoresPrefix, "test_path_prefix_is_honoured"),
        (OversizedPages, "test_page_size_is_honoured"),
        (CutDigest, "test_bounded_reads_are_honoured"),
        (DropsScope, "test_scoped_refs_read_their_scope"),
        (NoVersion, "test_content_versions_agree"),
        (ScopedWithoutVersion, "test_scoped_reads_report_the_version"),
        (ScopedVersionOfTheSlice, "test_scoped_reads_report_the_version"),
        (EchoesPin, "test_reads_never_echo_a_foreign_pin"),
        (ClaimsParsedText, "test_reads_back_the_claimed_representation"),
        (ReadsBytes, "test_reads_back_the_claimed_representation"),
        (ImageAsParsedText, "test_text_claims_fit_the_media"),
        (HandsOtherTexts, "test_handed_texts_are_what_reads_give"),
    ],
)
def test_source_rules_catch_broken_sources(source_class: type[MemorySource], rule: str) -> None:
    """A source that breaks a protocol rule fails that rule of SourceContract (and
    MemorySource itself keeps it)."""
    getattr(SourceContract(), rule)(MemorySource(ITEMS))
    with pytest.raises(AssertionError):
        getattr(SourceContract(), rule)(source_class(ITEMS))


class Governed(MemorySource):
    """Keeps itself under any configuration (it contacts no host)."""

    def with_configuration(self, configuration: RunConfiguration) -> MemorySource:
        return self


class GovernsIntoAnother(MemorySource):
    """Returns a different, empty source from with_configuration."""

    def with_configuration(self, configuration: RunConfiguration) -> MemorySource:
        return MemorySource({})


class RefusesEveryConfiguration(MemorySource):
    """Refuses even the configuration that allows every host."""

    def with_configuration(self, configuration: RunConfiguration) -> MemorySource:
        raise PolicyError("never governed")


@pytest.mark.parametrize("broken", [GovernsIntoAnother, RefusesEveryConfiguration])
def test_with_configuration_rule_catches_broken_sources(broken: type[MemorySource]) -> None:
    """with_configuration must keep the source's items and accept an unrestricted run."""
    SourceContract().test_with_configuration_keeps_the_source(Governed(ITEMS))
    with pytest.raises((AssertionError, PolicyError)):
        SourceContract().test_with_configuration_keeps_the_source(broken(ITEMS))


def test_source_kind_must_be_a_binding_id() -> None:
    """A kind that cannot be a binding id (a colon, a space) fails test_kind_is_a_name."""
    source = MemorySource(ITEMS)
    source.kind = "json folder:v2"
    with pytest.raises(AssertionError):
        SourceContract().test_kind_is_a_name(source)
