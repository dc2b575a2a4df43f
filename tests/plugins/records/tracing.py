"""Recording the statements a record store runs, on any backend (for tests that count
queries: a batch is one statement, not one per record)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import pytest
from taskctx_records import RecordStore
from taskctx_records.backend import Connection


class _TracedConnection:
    """A backend connection that appends every statement it runs to ``statements``."""

    def __init__(self, conn: Connection, statements: list[str]) -> None:
        self._conn = conn
        self._statements = statements
        self.dialect = conn.dialect

    def execute(self, sql: str, params: Any = ()) -> Any:
        self._statements.append(sql)
        return self._conn.execute(sql, params)

    def executemany(self, sql: str, params: Any) -> Any:
        self._statements.append(sql)
        return self._conn.executemany(sql, params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def _traced(
    opener: Callable[[], AbstractContextManager[Connection]], statements: list[str]
) -> Callable[[], AbstractContextManager[Connection]]:
    @contextmanager
    def traced() -> Iterator[Connection]:
        with opener() as conn:
            yield _TracedConnection(conn, statements)

    return traced


def trace_statements(store: RecordStore, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The list every statement ``store`` runs from now on is appended to."""
    statements: list[str] = []
    backend = store.backend
    monkeypatch.setattr(backend, "read", _traced(backend.read, statements))
    monkeypatch.setattr(backend, "write", _traced(backend.write, statements))
    return statements
