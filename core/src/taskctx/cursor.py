"""Signed, snapshot-bound continuation cursors (HMAC-SHA256).

A cursor is ``<payload>.<signature>``, both base64url. The payload carries the
snapshot, the scope (a hash of the intent and whatever else the issuer binds), the
position and an expiry. Anything that does not verify raises :class:`CursorError`.

A cursor's time to live is a finite number of seconds in ``(0, MAX_CURSOR_TTL]``
(:func:`check_ttl`); a cursor whose expiry is not a finite number, or lies further
ahead than that, does not verify.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import math
import os
import secrets
import time
from pathlib import Path
from typing import Any

from taskctx.errors import CursorError
from taskctx.jsonsafe import check_json_depth
from taskctx.statefiles import check_state_file

__all__ = [
    "MAX_CURSOR_TTL",
    "CursorSigner",
    "check_ttl",
    "load_or_create_key",
]

KEY_ENV = "TASKCTX_CURSOR_KEY"
MAX_CURSOR_TTL = 30 * 24 * 3600
"""The longest time to live a cursor may have: 30 days, in seconds."""
_CLOCK_SKEW = 300  # seconds another instance's clock may run ahead of ours


def check_ttl(ttl: object, what: str = "cursor_ttl") -> float:
    """``ttl`` as float seconds if it is a number in ``(0, MAX_CURSOR_TTL]``.

    TypeError for anything that is not an int or float (booleans and strings included),
    ValueError for NaN, infinities, zero, negative values and values over the maximum;
    both name ``what``. Call it where a caller hands a TTL in, before any work.
    """
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)):
        raise TypeError(f"{what} must be a number of seconds, not {type(ttl).__name__} {ttl!r}")
    try:
        seconds = float(ttl)
    except OverflowError:  # an int too large for a float
        seconds = math.inf
    if not math.isfinite(seconds) or not 0 < seconds <= MAX_CURSOR_TTL:
        raise ValueError(
            f"{what} must be a finite number of seconds greater than 0 and at most "
            f"{MAX_CURSOR_TTL} (30 days), not {ttl!r}"
        )
    return seconds


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def load_or_create_key(state_dir: Path) -> bytes:
    """The signing key: ``$TASKCTX_CURSOR_KEY``, else ``<state_dir>/cursor.key`` (made once).

    The key file is created exclusively (``O_EXCL``, never through a link) with mode 0600,
    so concurrent first uses agree on one key and a new process verifies the cursors an
    earlier one issued. A key file that is a symlink, a hard link or not a regular file is
    refused (:class:`~taskctx.errors.StatePathError`): whoever planted it could choose
    the key and forge cursors.
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
    key = secrets.token_hex(32).encode()
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
    try:
        fd = os.open(path, flags, 0o600)
    except FileExistsError:  # another process won the race: theirs is the key
        return _read_key(path)
    try:
        os.write(fd, key)
        os.fsync(fd)
    finally:
        os.close(fd)
    return key


_MAX_KEY_BYTES = 4096
_KEY_WRITE_WAIT_S = 2.0  # how long a reader waits for a concurrent creator's write
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def _read_key(path: Path) -> bytes:
    deadline = time.monotonic() + _KEY_WRITE_WAIT_S
    while True:
        check_state_file(path)
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
        try:
            data = os.read(fd, _MAX_KEY_BYTES).strip()
        finally:
            os.close(fd)
        if len(data) >= 32:
            return data
        if time.monotonic() >= deadline:  # not a creator still writing: a damaged file
            raise CursorError(f"cursor key file {path} is truncated; delete it to make a new one")
        time.sleep(0.005)


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
        """Sign ``body`` with an expiry ``ttl_seconds`` from now (see :func:`check_ttl`)."""
        check_json_depth(body, "cursor body")
        payload = dict(body, exp=time.time() + check_ttl(ttl_seconds, "ttl_seconds"))
        raw = json.dumps(payload, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()
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
            body = json.loads(raw, parse_constant=_refuse_constant)
        except ValueError as exc:
            raise CursorError(f"malformed cursor payload: {exc}") from None
        if not isinstance(body, dict):
            raise CursorError("malformed cursor payload: not a JSON object")
        expiry = body.get("exp")
        if isinstance(expiry, bool) or not isinstance(expiry, (int, float)):
            raise CursorError("malformed cursor payload: no expiry")
        current = time.time() if now is None else now
        if not math.isfinite(expiry) or expiry - current > MAX_CURSOR_TTL + _CLOCK_SKEW:
            raise CursorError(f"malformed cursor payload: expiry {expiry!r} is not a usable time")
        if current > expiry:
            raise CursorError("cursor expired; start a fresh query")
        return body
