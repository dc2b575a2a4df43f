"""The ``pinned_repository`` source: contract, scoped reads, media rules, links, submodules."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from taskctx_repo import PinnedRepository, RepoSource
from taskctx_repo.source import NAMES_NOT_UTF8

from taskctx import PluginHost, hookimpl
from taskctx.errors import NotFoundError, UnsupportedScopeError
from taskctx.media import HEAD_BYTES, handler_missing_message
from taskctx.model import (
    ContextRef,
    EnumerationRequest,
    ExactRead,
    Representation,
    SectionInfo,
    SourceDescriptor,
)
from taskctx.protocols import ContextSource, ParsedDocument
from taskctx.testing import SourceContract, sha256_of
from tests.plugins.repo.conftest import (
    FILES,
    GUIDE,
    PinFactory,
    Project,
    commit_all,
    git,
    make_repo,
    png_bytes,
    write_files,
)


def describe_all(source: RepoSource) -> dict[str, SourceDescriptor]:
    """Every descriptor of ``source`` by path."""
    page = asyncio.run(source.async_enumerate_descriptors(EnumerationRequest(page_size=10_000)))
    return {d.path: d for d in page.descriptors}


def scoped(source: RepoSource, path: str, scope: str | None, limit: int | None = None) -> ExactRead:
    """``async_read_scoped`` of ``path`` at ``scope``."""
    ref = ContextRef(binding="repo", path=path, scope=scope)
    return asyncio.run(source.async_read_scoped(ref, limit))


def exact(source: RepoSource, path: str, limit: int | None = None) -> ExactRead:
    """``async_read_exact`` of ``path``."""
    return asyncio.run(source.async_read_exact(ContextRef(binding="repo", path=path), limit))


class TestRepoSourceContract(SourceContract):
    """The pinned repository source keeps the kernel's source contract."""

    covers = "pinned_repository"

    @pytest.fixture
    def source(self, project: Project, pin: PinFactory) -> ContextSource:
        """The project's first commit, every path."""
        return pin(project.path, project.first).source()


class TestRepoSourceContractUnderGlobs(SourceContract):
    """The contract also holds for an authorised subset of the tree.

    The kit's unknown ref (``no/such/item-7f3a9c.txt``) must lie inside the globs: outside
    them every read is refused with PolicyError, whether or not the path exists.
    """

    covers = "pinned_repository"

    @pytest.fixture
    def source(self, project: Project, pin: PinFactory) -> ContextSource:
        """The project's docs, Python and text files."""
        return pin(project.path, project.first, ["docs/**", "**/*.py", "**/*.txt"]).source()


def test_the_host_builds_the_source_by_kind(project: Project) -> None:
    """``host.source("pinned_repository", ...)`` pins the commit with ``+``-separated globs."""
    host = PluginHost(allow=["taskctx-repo"])
    source = host.source(
        "pinned_repository",
        location=str(project.path),
        commit=project.first[:8],
        paths="docs/**+src/*.py",
    )
    assert isinstance(source, RepoSource)
    try:
        assert source.kind == "pinned_repository"
        assert source.describe() == {
            "location": str(project.path),
            "commit": project.first,
            "paths": ["docs/**", "src/*.py"],
        }
        assert sorted(describe_all(source)) == [
            "docs/api/reference.md",
            "docs/guide.md",
            "src/app.py",
            "src/empty.py",
        ]
    finally:
        source.repository.close()


def test_descriptors_describe_each_file(project: Project, pin: PinFactory) -> None:
    """Title, blob size, media type, characters and Markdown sections come with each file."""
    found = describe_all(pin(project.path).source())
    guide = found["docs/guide.md"]
    assert guide.title == "guide.md"
    assert guide.size == len(GUIDE.encode())
    assert guide.chars == len(GUIDE)
    assert guide.media_type == "text/markdown"
    assert guide.representation is Representation.TEXT
    assert [(s.title, s.level) for s in guide.sections] == [
        ("Guide", 1),
        ("Install", 2),
        ("Extras", 3),
        ("Usage", 2),
    ]
    assert found["src/app.py"].media_type == "text/x-python"
    assert found["notes.txt"].sections == ()
    assert all(d.problem is None for d in found.values())


