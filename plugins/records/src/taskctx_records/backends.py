"""Which backend a :class:`~taskctx_records.RecordStore` opens: a folder is SQLite; a
URL (``scheme://...``) goes to the backend a plugin registers for its scheme.

Backends are plugins like any other: a distribution implements the
``register_record_backends`` hook (specified here, by taskctx-records, and added to the
host's plugin manager when a URL is first opened), so a host's allow and block lists
decide whether a database backend may load at all::

    @hookimpl
    def register_record_backends(register):
        register("postgresql", open_postgres_backend)  # (url, read_only) -> StoreBackend
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from taskctx.hookspecs import hookspec
from taskctx_records.backend import StoreBackend
from taskctx_records.sqlite_backend import SqliteBackend

if TYPE_CHECKING:
    from taskctx.plugins import PluginHost

__all__ = ["BackendOpener", "RecordBackendSpecs", "backend_openers", "open_backend", "url_scheme"]

BackendOpener = Callable[[str, bool], StoreBackend]
"""Opens the store a URL names: ``opener(url, read_only)``."""

_URL = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")


class RecordBackendSpecs:
    """The hook taskctx-records adds to a plugin host (pluggy hookspecs)."""

    @hookspec
    def register_record_backends(self, register: Callable[[str, BackendOpener], None]) -> None:
        """Register the opener of record stores whose URLs have a scheme
        (``register("postgresql", opener)``); a scheme has one backend."""


def url_scheme(root: str | Path) -> str | None:
    """The lower-cased scheme of ``root`` if it is a URL (``postgresql://...``), else None."""
    if not isinstance(root, str):
        return None
    match = _URL.match(root)
    return None if match is None else match.group(1).lower()


def backend_openers(host: PluginHost) -> dict[str, BackendOpener]:
    """The backend openers the plugins of ``host`` register, by scheme."""
    manager = host.plugin_manager
    hook = getattr(manager.hook, "register_record_backends", None)
    if hook is None or hook.spec is None:
        manager.add_hookspecs(RecordBackendSpecs)
    openers: dict[str, BackendOpener] = {}

    def register(scheme: str, opener: BackendOpener) -> None:
        key = scheme.lower()
        if key in openers and openers[key] is not opener:
            raise ValueError(f"two record store backends register the URL scheme {key!r}")
        openers[key] = opener

    manager.hook.register_record_backends(register=register)
    return openers


def open_backend(
    root: str | Path, read_only: bool, host_of: Callable[[], PluginHost]
) -> StoreBackend:
    """The backend of ``root``: SQLite under a folder, else the opener of its URL scheme
    (ValueError naming the scheme and the known ones when no plugin registers it)."""
    scheme = url_scheme(root)
    if scheme is None:
        return SqliteBackend(Path(root), read_only=read_only)
    openers = backend_openers(host_of())
    opener = openers.get(scheme)
    if opener is None:
        known = ", ".join(sorted(openers)) or "none"
        raise ValueError(
            f"no record store backend for {scheme}:// URLs (registered: {known}); install "
            "and allow the plugin that provides it (taskctx-postgres for postgresql://)"
        )
    return opener(str(root), read_only)
