"""A file that changes between pinning and readback never mixes snapshots in a package.

Through a real TaskWorkspace: a file rewritten after enumeration (or while the first
index sync reads it) makes a scoped read (line range, Markdown section, document page)
fail closed, and the persistent index never keeps text under a version it was not made
from, so later readers deliver the file's current content.
"""

from __future__ import annotations

import random
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path

import attrs
import pytest
from taskctx_documents.testing import minimal_pdf
from taskctx_workspace import TaskWorkspace

from taskctx import (
    ContextBudget,
    ContextPackage,
    ContextReadIntent,
    ContextRef,
    PluginHost,
    StaleReaderError,
    TaskContext,
)
from taskctx.sections import markdown_sections
from tests.plugins.workspace.cued import (
    CuedSource,
    VersionedFile,
    content_version,
    mixed_blocks,
    numbered_lines,
)

BINDING = "ws"
MARKER, OTHER = "zebra", "quokka"
"""Version 1 holds MARKER in its second part; every other version holds OTHER there."""


def markdown_parts(number: int) -> bytes:
    """Three top-level sections of about 2,000 characters; part 2 names the marker."""
    word = MARKER if number == 1 else OTHER
    parts = []
    for part in (1, 2, 3):
        lines = [f"v{number:05d} part {part} line {n:02d} {'y' * 30}\n" for n in range(40)]
        if part == 2:
            lines[20] = f"v{number:05d} part 2 names the {word} here {'y' * 20}\n"
        parts.append(f"# Part {part}\n\n" + "".join(lines))
    return "\n".join(parts).encode()


def chunked_lines(number: int) -> bytes:
    """A long text file described in line chunks; line 100 (chunk 2) names the marker."""
    lines = numbered_lines(number).decode().splitlines(keepends=True)
    word = MARKER if number == 1 else OTHER
    lines[99] = f"v{number:05d} line 0100 names the {word} {'x' * 20}\n"
    return "".join(lines).encode()


def pdf_pages(number: int) -> bytes:
    """A real three-page PDF of about 3,000 characters a page; page 2 names the marker."""
    word = MARKER if number == 1 else OTHER
    pages = []
    for page in (1, 2, 3):
        lines = [f"v{number:05d} page {page} line {n:02d} {'z' * 30}" for n in range(60)]
        if page == 2:
            lines[30] = f"v{number:05d} page 2 names the {word} here"
        pages.append("\n".join(lines))
    return minimal_pdf(pages)


@attrs.define(frozen=True)
class Kind:
    """One kind of scoped part: the file that holds it and the scope of its part 2."""

    name: str
    render: Callable[[int], bytes]
    plugins: tuple[str, ...]

    def part_two(self, data: bytes) -> str:
        """The scope of the part that names the marker."""
        if self.name.endswith(".md"):
            return markdown_sections(data.decode())[1].scope
        if self.name.endswith(".pdf"):
            return "page:2"
        return "lines:72-142"  # a range inside the file, not a chunk the source describes


KINDS = [
    Kind("guide.md", markdown_parts, ()),
    Kind("long.txt", chunked_lines, ()),
    Kind("report.pdf", pdf_pages, ("taskctx-documents",)),
]


@attrs.define
class Setup:
    """A workspace holding one versioned file, a cued source over it and a context."""

    host: PluginHost
    root: Path
    file: VersionedFile
    source: CuedSource
    ctx: TaskContext


def make_setup(tmp_path: Path, kind: Kind, *, fts: bool = False, name: str = "ctx") -> Setup:
    """Version 1 of ``kind``'s file in a fresh workspace, read through a CuedSource."""
    plugins = (*kind.plugins, "taskctx-fts") if fts else kind.plugins
    host = PluginHost(allow=list(plugins))
    root = tmp_path / "ws"
    root.mkdir(exist_ok=True)
    file = VersionedFile(root / kind.name, kind.render, tmp_path / "scratch")
    file.write(1)
    source = CuedSource(TaskWorkspace(root, host=host))
    ctx = TaskContext("race", host=host, state_dir=tmp_path / name)
    ctx.attach(source, binding_id=BINDING)
    return Setup(host, root, file, source, ctx)