# -- scoped reads ----------------------------------------------------------------------------


def test_line_ranges(project: Project, pin: PinFactory) -> None:
    """``lines:A-B`` returns those lines, keeping line ends, with the digest of the range."""
    source = pin(project.path).source()
    read = scoped(source, "notes.txt", "lines:2-4")
    assert read.text == "two\nthree\nfour\n"
    assert (read.path, read.scope) == ("notes.txt", "lines:2-4")
    assert read.digest == sha256_of("two\nthree\nfour\n")
    assert read.complete
    assert read.content_version == describe_all(source)["notes.txt"].content_version
    assert scoped(source, "notes.txt", "lines:5-9").text == "five\n"
    assert scoped(source, "notes.txt", "lines:40-50").text == ""


def test_markdown_sections_include_their_subsections(project: Project, pin: PinFactory) -> None:
    """``section:<heading>`` spans the heading to the next heading of its level or higher."""
    source = pin(project.path).source()
    install = scoped(source, "docs/guide.md", "section:Install")
    assert install.text is not None
    assert install.text.startswith("## Install\n")
    assert "### Extras" in install.text
    assert "The extras add retries." in install.text
    assert "## Usage" not in install.text
    assert install.scope == "section:Install"
    extras = scoped(source, "docs/guide.md", "section:Extras")
    assert extras.text == "### Extras\n\nThe extras add retries.\n\n"
    whole = scoped(source, "docs/guide.md", "section:Guide")
    assert whole.text == GUIDE


def test_section_scopes_match_the_descriptor_line_ranges(project: Project, pin: PinFactory) -> None:
    """The line range a descriptor lists for a heading reads the same text as its title."""
    source = pin(project.path).source()
    for section in describe_all(source)["docs/guide.md"].sections:
        by_lines = scoped(source, "docs/guide.md", section.scope)
        by_title = scoped(source, "docs/guide.md", f"section:{section.title}")
        assert by_lines.text == by_title.text
        assert len(by_lines.text or "") == section.chars


def test_scoped_reads_are_bounded(project: Project, pin: PinFactory) -> None:
    """A limit cuts the scoped text and says so; the digest is still of the whole range."""
    source = pin(project.path).source()
    whole = scoped(source, "docs/guide.md", "section:Usage")
    cut = scoped(source, "docs/guide.md", "section:Usage", limit=5)
    assert cut.text == (whole.text or "")[:5]
    assert cut.complete is False
    assert cut.digest == whole.digest
    assert cut.chars_total == len(whole.text or "")


def test_unknown_headings_are_not_found(project: Project, pin: PinFactory) -> None:
    """A heading the file does not have, or a file without headings, raises NotFoundError."""
    source = pin(project.path).source()
    with pytest.raises(NotFoundError, match="no heading"):
        scoped(source, "docs/guide.md", "section:Uninstall")
    with pytest.raises(NotFoundError):
        scoped(source, "notes.txt", "section:one")


@pytest.mark.parametrize(
    "scope", ["lines:x", "lines:4-2", "lines:0-3", "lines:2", "page:1", "sheet:A1", "Install"]
)
def test_bad_scopes_are_unsupported(project: Project, pin: PinFactory, scope: str) -> None:
    """Malformed line ranges and scopes the file has not raise UnsupportedScopeError."""
    with pytest.raises(UnsupportedScopeError):
        scoped(pin(project.path).source(), "docs/guide.md", scope)


def test_exact_reads_ignore_a_scope(project: Project, pin: PinFactory) -> None:
    """``async_read_exact`` always reads the whole file, even for a scoped ref."""
    source = pin(project.path).source()
    ref = ContextRef(binding="repo", path="docs/guide.md", scope="section:Install")
    read = asyncio.run(source.async_read_exact(ref))
    assert read.text == GUIDE
    assert read.scope is None
    assert [s.title for s in read.sections] == ["Guide", "Install", "Extras", "Usage"]


