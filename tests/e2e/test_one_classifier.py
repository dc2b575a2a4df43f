"""One classifier decides text vs binary for read_file, every source and the kernel.

Issue 14 §2. A NUL byte anywhere makes would-be text binary, whether it lies inside the
sniffed head (:data:`taskctx.media.HEAD_BYTES`) or after it, and whoever holds the bytes:
``TaskWorkspace.read_file`` and ``list_files``, the workspace source, the pinned
repository, a bytes record, ``ctx.put`` of bytes. Every one says the same media type
and none delivers a NUL as text.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from taskctx_records import RecordStore
from taskctx_repo import PinnedRepository
from taskctx_workspace import TaskWorkspace

from taskctx import ContextReadIntent, PluginHost, TaskContext
from taskctx.media import HEAD_BYTES, OCTET_STREAM, MediaClass, classify_bytes, head_of
from taskctx.model import (
    ContextPackage,
    EnumerationRequest,
    OmissionReason,
    Representation,
    SourceDescriptor,
)
from taskctx.protocols import ContextSource
from tests.plugins.repo.conftest import git

FILES = {
    "nul-600.txt": b"a" * 600 + b"\x00" + b"tail\n",
    "nul-10000.txt": b"b" * 10_000 + b"\x00" + b"tail\n",
    "nul-10000.py": b"# code\n" + b"x = 1\n" * 2000 + b"\x00\n",
}
"""Files that look like text in their first 512 bytes; the later ones past the head too."""

CONTROL = b"c" * 10_000 + b"\n"
"""A long text file without NUL: text everywhere."""


def host() -> PluginHost:
    """A host that loads no entry-point plugin."""
    return PluginHost(allow=[])


def descriptors(source: ContextSource) -> dict[str, SourceDescriptor]:
    """The whole-item descriptors of ``source`` by path."""
    request = EnumerationRequest(page_size=10_000)
    page = asyncio.run(source.async_enumerate_descriptors(request))
    return {d.path: d for d in page.descriptors if d.scope is None}


def no_nul_delivered(package: ContextPackage, path: str) -> None:
    """``path`` is omitted by reference and no block of ``package`` holds a NUL."""
    assert all("\x00" not in block.content for block in package.blocks)
    assert path not in {block.ref.path for block in package.blocks}
    reasons = {o.reason for o in package.omissions if o.ref.path == path}
    assert reasons == {OmissionReason.REFERENCE_ONLY}


def read_everything(ctx: TaskContext) -> ContextPackage:
    """One page of every candidate of ``ctx``."""
    return ctx.reader(consumer="m").read(ContextReadIntent())


def test_the_kernel_sees_a_nul_anywhere() -> None:
    """classify_bytes: a NUL in or past the head is binary; a head-only decision says text
    past the head until the whole bytes are classified."""
    assert HEAD_BYTES == 8192
    for path, data in FILES.items():
        decision = classify_bytes(path, data)
        assert (decision.media_type, decision.media_class) == (OCTET_STREAM, MediaClass.BINARY)
        assert any("NUL byte at offset" in reason for reason in decision.reasons)
    assert classify_bytes("x.txt", FILES["nul-10000.txt"], whole=False).enters_as_text
    assert classify_bytes("x.txt", CONTROL).enters_as_text
    assert head_of(CONTROL) == CONTROL[:HEAD_BYTES]


@pytest.mark.parametrize("path", sorted(FILES))
def test_the_workspace_agrees_with_itself(tmp_path: Path, path: str) -> None:
    """read_file, list_files, the source's descriptor and its exact read all say binary."""
    (tmp_path / path).write_bytes(FILES[path])
    (tmp_path / "control.txt").write_bytes(CONTROL)
    workspace = TaskWorkspace(tmp_path, host=host())
    result = workspace.read_file(path)
    assert (result.media_type, result.representation) == (OCTET_STREAM, "reference_only")
    assert result.text is None
    listed = {entry.path: entry for entry in workspace.list_files()}[path]
    assert (listed.media_type, listed.representation) == (OCTET_STREAM, "reference_only")
    source = workspace.source()
    descriptor = descriptors(source)[path]
    assert (descriptor.media_type, descriptor.representation) == (
        OCTET_STREAM,
        Representation.REFERENCE_ONLY,
    )
    ctx = TaskContext("t", host=host())
    ctx.attach(source, binding_id="files")
    package = read_everything(ctx)
    no_nul_delivered(package, path)
    assert [block.ref.path for block in package.blocks] == ["control.txt"]
    assert workspace.read_file("control.txt").text == CONTROL.decode()


def test_the_pinned_repository_agrees(tmp_path: Path) -> None:
    """The repository source describes every NUL file as binary and delivers none of it."""
    root = tmp_path / "repo"
    root.mkdir()
    for path, data in FILES.items():
        (root / path).write_bytes(data)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "nul files")
    repository = PinnedRepository(root, "HEAD", ("**",), host=host())
    try:
        source = repository.source()
        found = descriptors(source)
        ctx = TaskContext("t", host=host())
        ctx.attach(source, binding_id="repo")
        package = read_everything(ctx)
    finally:
        repository.close()
    for path in FILES:
        assert (found[path].media_type, found[path].representation) == (
            OCTET_STREAM,
            Representation.REFERENCE_ONLY,
        )
        no_nul_delivered(package, path)


def test_direct_entries_agree() -> None:
    """ctx.put of the bytes is binary by the same rule: reference only, no NUL as text."""
    ctx = TaskContext("t", host=host())
    refs = {path: ctx.put(role="information", content=data) for path, data in FILES.items()}
    for ref in refs.values():
        entry = ctx.entries[ref.path]
        assert (entry.media_type, entry.media_class) == (OCTET_STREAM, MediaClass.BINARY)
    package = read_everything(ctx)
    assert package.blocks == ()


def test_records_agree(tmp_path: Path) -> None:
    """A bytes record is described as binary by the same rule; a text record holding a NUL
    is reference only with an invalid_text problem; neither delivers a NUL."""
    with RecordStore(tmp_path / "state", host=host()) as store:
        ids = {
            path: store.put(data, collection="files", scope={"task_id": "t"}).id
            for path, data in FILES.items()
        }
        text_id = store.put("before\x00after", collection="notes", scope={"task_id": "t"}).id
        source = store.source(scope={"task_id": "t"})
        found = descriptors(source)
        ctx = TaskContext("t", host=host())
        ctx.attach(source, binding_id="records")
        package = read_everything(ctx)
    for record_id in ids.values():
        assert (found[record_id].media_type, found[record_id].representation) == (
            OCTET_STREAM,
            Representation.REFERENCE_ONLY,
        )
        no_nul_delivered(package, record_id)
    problem = found[text_id].problem
    assert problem is not None
    assert problem.code == "invalid_text"
    assert "NUL character at offset 6" in problem.message
    assert package.blocks == ()
