"""A real workspace source with a writer on cue, and the check that a package is unmixed.

``CuedSource`` is the ``task_workspace`` source itself; it only runs cues (file rewrites)
at exact moments of a read: after an enumeration ended, or around the Nth scoped read.
That is a concurrent writer made deterministic. ``VersionedFile`` writes contents that
embed their version number and remembers every one, so a test can name the bytes a
content version stands for and check each delivered block against them.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs
from taskctx_workspace import TaskWorkspace
from taskctx_workspace.source import WorkspaceSource

from taskctx import ContextPackage, TaskContext
from taskctx.model import ContextRef, DescriptorPage, EnumerationRequest, ExactRead
from taskctx.sections import parse_line_scope, slice_lines

Cue = Callable[[], object]


class CuedSource(WorkspaceSource):
    """The workspace source, plus cues run after an enumeration or around scoped reads."""

    def __init__(self, workspace: TaskWorkspace) -> None:
        super().__init__(workspace)
        self.after_enumeration: list[Cue] = []
        self.before_scoped: dict[int, Cue] = {}
        self.after_scoped: dict[int, Cue] = {}
        self.scoped_reads = 0
        self.pins_seen: list[str | None] = []

    async def async_enumerate_descriptors(self, request: EnumerationRequest) -> DescriptorPage:
        """The real enumeration; when its last page is out, the next cue runs."""
        page = await super().async_enumerate_descriptors(request)
        if page.next_cursor is None and self.after_enumeration:
            self.after_enumeration.pop(0)()
        return page

    async def async_read_scoped(self, ref: ContextRef, limit: int | None) -> ExactRead:
        """The real scoped read; cues keyed by the read's number run before and after it."""
        self.scoped_reads += 1
        number = self.scoped_reads
        self.pins_seen.append(ref.version)
        if number in self.before_scoped:
            self.before_scoped.pop(number)()
        try:
            return await super().async_read_scoped(ref, limit)
        finally:
            if number in self.after_scoped:
                self.after_scoped.pop(number)()

    async def async_read_exact_many(
        self, refs: Sequence[ContextRef], limit: int | None = None
    ) -> list[ExactRead | Exception]:
        """The real batched read (one read of each file for all its parts); the cues of the
        scoped reads it stands for run before and after it."""
        numbers = []
        for ref in refs:
            if ref.scope is not None:
                self.scoped_reads += 1
                numbers.append(self.scoped_reads)
                self.pins_seen.append(ref.version)
        for number in numbers:
            if number in self.before_scoped:
                self.before_scoped.pop(number)()
        try:
            return await super().async_read_exact_many(refs, limit)
        finally:
            for number in numbers:
                if number in self.after_scoped:
                    self.after_scoped.pop(number)()


def content_version(data: bytes) -> str:
    """The workspace's content version of ``data``."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


@attrs.define(slots=True)
class VersionedFile:
    """One workspace file whose every written content is remembered by content version.

    Writes are atomic (a temporary file outside the root, then ``os.replace``), so every
    state a reader can see is one whole version.
    """

    path: Path
    render: Callable[[int], bytes]
    scratch: Path
    number: int = 0
    by_version: dict[str, bytes] = attrs.field(factory=dict)

    def write(self, number: int | None = None) -> bytes:
        """Write version ``number`` (default: the next one); returns its bytes."""
        if number is None:
            number = self.number + 1
        self.number = number
        data = self.render(number)
        self.by_version[content_version(data)] = data
        self.scratch.mkdir(parents=True, exist_ok=True)
        temp = self.scratch / f"{self.path.name}.{number}.tmp"
        temp.write_bytes(data)
        os.replace(temp, self.path)
        return data


def numbered_lines(number: int, lines: int = 300) -> bytes:
    """A text file whose every line names its version and its line number."""
    body = "".join(f"v{number:05d} line {n:04d} {'x' * 40}\n" for n in range(1, lines + 1))
    return body.encode()


def pinned_version(ctx: TaskContext, package: ContextPackage, binding: str, path: str) -> str:
    """The content version of ``path`` at the revision ``package.snapshot`` names for
    ``binding``, from the index partition synced to that revision."""
    revision = package.snapshot.sources[binding]
    for state in ctx.index.states.values():
        if state.key.binding_id == binding:
            assert state.revision == revision, "the partition moved past the package's snapshot"
            return state.descriptors[(path, None)].content_version
    raise AssertionError(f"no partition for binding {binding!r}")


def mixed_blocks(ctx: TaskContext, package: ContextPackage, file: VersionedFile) -> list[str]:
    """The refs of text blocks of ``file`` whose content is not the bytes of the version
    the package's snapshot names (whole, or the lines their scope names)."""
    rel = file.path.name
    blocks = [b for b in package.blocks if b.ref.path == rel]
    if not blocks:
        return []
    binding = blocks[0].binding_id
    text = file.by_version[pinned_version(ctx, package, binding, rel)].decode()
    mixed = []
    for block in blocks:
        if block.ref.scope is None:
            expected = text
        else:
            first, last = parse_line_scope(block.ref.scope)
            expected = slice_lines(text, first, last)
        if block.content != expected:
            mixed.append(str(block.ref))
    return mixed