# -- media -----------------------------------------------------------------------------------

MEDIA: dict[str, str | bytes] = {
    "img/logo.png": png_bytes(),
    "dist/bundle.zip": b"PK\x03\x04" + bytes(60),
    "bin/tool": b"\x7fELF\x02\x01\x01" + bytes(range(256)),
    "data/blob.bin": bytes(range(256)),
    "src/main.py": "import sys\n\nprint(sys.argv)\n",
    "src/__init__.py": "",
    "src/main.go": "package main\n",
    "latin1.txt": "café au lait\n".encode("latin-1"),
    "late.txt": b"a" * (HEAD_BYTES + 100) + b"\xff\n",
    "bom.txt": b"\xef\xbb\xbfwith a byte order mark\n",
}


@pytest.fixture
def media_repo(tmp_path: Path) -> Path:
    """A repository holding images, archives, binaries, sources and broken text."""
    make_repo(tmp_path / "media", MEDIA)
    return tmp_path / "media"


@pytest.mark.parametrize(
    ("path", "media_type"),
    [
        ("img/logo.png", "image/png"),
        ("dist/bundle.zip", "application/zip"),
        ("bin/tool", None),
        ("data/blob.bin", "application/octet-stream"),
        ("latin1.txt", None),
    ],
)
def test_non_text_blobs_are_reference_only(
    media_repo: Path, pin: PinFactory, path: str, media_type: str | None
) -> None:
    """Images, archives, executables, unknown binaries and non-UTF-8 heads are never text."""
    source = pin(media_repo).source()
    descriptor = describe_all(source)[path]
    assert descriptor.representation is Representation.REFERENCE_ONLY
    assert descriptor.chars is None
    assert not descriptor.media_type.startswith("text/")
    if media_type is not None:
        assert descriptor.media_type == media_type
    read = exact(source, path)
    assert read.text is None
    assert read.representation is Representation.REFERENCE_ONLY
    assert read.data == (MEDIA[path] if isinstance(MEDIA[path], bytes) else None)
    assert read.digest == sha256_of(read.data or b"")
    # a scope over bytes that are not text is refused, never turned into text
    with pytest.raises(UnsupportedScopeError, match="reference only"):
        scoped(source, path, "lines:1-2")


@pytest.mark.parametrize(
    ("path", "media_type"),
    [("src/main.py", "text/x-python"), ("src/__init__.py", "text/x-python"), ("src/main.go", None)],
)
def test_source_code_is_text_empty_files_included(
    media_repo: Path, pin: PinFactory, path: str, media_type: str | None
) -> None:
    """Python and Go sources are text; an empty ``__init__.py`` is text with zero characters."""
    source = pin(media_repo).source()
    descriptor = describe_all(source)[path]
    assert descriptor.representation is Representation.TEXT
    assert descriptor.chars == len(str(MEDIA[path]))
    if media_type is not None:
        assert descriptor.media_type == media_type
    read = exact(source, path)
    assert read.text == MEDIA[path]
    assert read.complete


def test_invalid_utf8_past_the_head_is_invalid_text(media_repo: Path, pin: PinFactory) -> None:
    """A .txt whose bad byte lies past the sniffed head is reference only, problem invalid_text."""
    source = pin(media_repo).source()
    descriptor = describe_all(source)["late.txt"]
    assert descriptor.representation is Representation.REFERENCE_ONLY
    assert descriptor.problem is not None
    assert descriptor.problem.code == "invalid_text"
    assert "late.txt" in descriptor.problem.message
    read = exact(source, "late.txt")
    assert read.text is None
    assert read.data == MEDIA["late.txt"]


def test_a_byte_order_mark_is_dropped(media_repo: Path, pin: PinFactory) -> None:
    """UTF-8 with a BOM is text without the BOM."""
    assert exact(pin(media_repo).source(), "bom.txt").text == "with a byte order mark\n"


