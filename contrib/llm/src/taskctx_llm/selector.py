"""The ``llm`` selector: a chat model chooses among previews by their host-issued keys.

The model sees what :mod:`taskctx_llm.selector_prompt` writes (keys, titles, sizes and
previews; never refs, binding ids or media bytes) and answers with keys. The keys are
returned as the model wrote them, so the host's validation decides: unknown or duplicate
keys give ``selection_invalid``, a reply without keys or a model that fails gives
``selector_failed``, and either way the read falls back to rank order. Every selection,
failed or not, is recorded in an :class:`AuditLog` with the exact prompts and reply.

Nothing is looked up when a selector is made: the chat model is found in llm at the
first selection (``model_id``, else ``TASKCTX_SELECTOR_MODEL``, else llm's default
model) and asked through llm's async API when it has one, else in a worker thread, so
the reader's event loop is never blocked.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from taskctx.errors import SelectionError
from taskctx.model import FrozenModel
from taskctx.protocols import SelectionRequest

if TYPE_CHECKING:
    import llm

from taskctx_llm.selector_prompt import (
    ReplyError,
    parse_reply,
    system_prompt,
    truncate,
    user_prompt,
)

__all__ = [
    "AUDIT_ENV",
    "MODEL_ENV",
    "AuditLog",
    "LlmSelector",
    "ReplyError",
    "SelectionAudit",
    "UnknownChatModelError",
]

MODEL_ENV = "TASKCTX_SELECTOR_MODEL"
"""The chat model (an llm model id or alias) a selector made without ``model_id`` uses."""

AUDIT_ENV = "TASKCTX_SELECTOR_AUDIT"
"""A file a selector made without ``audit``/``audit_path`` appends its audit lines to."""


class UnknownChatModelError(SelectionError, LookupError):
    """llm has no chat model of the name the selector was given (or found)."""


class SelectionAudit(FrozenModel):
    """One selection as it happened: what was sent, what came back, what was returned.

    ``model`` is the name asked for (an id or alias) and ``model_id`` the model llm
    resolved it to (None when it could not). Exactly one of ``keys`` (as returned to
    the host, before its validation) and ``error`` is set.
    """

    at: datetime
    selector: str
    model: str | None
    model_id: str | None
    query: str
    consumer: str
    phase: str | None
    offered: tuple[str, ...]
    system_prompt: str
    user_prompt: str
    reply: str | None
    keys: tuple[str, ...] | None
    error: str | None
    duration_ms: float


class AuditLog:
    """The last ``max_entries`` selections in memory and, with ``path``, every one as a
    JSON line appended to that file (one ``write`` per line, so lines never interleave)."""

    def __init__(self, path: str | os.PathLike[str] | None = None, *, max_entries: int = 100):
        if max_entries < 1:
            raise ValueError(f"max_entries must be at least 1, got {max_entries}")
        self._path = Path(path) if path is not None else None
        self._entries: deque[SelectionAudit] = deque(maxlen=max_entries)
        self._lock = threading.Lock()

    @property
    def path(self) -> Path | None:
        """The JSON-lines file entries are appended to, if any."""
        return self._path

    @property
    def entries(self) -> tuple[SelectionAudit, ...]:
        """The entries held in memory, oldest first."""
        with self._lock:
            return tuple(self._entries)

    @property
    def last(self) -> SelectionAudit | None:
        """The latest entry, if any."""
        with self._lock:
            return self._entries[-1] if self._entries else None

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def __iter__(self) -> Iterator[SelectionAudit]:
        return iter(self.entries)

    def record(self, entry: SelectionAudit) -> None:
        """Keep ``entry`` in memory, then append it to the file (an ``OSError`` raises)."""
        with self._lock:
            self._entries.append(entry)
            if self._path is not None:
                _append_line(self._path, entry.model_dump_json() + "\n")


def _append_line(path: Path, line: str) -> None:
    """Append ``line`` with one ``write`` on an ``O_APPEND`` descriptor."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = line.encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        written = os.write(fd, data)
        while written < len(data):  # a regular file takes it whole; never lose the rest
            written += os.write(fd, data[written:])
    finally:
        os.close(fd)


def model_name(model_id: str | None) -> tuple[str, str]:
    """The chat model to ask and where its name came from: ``model_id``, the environment
    (``TASKCTX_SELECTOR_MODEL``) or llm's default model."""
    if model_id:
        return model_id, "model_id"
    configured = os.environ.get(MODEL_ENV, "").strip()
    if configured:
        return configured, MODEL_ENV
    import llm  # here, not at import: loading llm and its plugins takes 0.3 s

    default = cast(Callable[[], str], llm.get_default_model)()
    return default, "llm's default model"


