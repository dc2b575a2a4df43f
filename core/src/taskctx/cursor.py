"""Signed, snapshot-bound continuation cursors (HMAC-SHA256).

A cursor is ``<payload>.<signature>``, both base64url. The payload carries the
snapshot, the scope (a hash of the intent and whatever else the issuer binds), the
position and an expiry. Anything that does not verify raises :class:`CursorError`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import secrets
import time
from pathlib import Path
from typing import Any

from taskctx.errors import CursorError

__all__ = ["CursorSigner", "default_state_dir", "load_or_create_key"]

KEY_ENV = "TASKCTX_CURSOR_KEY"
STATE_DIR_ENV = "TASKCTX_STATE_DIR"


def default_state_dir() -> Path:
    """``$TASKCTX_STATE_DIR``, else ``$XDG_CACHE_HOME/taskctx``, else ``~/.cache/taskctx``."""
    explicit = os.environ.get(STATE_DIR_ENV)
    if explicit:
        return Path(explicit)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "taskctx"


def load_or_create_key(state_dir: Path) -> bytes:
    """The signing key: ``$TASKCTX_CURSOR_KEY``, else ``<state_dir>/cursor.key`` (made once).

    The key file is created atomically with mode 0600, so concurrent first uses agree
    on one key and a new process verifies the cursors an earlier one issued.
    """
    explicit = os.environ.get(KEY_ENV)
    if explicit:
        return explicit.encode()
    path = state_dir / "cursor.key"
    try:
        return _read_key(path)
    except FileNotFoundError:
        pass
    state_dir.mkdir(parents=True, exist_ok=True)
    tmp = state_dir / f".cursor.key.{os.getpid()}.{secrets.token_hex(4)}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, secrets.token_hex(32).encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)  # fails if another process won the race; theirs is used
    except FileExistsError:
        pass
    finally:
        tmp.unlink()
    return _read_key(path)


def _read_key(path: Path) -> bytes:
    data = path.read_bytes().strip()
    if len(data) < 32:
        raise CursorError(f"cursor key file {path} is truncated; delete it to make a new one")
    return data


def _b64encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _b64decode(text: str) -> bytes:
    padded = text + "=" * (-len(text) % 4)
    return base64.urlsafe_b64decode(padded.encode("ascii"))


class CursorSigner:
    """Issues and verifies cursors of one ``purpose`` with one key."""

    __slots__ = ("_key", "_purpose")

    def __init__(self, key: bytes, purpose: str) -> None:
        if not key:
            raise CursorError("a cursor key must not be empty")
        self._key = key
        self._purpose = purpose

    def _sign(self, payload: bytes) -> bytes:
        return hmac.new(
            self._key, self._purpose.encode() + b"\x00" + payload, hashlib.sha256
        ).digest()

    def issue(self, body: dict[str, Any], ttl_seconds: float) -> str:
        """Sign ``body`` with an expiry ``ttl_seconds`` from now."""
        payload = dict(body, exp=time.time() + ttl_seconds)
        raw = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
        return f"{_b64encode(raw)}.{_b64encode(self._sign(raw))}"

    def verify(self, cursor: str, *, now: float | None = None) -> dict[str, Any]:
        """Return the body of a valid cursor; raise CursorError saying what is wrong."""
        if not isinstance(cursor, str) or cursor.count(".") != 1:
            raise CursorError("malformed cursor: expected '<payload>.<signature>'")
        payload_text, signature_text = cursor.split(".")
        try:
            raw = _b64decode(payload_text)
            signature = _b64decode(signature_text)
        except (binascii.Error, ValueError, UnicodeEncodeError) as exc:
            raise CursorError(f"malformed cursor: {exc}") from None
        if not hmac.compare_digest(signature, self._sign(raw)):
            raise CursorError("cursor signature does not verify (tampered, or another key)")
        try:
            body = json.loads(raw)
        except ValueError as exc:
            raise CursorError(f"malformed cursor payload: {exc}") from None
        if not isinstance(body, dict) or not isinstance(body.get("exp"), (int, float)):
            raise CursorError("malformed cursor payload: no expiry")
        if (time.time() if now is None else now) > body["exp"]:
            raise CursorError("cursor expired; start a fresh query")
        return body