class _PdfHandler:
    """A FileIOHandler for test 'PDFs': the text after the first line, upper-cased."""

    name = "tiny-pdf"
    version = "1"
    suffixes = ("pdf",)
    media_types = ("application/pdf",)

    def parse(self, data: bytes, path: str) -> ParsedDocument:
        text = data.split(b"\n", 1)[-1].decode().upper()
        page = SectionInfo(title="Page 1", scope="page:1", chars=len(text), start=0, end=len(text))
        return ParsedDocument(text=text, media_type="application/pdf", sections=(page,))


class _PdfPlugin:
    @hookimpl
    def register_file_io_handlers(self, register: Any) -> None:
        register(_PdfHandler())


def _pdf_host() -> PluginHost:
    host = PluginHost(allow=[])
    host.register(_PdfPlugin(), name="tiny-pdf")
    return host


@pytest.fixture
def pdf_repo(tmp_path: Path) -> Path:
    """A repository holding one 'PDF' (a suffix and a magic number both say PDF)."""
    make_repo(tmp_path / "pdf", {"report.pdf": b"%PDF-1.4 test\nquarterly numbers"})
    return tmp_path / "pdf"


def test_documents_without_a_handler_are_reference_only(pdf_repo: Path, pin: PinFactory) -> None:
    """A PDF with no FileIOHandler is reference only, problem handler_missing."""
    descriptor = describe_all(pin(pdf_repo).source())["report.pdf"]
    assert descriptor.representation is Representation.REFERENCE_ONLY
    assert descriptor.problem is not None
    assert descriptor.problem.code == "handler_missing"
    assert descriptor.problem.message == handler_missing_message("report.pdf", "application/pdf")


def test_documents_with_a_handler_are_parsed_text(pdf_repo: Path, tmp_path: Path) -> None:
    """With a handler the document is parsed text, its own section scopes readable."""
    with PinnedRepository(pdf_repo, "HEAD", host=_pdf_host(), state_dir=tmp_path / "s") as repo:
        source = repo.source()
        descriptor = describe_all(source)["report.pdf"]
        assert descriptor.representation is Representation.PARSED_TEXT
        assert [s.scope for s in descriptor.sections] == ["page:1"]
        assert exact(source, "report.pdf").text == "QUARTERLY NUMBERS"
        assert scoped(source, "report.pdf", "page:1").text == "QUARTERLY NUMBERS"


def test_installing_a_handler_later_parses_the_document(pdf_repo: Path, pin: PinFactory) -> None:
    """Facts learnt without a handler do not stick once one is installed (same state dir)."""
    without = describe_all(pin(pdf_repo).source())["report.pdf"]
    assert without.representation is Representation.REFERENCE_ONLY
    with PinnedRepository(pdf_repo, "HEAD", host=_pdf_host()) as repo:
        source = repo.source()
        assert describe_all(source)["report.pdf"].representation is Representation.PARSED_TEXT
        assert exact(source, "report.pdf").text == "QUARTERLY NUMBERS"


# -- symlinks and submodules -----------------------------------------------------------------


@pytest.fixture
def linked(project: Project) -> Path:
    """The project with symlinks inside and outside the tree committed."""
    os.symlink("../secrets/token.txt", project.path / "docs" / "token-link.txt")
    os.symlink("/etc/passwd", project.path / "docs" / "passwd")
    os.symlink("guide.md", project.path / "docs" / "guide-link.md")
    commit_all(project.path, "links")
    return project.path


