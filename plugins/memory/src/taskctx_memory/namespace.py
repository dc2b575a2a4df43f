"""Where one working state lives in a record store: its scope, record ids, stream, paths.

A session's notes and tasks are records of collection :data:`COLLECTION` scoped
``{"session_id": <id>}``; global memory's are scoped ``{"memory": "global"}``. A note's
record id is a digest of (namespace, "note", key), a task's of (namespace, "task", id),
so writing a key again is a new version of the same record and deleting it a tombstone.

Source paths name the namespace: ``session/<session id>/notes/<key>``,
``session/<session id>/tasks/<id>``, ``global/notes/<key>``, ``global/tasks/<id>``
(the session id percent-encoded), so a ref minted in one session never silently reads
the same-named note of another.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import quote, unquote

__all__ = ["COLLECTION", "GLOBAL_SCOPE", "META_COLLECTION", "ItemKind", "Namespace", "ParsedPath"]

COLLECTION = "working_state"
"""The record collection holding notes and tasks."""

META_COLLECTION = "working_state_meta"
"""The record collection holding each namespace's task counter (never a source item)."""

GLOBAL_SCOPE: dict[str, Any] = {"memory": "global"}
"""The record scope of global memory."""

ItemKind = Literal["note", "task"]

_SEGMENT: dict[ItemKind, str] = {"note": "notes", "task": "tasks"}
_KIND: dict[str, ItemKind] = {"notes": "note", "tasks": "task"}


@dataclass(frozen=True)
class Namespace:
    """One session's working state (``session_id``), or global memory (``None``)."""

    session_id: str | None

    @property
    def is_global(self) -> bool:
        """Whether this is global memory, shared by every session."""
        return self.session_id is None

    @property
    def scope(self) -> dict[str, Any]:
        """The record scope of this namespace's records."""
        return dict(GLOBAL_SCOPE) if self.session_id is None else {"session_id": self.session_id}

    @property
    def stream(self) -> str:
        """The event stream its changes are appended to."""
        if self.session_id is None:
            return "working_state@global"
        return f"working_state:{self.session_id}"

    @property
    def label(self) -> str:
        """How messages name it: ``session 'x'`` or ``global memory``."""
        return "global memory" if self.session_id is None else f"session {self.session_id!r}"

    @property
    def prefix(self) -> str:
        """The path prefix of its items in a ``session_memory`` source."""
        if self.session_id is None:
            return "global/"
        return f"session/{quote(self.session_id, safe='')}/"

    def record_id(self, kind: ItemKind | Literal["meta"], key: str) -> str:
        """The deterministic record id of the note or task ``key`` (or of a meta record)."""
        token = "global" if self.session_id is None else f"session:{self.session_id}"
        digest = hashlib.sha256(f"{token}\0{kind}\0{key}".encode()).hexdigest()
        return f"ws_{digest[:32]}"

    def path(self, kind: ItemKind, key: str) -> str:
        """The source path of the note or task ``key``."""
        return f"{self.prefix}{_SEGMENT[kind]}/{key}"


@dataclass(frozen=True)
class ParsedPath:
    """A source path taken apart: whose item, which kind, which key."""

    namespace: Namespace
    kind: ItemKind
    key: str

    @classmethod
    def parse(cls, path: str) -> ParsedPath | None:
        """The parts of a ``session/...`` or ``global/...`` path, or None for other shapes."""
        head, _, rest = path.partition("/")
        if head == "global":
            namespace = Namespace(None)
        elif head == "session":
            quoted, _, rest = rest.partition("/")
            if not quoted:
                return None
            namespace = Namespace(unquote(quoted))
        else:
            return None
        segment, _, key = rest.partition("/")
        kind = _KIND.get(segment)
        if kind is None or not key:
            return None
        return cls(namespace, kind, key)
