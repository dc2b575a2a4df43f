"""A PostgreSQL URL as taskctx shows it: host, port and database, never the password."""

from __future__ import annotations

import re
from dataclasses import dataclass

import psycopg
from psycopg.conninfo import conninfo_to_dict

__all__ = ["DEFAULT_CONNECT_TIMEOUT_S", "Target", "parse_target"]

DEFAULT_CONNECT_TIMEOUT_S = 10
"""Seconds to wait for a connection when the URL sets no ``connect_timeout``."""

_USERINFO = re.compile(r"://[^/@\s]*@")


@dataclass(frozen=True)
class Target:
    """What a URL connects to, with its password kept apart from everything shown."""

    url: str
    """The URL as given (it may hold a password: never put it in a message or a file)."""
    host: str
    port: str
    dbname: str
    user: str | None
    password: str | None
    connect_timeout: int
    """Seconds to wait for a connection: the URL's ``connect_timeout``, else 10."""

    @property
    def redacted(self) -> str:
        """``postgresql://user@host:port/db``: the URL as messages and catalogs show it."""
        user = f"{self.user}@" if self.user else ""
        return f"postgresql://{user}{self.host}:{self.port}/{self.dbname}"

    def scrub(self, message: str) -> str:
        """``message`` with the password (if any) replaced by ``***``."""
        if self.password:
            message = message.replace(self.password, "***")
        return message


def parse_target(url: str) -> Target:
    """The :class:`Target` of ``url`` (ValueError naming what is wrong, not the password).

    Missing parts take libpq's defaults as psycopg reports them (host ``localhost``, port
    ``5432``, the database named as the user).
    """
    try:
        parts = conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        # libpq quotes the URL it could not parse, password and all: never repeat it
        reason = _first_line(str(exc)).replace(url, "<the URL>")
        raise ValueError(f"not a PostgreSQL URL: {_USERINFO.sub('://***@', reason)}") from None
    user = _text(parts.get("user"))
    password = _text(parts.get("password"))
    host = _text(parts.get("host")) or _text(parts.get("hostaddr")) or "localhost"
    port = _text(parts.get("port")) or "5432"
    dbname = _text(parts.get("dbname")) or user or "postgres"
    timeout = _text(parts.get("connect_timeout")) or str(DEFAULT_CONNECT_TIMEOUT_S)
    if not timeout.isdigit() or int(timeout) < 1:
        raise ValueError(f"connect_timeout must be a whole number of seconds >= 1, not {timeout!r}")
    return Target(url, host, port, dbname, user, password, int(timeout))


def _text(value: object) -> str | None:
    return None if value is None or value == "" else str(value)


def _first_line(message: str) -> str:
    return message.strip().splitlines()[0] if message.strip() else "unreadable"