def fresh_context(setup: Setup, tmp_path: Path, name: str) -> TaskContext:
    """A new TaskContext over a new TaskWorkspace of the same folder (same host)."""
    ctx = TaskContext("later", host=setup.host, state_dir=tmp_path / name)
    ctx.attach(TaskWorkspace(setup.root, host=setup.host).source(), binding_id=BINDING)
    return ctx


def explicit(path: str, scope: str | None) -> ContextReadIntent:
    """A read of one explicit ref and nothing optional."""
    ref = ContextRef(binding=BINDING, path=path, scope=scope)
    return ContextReadIntent(query="", explicit_refs=(ref,), optional_selection="none")


def texts_of(package: ContextPackage, path: str) -> list[str]:
    """The contents of the package's blocks of ``path``."""
    return [b.content for b in package.blocks if b.ref.path == path]


# -- readback after a change ---------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_scoped_explicit_ref_after_a_change_fails_closed(tmp_path: Path, kind: Kind) -> None:
    """A file rewritten after enumeration fails the exact read of a scoped explicit ref
    (line range, Markdown section, PDF page) instead of delivering the new bytes under the
    old snapshot; after refresh() the package holds the new version, unmixed."""
    setup = make_setup(tmp_path, kind)
    scope = kind.part_two(setup.file.render(1))
    setup.source.after_enumeration.append(lambda: setup.file.write(2))
    reader = setup.ctx.reader("c", budget=ContextBudget(max_chars=20_000, max_blocks=4))
    with pytest.raises(StaleReaderError, match=re.escape(kind.name)):
        reader.read(explicit(kind.name, scope))
    reader.refresh()
    package = reader.read(explicit(kind.name, scope))
    (text,) = texts_of(package, kind.name)
    assert OTHER in text
    assert MARKER not in text
    assert "v00002" in text
    assert "v00001" not in text


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_optional_sections_after_a_change_fail_closed(tmp_path: Path, kind: Kind) -> None:
    """Optional scoped candidates (chunks, sections, pages the source describes) read after
    the file changed fail the read too: no block of new bytes under the old snapshot."""
    setup = make_setup(tmp_path, kind)
    setup.source.after_enumeration.append(lambda: setup.file.write(2))
    reader = setup.ctx.reader("c", budget=ContextBudget(max_chars=4500, max_blocks=4))
    with pytest.raises(StaleReaderError):
        reader.read("")
    assert setup.source.scoped_reads >= 1, "a scoped part was read"


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_scoped_reads_carry_the_pinned_version(tmp_path: Path, kind: Kind) -> None:
    """The kernel hands every scoped read the content version it pinned, so the source
    refuses other bytes before slicing or parsing them."""
    setup = make_setup(tmp_path, kind)
    scope = kind.part_two(setup.file.render(1))
    reader = setup.ctx.reader("c", budget=ContextBudget(max_chars=20_000, max_blocks=4))
    package = reader.read(explicit(kind.name, scope))
    assert texts_of(package, kind.name)
    assert setup.source.pins_seen == [content_version(setup.file.render(1))]


def test_whole_file_after_a_change_still_fails_closed(tmp_path: Path) -> None:
    """The whole-file read keeps failing closed (this held before; it must not regress)."""
    setup = make_setup(tmp_path, KINDS[1])
    setup.source.after_enumeration.append(lambda: setup.file.write(2))
    reader = setup.ctx.reader("c", budget=ContextBudget(max_chars=20_000, max_blocks=4))
    with pytest.raises(StaleReaderError, match=r"long\.txt"):
        reader.read(explicit("long.txt", None))


# -- the first index sync ------------------------------------------------------------------


