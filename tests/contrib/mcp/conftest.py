"""Fixtures of the taskctx-mcp tests: a real workspace and record store in tmp_path."""

from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path

import pytest
from taskctx_mcp import ContextService, ServerConfig

PLUGINS = ("taskctx-workspace", "taskctx-records", "taskctx-memory", "taskctx-fts")


def _png() -> bytes:
    """A valid 1x1 RGBA PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 6, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00\xff")
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


PNG = _png()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A workspace with text, code, an image, a hidden file and a link out of it."""
    root = tmp_path / "project"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "upload.md").write_text(
        "# Upload\n\nThe upload times out after 30 s.\n\n## Retry\n\nRetry twice.\n"
    )
    (root / "main.py").write_text("print('hello')\n")
    (root / "notes.txt").write_text("line one\nline two\nline three\n")
    (root / "chart.png").write_bytes(PNG)
    (root / ".env").write_text("SECRET=1\n")
    (tmp_path / "outside.txt").write_text("not yours\n")
    os.symlink(tmp_path / "outside.txt", root / "link.txt")
    return root


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    """A record store with one record of task review-42."""
    from taskctx_records import RecordStore

    root = tmp_path / "state"
    store = RecordStore(root)
    store.put(
        {"status": "failed", "reason": "upload times out after 30 s"},
        collection="observations",
        kind="review_result",
        scope={"task_id": "review-42"},
    )
    return root


def make_config(project: Path, state_dir: Path | None = None, **fields: object) -> ServerConfig:
    """A config binding ``project`` (and ``state_dir``) with the first-party plugins."""
    base = ServerConfig.model_validate({"plugins": list(PLUGINS), **fields})
    return ServerConfig.from_flags(
        workspace=[str(project)], records=[str(state_dir)] if state_dir else [], base=base
    )


@pytest.fixture
def service(project: Path, state_dir: Path) -> ContextService:
    """A service over the project workspace and the record store, two resources a page."""
    return ContextService.from_config(
        make_config(project, state_dir, resources={"page_size": 2, "poll_interval": 0})
    )
