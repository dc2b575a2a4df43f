"""Cursor lifetimes: TTLs that are not a finite positive number of seconds are refused
wherever a caller hands one in, and a cursor without a finite expiry never verifies."""

from __future__ import annotations

import base64
import hashlib
import hmac
import math
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from taskctx_records import RecordStore

from taskctx import ContextBudget, PluginHost, TaskContext
from taskctx.cursor import MAX_CURSOR_TTL, CursorSigner, check_ttl
from taskctx.errors import CursorError
from taskctx.testing import MemorySource

KEY = b"k" * 32

NOT_FINITE_OR_NOT_POSITIVE = [
    math.nan,
    -math.nan,
    math.inf,
    -math.inf,
    -1,
    -0.5,
    0,
    0.0,
    -0.0,
    MAX_CURSOR_TTL + 1,
    1e308,
    10**400,
]
NOT_NUMBERS = [True, False, "3600", "nan", None, b"60", Decimal("60"), [60], {"ttl": 60}]


def b64(data: bytes) -> str:
    """base64url without padding, as cursors are written."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def forge(payload: bytes, purpose: str = "reader", key: bytes = KEY) -> str:
    """A cursor over ``payload`` carrying a valid HMAC-SHA256 signature of ``key``."""
    signature = hmac.new(key, purpose.encode() + b"\x00" + payload, hashlib.sha256).digest()
    return f"{b64(payload)}.{b64(signature)}"


@pytest.mark.parametrize("ttl", NOT_FINITE_OR_NOT_POSITIVE, ids=repr)
def test_signer_refuses_ttls_that_are_not_finite_positive_bounded(ttl: float) -> None:
    """issue() refuses NaN, infinities, zero, negatives and TTLs over 30 days (ValueError)."""
    with pytest.raises(ValueError, match="ttl_seconds must be a finite number of seconds"):
        CursorSigner(KEY, "reader").issue({"position": 1}, ttl)


@pytest.mark.parametrize("ttl", NOT_NUMBERS, ids=repr)
def test_signer_refuses_ttls_that_are_not_numbers(ttl: Any) -> None:
    """issue() refuses booleans, strings and other non-numbers with a TypeError."""
    with pytest.raises(TypeError, match="ttl_seconds must be a number of seconds"):
        CursorSigner(KEY, "reader").issue({"position": 1}, ttl)


@pytest.mark.parametrize("ttl", [1, 0.25, 3600, 3600.0, MAX_CURSOR_TTL])
def test_valid_ttls_still_issue_cursors_that_expire(ttl: float) -> None:
    """A finite TTL up to 30 days issues a cursor that verifies now and expires after ttl."""
    signer = CursorSigner(KEY, "reader")
    cursor = signer.issue({"position": 1}, ttl)
    body = signer.verify(cursor)
    assert math.isfinite(body["exp"])
    with pytest.raises(CursorError, match="expired"):
        signer.verify(cursor, now=body["exp"] + 0.001)
    assert check_ttl(ttl) == float(ttl)


@pytest.mark.parametrize(
    "payload",
    [
        b'{"exp":NaN,"position":1}',
        b'{"exp":Infinity,"position":1}',
        b'{"exp":-Infinity,"position":1}',
        b'{"exp":1e999,"position":1}',
        b'{"exp":1e300,"position":1}',
        b'{"exp":true,"position":1}',
        b'{"exp":"2999-01-01","position":1}',
        b'{"exp":null,"position":1}',
        b'{"position":1}',
        b'[{"exp":1}]',
    ],
)
def test_cursor_without_a_finite_near_expiry_fails_closed(payload: bytes) -> None:
    """A correctly signed cursor whose expiry is not a finite, reachable time is refused."""
    with pytest.raises(CursorError, match="malformed cursor payload"):
        CursorSigner(KEY, "reader").verify(forge(payload))


def test_forged_nan_cursor_would_verify_without_the_expiry_check() -> None:
    """The forging helper is sound: the same payload with a real expiry verifies."""
    signer = CursorSigner(KEY, "reader")
    assert signer.verify(forge(b'{"exp":4102444800,"position":1}'), now=4102444000)


def reader_calls() -> dict[str, Callable[[Any], object]]:
    """The TaskContext entry points that take a cursor TTL, by name."""

    def make_reader(ttl: Any) -> object:
        ctx = TaskContext("ttl", host=PluginHost(allow=[]))
        return ctx.reader(consumer="c", cursor_ttl=ttl)

    def restore_reader(ttl: Any) -> object:
        ctx = TaskContext("ttl", host=PluginHost(allow=[]))
        ctx.attach(MemorySource({"a.txt": "alpha", "b.txt": "beta"}), binding_id="notes")
        reader = ctx.reader(consumer="c")
        reader.read("alpha")
        return ctx.restore_reader(reader.export_state(), cursor_ttl=ttl)

    return {"reader": make_reader, "restore_reader": restore_reader}


@pytest.mark.parametrize("name", ["reader", "restore_reader"])
@pytest.mark.parametrize("ttl", [math.nan, math.inf, -math.inf, -1, 0, True, "60"], ids=repr)
def test_reader_cursor_ttl_is_checked_when_the_reader_is_made(name: str, ttl: Any) -> None:
    """ctx.reader() and ctx.restore_reader() refuse a bad cursor_ttl before any read."""
    with pytest.raises((TypeError, ValueError), match="cursor_ttl must be"):
        reader_calls()[name](ttl)


def test_reader_with_a_valid_ttl_pages_with_expiring_cursors() -> None:
    """A reader with a short TTL still pages from its cursor."""
    ctx = TaskContext("ttl", host=PluginHost(allow=[]))
    ctx.attach(MemorySource({f"n{i}.txt": f"note {i}" for i in range(4)}), binding_id="notes")
    budget = ContextBudget(max_chars=2000, max_blocks=1)
    reader = ctx.reader(consumer="c", cursor_ttl=30, budget=budget)
    package = reader.read("note")
    assert package.has_more
    assert package.cursor is not None
    assert reader.read_next(package.cursor).blocks


@pytest.fixture
def store(tmp_path: Path) -> RecordStore:
    """A record store holding three notes (so a one-record page has a cursor)."""
    result = RecordStore(tmp_path / "state")
    for index in range(3):
        result.put(f"note {index}", collection="notes")
    return result


def record_calls(store: RecordStore) -> list[Callable[[Any], object]]:
    """The RecordStore entry points that take a cursor TTL."""
    store.append_event("s", "started", {"n": 1})
    store.append_event("s", "stopped", {"n": 2})
    return [
        lambda ttl: store.query(collection="notes", page_size=1, cursor_ttl=ttl),
        lambda ttl: store.events("s", page_size=1, cursor_ttl=ttl),
        lambda ttl: store.pinned_view().query(collection="notes", page_size=1, cursor_ttl=ttl),
    ]


@pytest.mark.parametrize("ttl", [*NOT_FINITE_OR_NOT_POSITIVE, *NOT_NUMBERS], ids=repr)
def test_record_store_refuses_bad_cursor_ttls(store: RecordStore, ttl: Any) -> None:
    """query(), events() and a pinned view's query() refuse every bad cursor_ttl."""
    for call in record_calls(store):
        with pytest.raises((TypeError, ValueError), match="cursor_ttl must be"):
            call(ttl)


def test_record_store_cursor_with_valid_ttl_expires(store: RecordStore) -> None:
    """A records cursor issued with a valid TTL carries a finite expiry and continues."""
    page = store.query(collection="notes", page_size=1, cursor_ttl=5)
    assert page.has_more
    assert page.cursor is not None
    payload = page.cursor.split(".")[0]
    body = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
    assert b"NaN" not in body
    assert b"Infinity" not in body
    assert len(store.query_continue(page.cursor).records) == 1
