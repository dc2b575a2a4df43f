"""``KIND[:key=value,...]`` or ``KIND:{JSON object}``: the one parser of a source given
as text.

``taskctx read --source``, ``taskctx mcp serve --source`` and configuration files that
name sources as strings all parse with :func:`parse_source_spec`, so the form and its
errors are the same everywhere. The option ``id`` names the binding; every other option
goes to the source factory: a string in the ``key=value`` form, any JSON value in the
JSON form (``record_store:{"root": "s", "scope": {"team": "a", "year": 2026}}``), for
values with commas or structure the ``key=value`` form cannot carry.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import Field, ValidationError, field_validator

from taskctx.errors import SourceSpecError
from taskctx.model import BINDING_ID_PATTERN, FrozenModel

__all__ = ["BINDING_OPTION", "SourceSpec", "parse_source_spec"]

BINDING_OPTION = "id"
"""The option of a source spec that names the binding instead of reaching the factory."""


class SourceSpec(FrozenModel):
    """A source to make and attach: its kind, factory options and binding id (None: the
    kernel's default for the kind)."""

    kind: str = Field(min_length=1)
    options: Mapping[str, Any] = Field(default_factory=dict)
    binding_id: str | None = None

    @field_validator("binding_id")
    @classmethod
    def _binding(cls, value: str | None) -> str | None:
        if value is not None and not BINDING_ID_PATTERN.fullmatch(value):
            raise ValueError(f"binding id {value!r} must match {BINDING_ID_PATTERN.pattern}")
        return value


def parse_source_spec(raw: str) -> SourceSpec:
    """``KIND[:key=value,...]`` or ``KIND:{...}`` into a :class:`SourceSpec`;
    SourceSpecError names the fault.

    Refused: an empty kind, a part without ``=`` or without a key, an option given twice,
    JSON that is not one object with string keys, and a binding id (``id``) that is not a
    binding id.
    """
    kind, _, rest = raw.partition(":")
    if not kind:
        raise SourceSpecError(f"source {raw!r}: expected KIND[:key=value,...] or KIND:{{...}}")
    options = _json_options(raw, rest) if rest.lstrip().startswith("{") else _pairs(raw, rest)
    binding_id = options.pop(BINDING_OPTION, None)
    if binding_id is not None and not isinstance(binding_id, str):
        raise SourceSpecError(f"source {raw!r}: the binding id (id) must be a string")
    try:
        return SourceSpec(kind=kind, options=options, binding_id=binding_id)
    except ValidationError as exc:
        problems = "; ".join(
            str(error["msg"]).removeprefix("Value error, ") for error in exc.errors()
        )
        raise SourceSpecError(f"source {raw!r}: {problems}") from None


def _json_options(raw: str, text: str) -> dict[str, Any]:
    """The options of the JSON form: one object (keys are option names)."""
    try:
        options = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SourceSpecError(f"source {raw!r}: the options are not valid JSON ({exc})") from None
    return dict(options)  # text that starts with "{" and parses is an object


def _pairs(raw: str, rest: str) -> dict[str, Any]:
    """The options of the ``key=value,...`` form, as strings."""
    options: dict[str, Any] = {}
    for part in filter(None, rest.split(",")):
        key, sep, value = part.partition("=")
        if not sep or not key:
            raise SourceSpecError(f"source {raw!r}: expected key=value, got {part!r}")
        if key in options:
            raise SourceSpecError(f"source {raw!r}: option {key!r} given twice")
        options[key] = value
    return options
