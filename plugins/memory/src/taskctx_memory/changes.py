"""``ChangeLog``: the bounded, in-memory log of committed working-state changes."""

from __future__ import annotations

import threading
from collections import deque

from taskctx_memory.values import ChangeAction, ChangeTarget, StateChange

__all__ = ["ChangeLog"]


class ChangeLog:
    """The last ``capacity`` changes, numbered from 1; older ones fall off the front."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("a change log keeps at least one change")
        self._entries: deque[StateChange] = deque(maxlen=capacity)
        self._sequence = 0
        self._lock = threading.Lock()

    @property
    def sequence(self) -> int:
        """The sequence number of the latest change (0 before any)."""
        return self._sequence

    def append(
        self, target: ChangeTarget, key: str, action: ChangeAction, chars: int
    ) -> StateChange:
        """Log one committed change and return it."""
        with self._lock:
            self._sequence += 1
            change = StateChange(
                sequence=self._sequence, target=target, key=key, action=action, chars=chars
            )
            self._entries.append(change)
            return change

    def since(self, sequence: int = 0) -> tuple[StateChange, ...]:
        """The kept changes after ``sequence``, oldest first."""
        with self._lock:
            return tuple(c for c in self._entries if c.sequence > sequence)
