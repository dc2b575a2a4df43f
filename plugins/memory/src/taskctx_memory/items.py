"""The items of a ``session_memory`` source: which namespaces, paths, texts, descriptors.

Both ``session_memory`` sources build their items here, so a note or task reads and is
described the same whether a record store keeps it
(:class:`~taskctx_memory.source.SessionMemorySource`) or an authoritative provider
(:class:`~taskctx_memory.provider_source.ProviderMemorySource`); only the content
version differs (a store revision, or the digest of the text).

A note reads as its whole value; a task as its title, status and notes. Every exact
read is authorised with :func:`authorise`: a path of another session raises
:class:`~taskctx.errors.PolicyError` whether or not it exists, a path of no item
:class:`~taskctx.errors.NotFoundError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from taskctx.digests import sha256_digest
from taskctx.errors import NotFoundError, PolicyError
from taskctx.model import SourceDescriptor
from taskctx_memory.errors import InvalidKeyError
from taskctx_memory.namespace import ItemKind, Namespace, ParsedPath
from taskctx_memory.values import Task, check_key, check_session_id

__all__ = [
    "MEDIA_TYPE",
    "MemoryItem",
    "authorise",
    "namespaces_of",
    "note_item",
    "task_item",
    "task_text",
    "text_version",
]

MEDIA_TYPE = "text/plain"
"""The media type of every item: notes and tasks read as plain text."""


def task_text(task: Task) -> str:
    """What a model reads of a task: title, status, and its notes when it has any."""
    text = f"{task.title}\nstatus: {task.status.value}\n"
    return f"{text}\n{task.notes}\n" if task.notes else text


def text_version(text: str) -> str:
    """``sha256:<hex>`` of the UTF-8 text: the content version of a history-less item."""
    return sha256_digest(text)


@dataclass(frozen=True)
class MemoryItem:
    """One note or task of a namespace as a source item: its path, text and descriptor."""

    namespace: Namespace
    kind: ItemKind
    key: str
    text: str
    title: str
    content_version: str
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def path(self) -> str:
        """The source path (``session/<id>/notes/<key>``, ``global/tasks/<id>``, ...)."""
        return self.namespace.path(self.kind, self.key)

    def descriptor(self) -> SourceDescriptor:
        """Structure only: path, title, sizes, content version and whose item it is."""
        return SourceDescriptor(
            path=self.path,
            title=self.title,
            media_type=MEDIA_TYPE,
            size=len(self.text.encode("utf-8")),
            chars=len(self.text),
            content_version=self.content_version,
            metadata={
                "memory": "global" if self.namespace.is_global else "session",
                "session_id": self.namespace.session_id,
                "type": self.kind,
                "key": self.key,
                **self.extra,
            },
        )


def note_item(
    namespace: Namespace, key: str, value: str, *, version: str | None = None
) -> MemoryItem:
    """The note ``key`` of ``namespace``; ``version`` defaults to the digest of the value."""
    whose = "global" if namespace.is_global else "session"
    return MemoryItem(
        namespace=namespace,
        kind="note",
        key=key,
        text=value,
        title=f"{whose} note {key}",
        content_version=text_version(value) if version is None else version,
    )


def task_item(
    namespace: Namespace, task: Task, position: int, *, version: str | None = None
) -> MemoryItem:
    """The task of ``namespace`` at ``position`` in creation order; ``version`` defaults to
    the digest of its text."""
    text = task_text(task)
    return MemoryItem(
        namespace=namespace,
        kind="task",
        key=task.id,
        text=text,
        title=f"task {task.id} [{task.status.value}] {task.title}",
        content_version=text_version(text) if version is None else version,
        extra={"status": task.status.value, "position": position},
    )


def namespaces_of(session_id: str | None, include_global: bool) -> tuple[Namespace, ...]:
    """What a source of ``session_id`` shows: the session's namespace, then global memory's
    (``include_global``). ``session_id=None`` is global memory only."""
    session = None if session_id is None else check_session_id(session_id)
    if session is None and not include_global:
        raise ValueError("a session_memory source without a session must include global")
    return (
        *([] if session is None else [Namespace(session)]),
        *([Namespace(None)] if include_global else []),
    )


def authorise(path: str, namespaces: Sequence[Namespace]) -> ParsedPath:
    """``path`` taken apart if it may be read by a source showing ``namespaces``.

    PolicyError for a path of another session (or of global memory when it is not
    shown), whether or not the item exists; NotFoundError for a path of no known shape.
    """
    parsed = ParsedPath.parse(path)
    if parsed is None:
        raise NotFoundError(f"{path!r} is not a session_memory path")
    if parsed.namespace not in namespaces:
        session = next((ns.session_id for ns in namespaces if not ns.is_global), None)
        shown = "included" if Namespace(None) in namespaces else "excluded"
        raise PolicyError(
            f"{path!r} belongs to {parsed.namespace.label}, outside this source "
            f"(session {session!r}, global memory {shown})"
        )
    try:
        check_key(parsed.key, f"{parsed.kind} key")
    except InvalidKeyError:
        raise NotFoundError(f"{path!r} names no {parsed.kind}") from None
    return parsed