def assert_later_readers_see_the_marker(setup: Setup, tmp_path: Path, kind: Kind) -> None:
    """A new TaskContext over a new TaskWorkspace finds the marker of the current content
    (version 1) in the part that holds it, and nothing of the other version."""
    ctx = fresh_context(setup, tmp_path, "later")
    package = ctx.reader("c", budget=ContextBudget(max_chars=4500, max_blocks=4)).read(MARKER)
    found = [text for text in texts_of(package, kind.name) if MARKER in text]
    assert found, f"no block of {kind.name} names {MARKER!r}: {package.omissions}"
    assert all(OTHER not in text for text in texts_of(package, kind.name))


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_change_during_first_sync_is_not_stored_under_the_old_version(
    tmp_path: Path, kind: Kind
) -> None:
    """The file flips to version 2 while the first sync reads its parts and back to
    version 1 (same bytes, same content version) right after: the parts read from
    version 2 are not indexed under version 1, and later readers find version 1's text."""
    setup = make_setup(tmp_path, kind, fts=True)
    setup.source.before_scoped[1] = lambda: setup.file.write(2)
    setup.source.after_scoped[2] = lambda: setup.file.write(1)
    reports = setup.ctx.sync_index()
    assert reports[BINDING].added >= 1
    assert setup.file.path.read_bytes() == setup.file.render(1)
    assert_later_readers_see_the_marker(setup, tmp_path, kind)


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_change_during_first_read_repins_once(tmp_path: Path, kind: Kind) -> None:
    """A change while the first read's sync indexes the file re-pins once: the package
    names the new revision and holds version 1's part with the marker, unmixed."""
    setup = make_setup(tmp_path, kind, fts=True)
    setup.source.before_scoped[1] = lambda: setup.file.write(2)
    setup.source.after_scoped[2] = lambda: setup.file.write(1)
    reader = setup.ctx.reader("c", budget=ContextBudget(max_chars=4500, max_blocks=4))
    package = reader.read(MARKER)
    texts = texts_of(package, kind.name)
    assert any(MARKER in text for text in texts), package.omissions
    assert all(OTHER not in text for text in texts)
    if not kind.name.endswith(".pdf"):
        assert mixed_blocks(setup.ctx, package, setup.file) == []
    assert_later_readers_see_the_marker(setup, tmp_path, kind)


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_continuous_change_during_sync_fails_closed_and_heals(tmp_path: Path, kind: Kind) -> None:
    """A file that changes before every part the sync reads fails the sync closed; once the
    writer stops, a new context over a new workspace delivers the current content."""
    setup = make_setup(tmp_path, kind, fts=True)
    for number in range(1, 40):
        setup.source.before_scoped[number] = lambda: setup.file.write()
    with pytest.raises(StaleReaderError, match="kept changing"):
        setup.ctx.sync_index()
    setup.file.write(1)
    assert_later_readers_see_the_marker(setup, tmp_path, kind)


# -- a real concurrent writer --------------------------------------------------------------


@pytest.mark.slow
def test_concurrent_writer_never_mixes_a_package(tmp_path: Path) -> None:
    """For about two seconds a writer thread rewrites a file (each version naming itself on
    every line) while packages are read of its line range, its chunks and the whole file:
    every package that is delivered holds exactly the bytes its snapshot names."""
    kind = Kind("big.txt", numbered_lines, ())
    setup = make_setup(tmp_path, kind, fts=True)
    stop = threading.Event()
    chance = random.Random(13)

    def writer() -> None:
        while not stop.is_set():
            setup.file.write()
            time.sleep(chance.uniform(0.0, 0.012))

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    delivered = stale = 0
    mixed: list[str] = []
    intents = [
        explicit("big.txt", "lines:120-122"),
        explicit("big.txt", None),
        ContextReadIntent(query="line"),
    ]
    started = time.monotonic()
    try:  # about two seconds; longer (at most eight) on a loaded machine, until 5 delivered
        while time.monotonic() - started < (2.0 if delivered >= 5 else 8.0):
            for intent in intents:
                reader = setup.ctx.reader("c", budget=ContextBudget(max_chars=20_000))
                try:
                    package = reader.read(intent)
                except StaleReaderError:
                    stale += 1
                    continue
                delivered += 1
                mixed += mixed_blocks(setup.ctx, package, setup.file)
    finally:
        stop.set()
        thread.join()
    assert setup.file.number > 20, "the writer hardly ran"
    assert delivered > 0, f"no package was delivered ({stale} stale)"
    assert mixed == [], f"{len(mixed)} mixed blocks in {delivered} packages: {mixed[:5]}"