class _Chat:
    """One llm chat model, asked through its async API when it has one."""

    def __init__(self, asynchronous: llm.AsyncModel | None, synchronous: llm.Model | None):
        model = asynchronous or synchronous
        assert model is not None
        self.model_id: str = model.model_id
        self._async = asynchronous
        self._sync = synchronous

    @classmethod
    def lookup(cls, name: str, origin: str) -> _Chat:
        """The model llm knows as ``name``; ``UnknownChatModelError`` if it knows none."""
        import llm

        try:
            return cls(llm.get_async_model(name), None)
        except llm.UnknownModelError:
            pass
        try:
            return cls(None, llm.get_model(name))
        except llm.UnknownModelError:
            raise UnknownChatModelError(
                f"llm has no chat model {name!r} (the name comes from {origin}); "
                "`llm models` lists the installed ones"
            ) from None

    async def ask(self, system: str, user: str, options: Mapping[str, Any]) -> str:
        """The model's whole reply to ``user`` under ``system``."""
        extra = dict(options) or None
        if self._async is not None:
            response = self._async.prompt(user, system=system, stream=False, options=extra)
            return await response.text()
        synchronous = self._sync
        assert synchronous is not None

        def call() -> str:
            return synchronous.prompt(user, system=system, stream=False, options=extra).text()

        return await asyncio.to_thread(call)


class LlmSelector:
    """A :class:`taskctx.Selector` driven by any llm chat model.

    :param model_id: an llm model id or alias; None reads ``TASKCTX_SELECTOR_MODEL``,
        else llm's default model, at each selection.
    :param name: the selector's name (``ctx.reader(selector=name)``).
    :param max_keys: keep at most this many of the keys the model chose.
    :param audit: where selections are recorded; by default a new :class:`AuditLog`
        appending to ``audit_path`` (or ``TASKCTX_SELECTOR_AUDIT``) when one is given.
    :param options: llm options passed with every prompt (``{"temperature": 0}``).
    """

    def __init__(
        self,
        model_id: str | None = None,
        *,
        name: str = "llm",
        max_keys: int | None = None,
        audit: AuditLog | None = None,
        audit_path: str | os.PathLike[str] | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> None:
        if max_keys is not None and max_keys < 1:
            raise ValueError(f"max_keys must be at least 1, got {max_keys}")
        if audit is not None and audit_path is not None:
            raise ValueError("give audit or audit_path, not both")
        self._name = name
        self.model_id = model_id
        self.max_keys = max_keys
        self.options: Mapping[str, Any] = dict(options or {})
        path = audit_path if audit_path is not None else os.environ.get(AUDIT_ENV) or None
        self.audit = audit if audit is not None else AuditLog(path)
        self._chats: dict[str, _Chat] = {}

    @property
    def name(self) -> str:
        """The selector's name."""
        return self._name

    def __repr__(self) -> str:
        return f"LlmSelector(model_id={self.model_id!r}, name={self._name!r})"

    async def _chat(self, trace: _Trace) -> _Chat:
        name, origin = await asyncio.to_thread(model_name, self.model_id)
        trace.model = name
        chat = self._chats.get(name)
        if chat is None:
            chat = await asyncio.to_thread(_Chat.lookup, name, origin)
            self._chats[name] = chat
        trace.model_id = chat.model_id
        return chat

    async def _choose(self, system: str, user: str, trace: _Trace) -> list[str]:
        chat = await self._chat(trace)
        trace.reply = await chat.ask(system, user, self.options)
        return truncate(parse_reply(trace.reply), self.max_keys)

    async def async_select(self, request: SelectionRequest) -> Sequence[str]:
        """Ask the model which candidates help; return its keys as written, best first.

        Raises (and records) when the model cannot be found, fails, or replies without a
        JSON array of keys; the host then falls back to rank order.
        """
        system, user = system_prompt(request, self.max_keys), user_prompt(request)
        trace = _Trace(model=self.model_id)
        try:
            keys = await self._choose(system, user, trace)
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            await self._record(trace.entry(self._name, request, system, user, None, error))
            raise
        await self._record(trace.entry(self._name, request, system, user, keys, None))
        return keys

    async def _record(self, entry: SelectionAudit) -> None:
        await asyncio.to_thread(self.audit.record, entry)


@dataclass
class _Trace:
    """What one selection found out on its way, for its audit entry."""

    model: str | None
    model_id: str | None = None
    reply: str | None = None
    at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    started: float = field(default_factory=time.perf_counter)

    def entry(
        self,
        selector: str,
        request: SelectionRequest,
        system: str,
        user: str,
        keys: Sequence[str] | None,
        error: str | None,
    ) -> SelectionAudit:
        """The audit entry of the selection, finished now."""
        return SelectionAudit(
            at=self.at,
            selector=selector,
            model=self.model,
            model_id=self.model_id,
            query=request.query,
            consumer=request.consumer,
            phase=request.phase,
            offered=tuple(candidate.key for candidate in request.candidates),
            system_prompt=system,
            user_prompt=user,
            reply=self.reply,
            keys=tuple(keys) if keys is not None else None,
            error=error,
            duration_ms=(time.perf_counter() - self.started) * 1000,
        )
