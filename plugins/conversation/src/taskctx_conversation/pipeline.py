"""The request pipeline: from the stored history to the request for one model call.

The filters are plugins (hook ``register_request_filters``); the automatic ones run in
every pipeline. A filter composed explicitly (``filters=[...]``) keeps its own policy
and replaces the automatic instance of the same name. ``image_input_policy`` and
``cold_start_filter`` follow the seed's convention: omitted means the defaults, a
value (a partial policy takes defaults for the rest) composes that filter, an explicit
``None`` turns it off. Message integrity cannot be turned off.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from enum import Enum
from typing import TYPE_CHECKING, Any, Final, Literal

import attrs

from taskctx._sync import run_sync
from taskctx.plugins import PluginHost
from taskctx.policy import RunConfiguration
from taskctx.protocols import RequestFilter, missing_members
from taskctx_conversation.errors import RequestFilterError
from taskctx_conversation.history import MessageHistory
from taskctx_conversation.request import (
    FilterContext,
    ModelCharacteristics,
    ModelRequest,
    ToolDefinition,
)

if TYPE_CHECKING:
    from taskctx.imageprep import ImageInputPolicy

__all__ = ["DEFAULT", "Default", "RequestPipeline"]

INTEGRITY = "message_integrity"
IMAGE_INPUT = "image_input"
COLD_START = "cold_start"


class Default(Enum):
    """The type of :data:`DEFAULT`: "not given", as distinct from ``None`` ("off")."""

    DEFAULT = "default"


DEFAULT: Final = Default.DEFAULT


def _checked(candidate: object) -> RequestFilter:
    missing = missing_members(candidate, RequestFilter)
    if missing:
        raise TypeError(
            f"{type(candidate).__name__} is not a request filter: lacks {', '.join(missing)}"
        )
    return candidate  # type: ignore[return-value]


def _image_filter(policy: ImageInputPolicy | Mapping[str, Any]) -> RequestFilter:
    from taskctx.imageprep import ImageInputPolicy
    from taskctx_conversation.images import ImageInputFilter

    chosen = policy if isinstance(policy, ImageInputPolicy) else ImageInputPolicy(**policy)
    return ImageInputFilter(policy=chosen)


def _integrity() -> RequestFilter:
    from taskctx_conversation.integrity import MessageIntegrityFilter

    return MessageIntegrityFilter()


@attrs.define(slots=True, eq=False)
class RequestPipeline:
    """Builds each model request from the history through the filters, in order.

    ``host`` gives the registered filters (default: ``PluginHost.from_environment()``);
    ``disable`` names automatic filters to leave out; ``configuration`` is the run's
    (its ``allowed_hosts`` govern every download a filter makes).
    """

    model: ModelCharacteristics = attrs.field(factory=ModelCharacteristics)
    host: PluginHost | None = None
    filters: Sequence[RequestFilter] = ()
    image_input_policy: ImageInputPolicy | Mapping[str, Any] | Literal[Default.DEFAULT] | None = (
        DEFAULT
    )
    cold_start_filter: RequestFilter | Literal[Default.DEFAULT] | None = DEFAULT
    configuration: RunConfiguration = attrs.field(factory=RunConfiguration)
    disable: Iterable[str] = ()
    _active: tuple[RequestFilter, ...] = attrs.field(init=False, default=())

    def __attrs_post_init__(self) -> None:
        self._active = self._resolve()

    @property
    def active_filters(self) -> tuple[RequestFilter, ...]:
        """The filters each request goes through, in the order they run."""
        return self._active

    def _resolve(self) -> tuple[RequestFilter, ...]:
        host = self.host if self.host is not None else PluginHost.from_environment()
        chosen: dict[str, RequestFilter] = {
            name: f for name, f in host.request_filters().items() if f.automatic
        }
        explicit = {}
        for candidate in self.filters:
            item = _checked(candidate)
            if item.name in explicit:
                raise ValueError(f"request filter {item.name!r} is composed twice")
            explicit[item.name] = item
        chosen.update(explicit)
        self._apply_switch(chosen, explicit, IMAGE_INPUT, "image_input_policy")
        self._apply_switch(chosen, explicit, COLD_START, "cold_start_filter")
        for name in self.disable:
            if name == INTEGRITY:
                raise ValueError("message integrity is always on: it cannot be disabled")
            if chosen.pop(name, None) is None:
                raise ValueError(
                    f"no request filter {name!r} to disable (active: {', '.join(chosen)})"
                )
        chosen.setdefault(INTEGRITY, _integrity())
        return tuple(sorted(chosen.values(), key=lambda f: (f.order, f.name)))

    def _apply_switch(
        self,
        chosen: dict[str, RequestFilter],
        explicit: Mapping[str, RequestFilter],
        name: str,
        option: str,
    ) -> None:
        value = getattr(self, option)
        if value is DEFAULT:
            return
        if name in explicit:
            raise ValueError(f"{option}= and filters=[...] both compose {name!r}: give one")
        if value is None:
            chosen.pop(name, None)
        elif name == IMAGE_INPUT:
            chosen[name] = _image_filter(value)
        else:
            chosen[name] = _checked(value)

    async def async_build(
        self,
        history: MessageHistory,
        *,
        tools: Sequence[ToolDefinition] = (),
        tool_choice: str | Mapping[str, Any] | None = None,
        system: str | None = None,
        now: datetime | None = None,
    ) -> ModelRequest:
        """The request for the next model call: ``history`` through every active filter."""
        request = ModelRequest(
            turns=history.turns,
            model=self.model,
            tools=tuple(tools),
            tool_choice=tool_choice,
            system=system,
        )
        context = FilterContext(
            history=history,
            now=now if now is not None else datetime.now(timezone.utc),
            configuration=self.configuration,
            last_response_at=history.last_response_at(),
        )
        return await self.async_run(request, context)

    async def async_run(self, request: ModelRequest, context: FilterContext) -> ModelRequest:
        """Run an already-derived request through the active filters."""
        for item in self._active:
            try:
                result = await item.async_apply(request, context)
            except RequestFilterError:
                raise
            except Exception as exc:
                raise RequestFilterError(
                    f"request filter {item.name!r} failed: {type(exc).__name__}: {exc}"
                ) from exc
            if not isinstance(result, ModelRequest):
                raise RequestFilterError(
                    f"request filter {item.name!r} returned {type(result).__name__}, "
                    "not a ModelRequest"
                )
            request = result
        return request

    def build(
        self,
        history: MessageHistory,
        *,
        tools: Sequence[ToolDefinition] = (),
        tool_choice: str | Mapping[str, Any] | None = None,
        system: str | None = None,
        now: datetime | None = None,
    ) -> ModelRequest:
        """Sync facade of :meth:`async_build`."""
        return run_sync(
            self.async_build(history, tools=tools, tool_choice=tool_choice, system=system, now=now),
            "async_build",
        )
