"""Cursor signing: keys shared across processes, tampering, expiry."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from taskctx.cursor import CursorSigner, load_or_create_key
from taskctx.errors import CursorError


def test_key_file_is_created_once_and_private(tmp_path: Path) -> None:
    """The first use creates a 0600 key file; later uses read the same key."""
    first = load_or_create_key(tmp_path)
    assert load_or_create_key(tmp_path) == first
    assert (tmp_path / "cursor.key").stat().st_mode & 0o777 == 0o600


def test_concurrent_first_use_agrees_on_one_key(tmp_path: Path) -> None:
    """Processes racing to create the key all end up with the same one."""
    code = (
        "import sys; from pathlib import Path; from taskctx.cursor import load_or_create_key;"
        "print(load_or_create_key(Path(sys.argv[1])).decode())"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE)
        for _ in range(6)
    ]
    keys = {proc.communicate()[0].strip() for proc in procs}
    assert len(keys) == 1
    assert not [p for p in tmp_path.iterdir() if p.name != "cursor.key"]


def test_truncated_key_file_is_refused(tmp_path: Path) -> None:
    """A damaged key file is an error naming the file, not a weak key."""
    (tmp_path / "cursor.key").write_text("short")
    with pytest.raises(CursorError, match="truncated"):
        load_or_create_key(tmp_path)


def test_environment_key_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """TASKCTX_CURSOR_KEY is used as is and no key file is written."""
    monkeypatch.setenv("TASKCTX_CURSOR_KEY", "k" * 40)
    assert load_or_create_key(tmp_path) == b"k" * 40
    assert not (tmp_path / "cursor.key").exists()


def test_round_trip_and_purpose_binding() -> None:
    """A cursor verifies under its own purpose and key only."""
    signer = CursorSigner(b"a" * 32, "reader")
    cursor = signer.issue({"position": 3}, ttl_seconds=60)
    assert signer.verify(cursor)["position"] == 3
    with pytest.raises(CursorError, match="signature"):
        CursorSigner(b"a" * 32, "records").verify(cursor)
    with pytest.raises(CursorError, match="signature"):
        CursorSigner(b"b" * 32, "reader").verify(cursor)


@pytest.mark.parametrize("bad", ["", "abc", "a.b.c", "!!!.???", "e30.e30"])
def test_malformed_cursors_raise_cursor_error(bad: str) -> None:
    """Garbage is a CursorError, never another exception."""
    with pytest.raises(CursorError):
        CursorSigner(b"a" * 32, "reader").verify(bad)


def test_expiry_is_checked() -> None:
    """A cursor is refused after its expiry."""
    signer = CursorSigner(b"a" * 32, "reader")
    cursor = signer.issue({}, ttl_seconds=10)
    body = signer.verify(cursor)
    with pytest.raises(CursorError, match="expired"):
        signer.verify(cursor, now=body["exp"] + 1)