@pytest.mark.parametrize("link", ["docs/token-link.txt", "docs/passwd", "docs/guide-link.md"])
def test_symlinks_are_described_never_followed(linked: Path, pin: PinFactory, link: str) -> None:
    """A symlink is reference only with problem ``symlink``; reading it reads no target."""
    repo = pin(linked, paths=["docs/**"])
    source = repo.source()
    descriptor = describe_all(source)[link]
    assert descriptor.media_type == "inode/symlink"
    assert descriptor.representation is Representation.REFERENCE_ONLY
    assert descriptor.problem is not None
    assert descriptor.problem.code == "symlink"
    assert descriptor.chars is None
    with pytest.raises(NotFoundError, match="symlink"):
        exact(source, link)
    with pytest.raises(NotFoundError, match="symlink"):
        scoped(source, link, "lines:1-1")
    # the blob of a link is its target path, never the target's bytes
    assert repo.read_bytes(link) == os.readlink(linked / link).encode()


@pytest.fixture
def with_submodule(project: Project, tmp_path: Path) -> Path:
    """The project with a real submodule at ``vendor/lib`` committed."""
    library = tmp_path / "library"
    make_repo(library, {"lib.py": "SECRET_OF_THE_SUBMODULE = 1\n"})
    git(project.path, "submodule", "add", "-q", str(library), "vendor/lib")
    commit_all(project.path, "submodule")
    return project.path


def test_submodules_are_described_never_followed(with_submodule: Path, pin: PinFactory) -> None:
    """A submodule is one reference-only entry (problem ``submodule``); its files are absent."""
    repo = pin(with_submodule)
    source = repo.source()
    found = describe_all(source)
    assert "vendor/lib/lib.py" not in found
    descriptor = found["vendor/lib"]
    gitlink = git(with_submodule, "rev-parse", "HEAD:vendor/lib")
    assert descriptor.content_version == f"git:{gitlink}"
    assert descriptor.media_type == "application/x-git-submodule"
    assert descriptor.representation is Representation.REFERENCE_ONLY
    assert descriptor.problem is not None
    assert descriptor.problem.code == "submodule"
    assert found[".gitmodules"].representation is Representation.TEXT
    with pytest.raises(NotFoundError, match="submodule"):
        exact(source, "vendor/lib")
    with pytest.raises(NotFoundError, match="submodule"):
        repo.read_bytes("vendor/lib")
    with pytest.raises(NotFoundError):
        repo.read_bytes("vendor/lib/lib.py")


def test_a_page_of_links_and_submodules_reads_no_blob(
    with_submodule: Path, pin: PinFactory
) -> None:
    """Describing only a submodule and a symlink needs no blob: cat-file is not started."""
    os.symlink("README.md", with_submodule / "readme-link")
    commit_all(with_submodule, "link")
    repo = pin(with_submodule, paths=["vendor/lib", "readme-link"])
    assert sorted(describe_all(repo.source())) == ["readme-link", "vendor/lib"]
    assert repo.cat.started == 0


def test_files_written_after_the_commit_do_not_change_descriptors(
    project: Project, pin: PinFactory
) -> None:
    """Working-tree edits leave the source's descriptors and reads unchanged."""
    source = pin(project.path, project.first).source()
    before = describe_all(source)
    write_files(project.path, {"docs/guide.md": "# Other\n", "docs/new.md": "# New\n"})
    assert describe_all(source) == before
    assert exact(source, "docs/guide.md").text == FILES["docs/guide.md"]


def test_names_that_are_not_utf8_are_a_namespaced_coverage_code(
    project: Project, pin: PinFactory
) -> None:
    """A file name that is not UTF-8 is not offered, and the page says so with the code
    ``repo:names_not_utf8``, not a sentence in the reasons field."""
    name = os.path.join(os.fsencode(project.path), b"caf\xe9.txt")
    with open(name, "wb") as handle:
        handle.write(b"latin-1 name\n")
    commit_all(project.path, "a name that is not UTF-8")
    repo = pin(project.path)
    request = EnumerationRequest(page_size=10_000)
    page = asyncio.run(repo.source().async_enumerate_descriptors(request))
    assert page.reasons == (NAMES_NOT_UTF8,)
    assert NAMES_NOT_UTF8 == "repo:names_not_utf8"
    assert repo.unreadable_names == 1
    assert not any(d.path.startswith("caf") for d in page.descriptors)
