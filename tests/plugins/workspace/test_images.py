"""Workspace images: the kernel's one validation, reached through the workspace source."""

from __future__ import annotations

import asyncio
import importlib.util
import re
import zlib
from pathlib import Path

import pytest
from taskctx_workspace import TaskWorkspace

from taskctx import ContextConsumer, ContextReadIntent, ContextRef, PluginHost, TaskContext
from taskctx.errors import MediaError
from taskctx.testing import make_png
from tests.core import image_samples as samples
from tests.plugins.workspace.helpers import png_bytes

VISION = ContextConsumer(name="vision", capabilities={"attachments": {"image": True}})
VALID = png_bytes(16, 16)
BROKEN: list[tuple[str, bytes]] = [
    ("empty", b""),
    ("signature only", b"\x89PNG\r\n\x1a\n"),
    ("garbage after signature", b"\x89PNG\r\n\x1a\ngarbage" * 3),
    ("truncated", VALID[: len(VALID) // 2]),
    ("truncated before IEND", VALID[:-12]),
    ("corrupt pixels", make_png(4, 4, idat=zlib.compress(b"\x00" * 5))),
    ("bad zlib", make_png(4, 4, idat=b"not zlib data at all")),
    ("bomb", samples.png_bomb()),
    ("bomb with all its data", samples.png_1bit(16000, 16000)),
    ("truncated JPEG", samples.encoded("JPEG", (64, 64))[:200]),
    ("truncated GIF", samples.encoded("GIF", (64, 64))[:30]),
    ("GIF frame outside its screen", samples.gif_frame_outside()),
    ("WebP lying canvas", samples.webp_lying_canvas()),
]


def _context(root: Path) -> TaskContext:
    ctx = TaskContext("t", host=PluginHost(allow=[]), state_dir=root.parent / "state")
    ctx.attach(TaskWorkspace(root, host=ctx.host).source(), binding_id="files")
    return ctx


def _read(ctx: TaskContext, path: str) -> None:
    intent = ContextReadIntent(explicit_refs=[f"ctx://files/{path}"], optional_selection="none")
    ctx.reader(consumer=VISION).read(intent)


@pytest.mark.parametrize(("case", "data"), BROKEN, ids=[case for case, _ in BROKEN])
def test_broken_workspace_images_fail_with_invalid_image(
    tmp_path: Path, case: str, data: bytes
) -> None:
    """Empty, truncated, garbage, undecodable or bomb images in a workspace fail the read."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "pic.png").write_bytes(data)
    with pytest.raises(MediaError, match=re.escape("ctx://files/pic.png")) as caught:
        _read(_context(root), "pic.png")
    assert caught.value.code == "invalid_image", case


@pytest.mark.parametrize("fmt", ["GIF", "PNG", "WEBP"])
def test_animated_workspace_images_attach_whole(tmp_path: Path, fmt: str) -> None:
    """An animated GIF, APNG or WebP under the limits attaches; every frame was decoded."""
    root = tmp_path / "ws"
    root.mkdir()
    name = f"anim.{fmt.lower()}"
    (root / name).write_bytes(samples.animated(fmt, 12))
    ctx = _context(root)
    intent = ContextReadIntent(explicit_refs=[f"ctx://files/{name}"], optional_selection="none")
    (attachment,) = ctx.reader(consumer=VISION).read(intent).attachments
    assert (attachment.width, attachment.height) == (8, 6)


def test_the_workspace_source_hands_bytes_to_the_kernel_undecoded(tmp_path: Path) -> None:
    """The source's exact read returns the bomb's bytes as they are; it decodes nothing."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "bomb.png").write_bytes(samples.png_bomb())
    source = TaskWorkspace(root, host=PluginHost(allow=[])).source()
    read = asyncio.run(source.async_read_exact(ContextRef(binding="files", path="bomb.png")))
    assert read.data == samples.png_bomb()
    assert read.media_type == "image/png"


def test_the_workspace_keeps_no_image_validation_of_its_own() -> None:
    """Image validation lives only in the kernel (taskctx.images): no second copy."""
    assert importlib.util.find_spec("taskctx_workspace.images") is None
    assert importlib.util.find_spec("taskctx.images") is not None
