"""The one digest helper: ``taskctx.sha256_digest`` owns the ``sha256:<hex>`` format."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

import taskctx
from taskctx import ExactRead, sha256_digest, sha256_hex
from taskctx.digests import DIGEST_PATTERN, SHA256_PREFIX, is_digest

ROOT = Path(__file__).resolve().parents[2]
_SPELLED = re.compile(r"""["']sha256:["']\s*\+\s*hashlib|f["']sha256:\{hashlib""")


def _shipped_files() -> list[Path]:
    """Every shipped Python module, template file and doc page."""
    found = [
        *(ROOT / "core" / "src").rglob("*.py"),
        *(ROOT / "plugins").glob("*/src/**/*.py"),
        *(ROOT / "cookiecutter-source-plugin").rglob("*.py"),
        *(ROOT / "docs").rglob("*.md"),
        ROOT / "README.md",
    ]
    return sorted(path for path in found if path.is_file())


@pytest.mark.parametrize(
    ("data", "raw"),
    [
        (b"", b""),
        (b"\x00\xff bytes", b"\x00\xff bytes"),
        ("", b""),
        ("plain", b"plain"),
        ("ünïcødé ✓", "ünïcødé ✓".encode()),
        (bytearray(b"abc"), b"abc"),
        (memoryview(b"abc"), b"abc"),
    ],
)
def test_digest_of_bytes_and_text(data: bytes | str, raw: bytes) -> None:
    """Bytes hash as they are, text as UTF-8; the digest is ``sha256:`` and the bare hex."""
    hex_digest = hashlib.sha256(raw).hexdigest()
    assert sha256_hex(data) == hex_digest
    assert sha256_digest(data) == "sha256:" + hex_digest
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", sha256_digest(data))


@pytest.mark.parametrize("bad", [None, 7, 1.5, ["a"], {"a": 1}, object()])
def test_digest_refuses_other_types(bad: object) -> None:
    """Anything but bytes or str is a TypeError naming the type it got."""
    with pytest.raises(TypeError, match=type(bad).__name__):
        sha256_digest(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=type(bad).__name__):
        sha256_hex(bad)  # type: ignore[arg-type]


def test_digest_helper_is_exported() -> None:
    """A plugin author imports the helper from ``taskctx`` itself, not a test module."""
    assert {"sha256_digest", "sha256_hex"} <= set(taskctx.__all__)


def test_exact_read_digests_use_the_helper() -> None:
    """``ExactRead.from_text`` and ``from_bytes`` digest the whole content with the helper."""
    assert ExactRead.from_text("a.txt", "hello", 2).digest == sha256_digest("hello")
    assert ExactRead.from_bytes("a.bin", b"\x00\x01").digest == sha256_digest(b"\x00\x01")


def test_no_shipped_code_spells_the_digest_format() -> None:
    """No shipped module, template or doc writes ``"sha256:" + hashlib...`` by hand."""
    spelled = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in _shipped_files()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if _SPELLED.search(line)
    ]
    assert spelled == []


@pytest.mark.parametrize(
    "value",
    [
        sha256_digest(b""),
        sha256_digest("text"),
        SHA256_PREFIX + "0" * 64,
    ],
)
def test_is_digest_accepts_the_one_format(value: str) -> None:
    """``sha256:`` and 64 lower-case hex digits is a digest, whatever it was made from."""
    assert is_digest(value)
    assert DIGEST_PATTERN.fullmatch(value)


@pytest.mark.parametrize(
    "value",
    [
        "",
        "0" * 64,  # no prefix
        "sha256:",
        "sha256:" + "0" * 63,
        "sha256:" + "0" * 65,
        "sha256:" + "A" * 64,  # upper-case hex
        "sha256:" + "g" * 64,
        "SHA256:" + "0" * 64,
        "sha512:" + "0" * 64,
        " sha256:" + "0" * 64,
        "sha256:" + "0" * 64 + "\n",
        "sha256:" + "٠" * 64,  # Arabic-Indic zeros are digits to str.isdigit, not hex here
    ],
)
def test_is_digest_refuses_every_other_text(value: str) -> None:
    """A missing or other prefix, a wrong length, other characters or padding is no digest."""
    assert not is_digest(value)


@pytest.mark.parametrize(
    "value", [None, 0, b"sha256:" + b"0" * 64, ["sha256:" + "0" * 64], object()]
)
def test_is_digest_is_false_for_non_strings(value: object) -> None:
    """Anything but a str is no digest (False, never a TypeError from the regex)."""
    assert is_digest(value) is False
