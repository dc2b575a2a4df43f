"""Runtime context: selected metadata keys, refreshed on every request.

The provider (a callable returning a Mapping) is called once per request. Only the keys
the caller selected are shown, in the order selected; any other key is never shown,
even when present. A selected key the mapping lacks is reported as absent, never
invented. Each value is one ``<value key="...">`` element on one line, escaped, and
bounded by ``max_value_chars`` (``chars_omitted`` says how many characters are not
shown); selected keys that do not fit ``max_chars`` are counted in an explicit line,
never silently dropped::

    Runtime context:
    <value key="cwd">/srv/upload</value>
    <value key="branch" chars_omitted="50">xxxx</value>
    <value key="date" absent="true"/>
    … 2 selected keys not shown (max_chars=2000)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence

from pydantic import Field, model_validator

from taskctx.jsonsafe import check_json_depth
from taskctx.markup import attrs, escape_text
from taskctx_memory.request import (
    CapabilityLimitError,
    CapabilityLimits,
    ContextSection,
    Placement,
    RequestTurn,
)

__all__ = ["RuntimeContext", "RuntimeLimits", "render_value"]

HEADER = "Runtime context:"


class RuntimeLimits(CapabilityLimits):
    """Limits of the runtime block: total characters, keys, characters per value."""

    max_chars: int = Field(default=2000, ge=1)
    max_keys: int = Field(default=32, ge=1)
    max_value_chars: int = Field(default=200, ge=1)

    @model_validator(mode="after")
    def _value_fits(self) -> RuntimeLimits:
        if self.max_value_chars > self.max_chars:
            raise ValueError("max_value_chars must be <= max_chars")
        return self


def render_value(value: object) -> str:
    """A metadata value as text (unescaped): strings as they are, other values as JSON.

    TypeError (naming the limit) for a value nested deeper than
    :data:`~taskctx.jsonsafe.MAX_JSON_DEPTH`, never a bare RecursionError.
    """
    if isinstance(value, str):
        return value
    check_json_depth(value, "a runtime metadata value")
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _value_line(key: str, shown: str | None, cut: int = 0) -> str:
    """The ``<value>`` element of ``key`` showing ``shown`` (None: the key is absent)."""
    if shown is None:
        return f"<value {attrs(key=key, absent=True)}/>"
    head = attrs(key=key, chars_omitted=cut or None)
    return f"<value {head}>{escape_text(shown, one_line=True)}</value>"


def _omission_line(count: int, limits: RuntimeLimits) -> str:
    return f"… {count} selected keys not shown (max_chars={limits.max_chars})"


class RuntimeContext:
    """Selected runtime metadata, read afresh from ``provider`` on every request."""

    __slots__ = ("keys", "limits", "name", "provider")
    placement: Placement = "in_order"

    def __init__(
        self,
        provider: Callable[[], Mapping[str, object]],
        keys: Sequence[str],
        limits: RuntimeLimits | None = None,
        *,
        name: str = "runtime",
    ) -> None:
        self.provider = provider
        self.limits: RuntimeLimits = limits if limits is not None else RuntimeLimits()
        self.name = name
        selected = tuple(keys)
        if isinstance(keys, str) or not all(isinstance(k, str) and k for k in selected):
            raise TypeError("keys must be a sequence of non-empty strings")
        if len(set(selected)) != len(selected):
            raise ValueError(f"keys are selected twice: {selected}")
        if len(selected) > self.limits.max_keys:
            raise CapabilityLimitError(
                name, "max_keys", self.limits.max_keys, len(selected), "too many selected keys"
            )
        floor = len(HEADER) + 1 + len(_omission_line(len(selected), self.limits))
        if floor > self.limits.max_chars:
            raise CapabilityLimitError(
                name, "max_chars", self.limits.max_chars, floor, "too small for the header"
            )
        self.keys: tuple[str, ...] = selected

    def _line(self, key: str, metadata: Mapping[str, object]) -> tuple[str, int, int]:
        """The line of ``key``, the value characters shown and those cut."""
        if key not in metadata:
            return _value_line(key, None), 0, 0
        value = render_value(metadata[key])
        bound = self.limits.max_value_chars
        if len(value) <= bound:
            return _value_line(key, value), len(value), 0
        cut = len(value) - bound
        return _value_line(key, value[:bound], cut), bound, cut

    def contribute(self, turn: RequestTurn) -> ContextSection | None:
        """The selected keys as read from the provider now (every request, any boundary)."""
        metadata = self.provider()
        if not isinstance(metadata, Mapping):
            raise TypeError(f"{self.name}: the provider returned {type(metadata).__name__}")
        if not self.keys:
            return None
        lines = [HEADER]
        size = len(HEADER)
        widest = cut_chars = absent = 0
        reserve = len(_omission_line(len(self.keys), self.limits)) + 1
        shown = 0
        for index, key in enumerate(self.keys):
            line, value_chars, cut = self._line(key, metadata)
            last = index == len(self.keys) - 1
            if size + 1 + len(line) + (0 if last else reserve) > self.limits.max_chars:
                break
            lines.append(line)
            size += 1 + len(line)
            shown += 1
            widest = max(widest, value_chars)
            cut_chars += cut
            absent += key not in metadata
        omitted_keys = len(self.keys) - shown
        if omitted_keys:
            lines.append(_omission_line(omitted_keys, self.limits))
        return ContextSection.of(
            self.name,
            "\n".join(lines),
            self.limits,
            used={"keys": shown, "value_chars": widest, "absent_keys": absent},
            omitted={"keys": omitted_keys, "value_chars": cut_chars},
        )
