"""Update notifications: poll the bound sources' revisions, tell subscribers what moved.

A subscription is to a resource URI; when its binding's revision moves, every session
subscribed to a URI of that binding gets ``notifications/resources/updated`` (and
``notifications/resources/list_changed``, since items may have come or gone). Sessions
on the 2026 protocol listen through ``subscriptions/listen``; the same events go to
them through the SDK's subscription bus. Revisions are the sources' cheap stamps, so a
poll never rescans a source.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import attrs
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    ResourcesListChanged,
    ResourceUpdated,
)
from mcp_types import SubscriptionsListenRequestParams

from taskctx_mcp.service import ContextService
from taskctx_mcp.uris import uri_to_ref

__all__ = ["Watcher"]


def _connection_key(session: Any) -> int:
    """One key per client connection: the SDK makes a ServerSession per request, all on
    the connection they share (kept while subscribed, so its id is not reused)."""
    return id(getattr(session, "_connection", session))


@attrs.define(slots=True)
class Watcher:
    """Subscriptions by URI and the last revisions seen."""

    service: ContextService
    bus: InMemorySubscriptionBus
    _sessions: dict[str, dict[int, Any]] = attrs.field(factory=dict)
    _listened: dict[str, int] = attrs.field(factory=dict)
    _seen: dict[str, str | None] | None = None

    async def subscribe(self, uri: str, session: Any) -> None:
        """Notify ``session`` when ``uri``'s binding moves (from the current revision on)."""
        if self._seen is None:
            self._seen = await self.service.revisions()
        self._sessions.setdefault(uri, {})[_connection_key(session)] = session

    def unsubscribe(self, uri: str, session: Any) -> None:
        """Stop notifying ``session``'s connection about ``uri`` (unknown ones are ignored)."""
        sessions = self._sessions.get(uri, {})
        sessions.pop(_connection_key(session), None)
        if not sessions:
            self._sessions.pop(uri, None)

    def listener(self) -> Callable[[Any, SubscriptionsListenRequestParams], Awaitable[Any]]:
        """The ``subscriptions/listen`` handler: the SDK's, told which URIs are listened
        to so that their binding's moves are published."""
        handler = ListenHandler(self.bus)

        async def listen(ctx: Any, params: SubscriptionsListenRequestParams) -> Any:
            uris = list(params.notifications.resource_subscriptions or ())
            for uri in uris:
                self._listened[uri] = self._listened.get(uri, 0) + 1
            if self._seen is None:
                self._seen = await self.service.revisions()
            try:
                return await handler(ctx, params)
            finally:
                for uri in uris:
                    self._listened[uri] -= 1
                    if not self._listened[uri]:
                        del self._listened[uri]

        return listen

    async def check(self) -> set[str]:
        """Compare revisions with the last seen; notify and return the bindings that moved."""
        now = await self.service.revisions()
        before, self._seen = self._seen, now
        if before is None:
            return set()
        moved = {b for b, revision in now.items() if before.get(b) != revision}
        if not moved:
            return moved
        await self.bus.publish(ResourcesListChanged())
        for uri in list(self._listened):
            if uri_to_ref(uri).binding in moved:
                await self.bus.publish(ResourceUpdated(uri=uri))
        notified: set[int] = set()
        for uri, sessions in list(self._sessions.items()):
            if uri_to_ref(uri).binding not in moved:
                continue
            for key, session in list(sessions.items()):
                try:
                    await session.send_resource_updated(uri)
                    if key not in notified:
                        notified.add(key)
                        await session.send_resource_list_changed()
                except Exception:  # a closed connection: stop notifying it
                    sessions.pop(key, None)
        return moved

    async def run(self, interval: float) -> None:
        """Check every ``interval`` seconds until cancelled."""
        self._seen = await self.service.revisions()
        while True:
            await anyio.sleep(interval)
            await self.check()
