"""The server's configuration: bindings, plugins, budgets, consumer and RunConfiguration.

A TOML file names everything; :meth:`ServerConfig.from_flags` covers the common case
without one. Bindings use the same kinds and options as ``taskctx read --source``.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, field_validator, model_validator

from taskctx import ContextBudget, ContextConsumer, RunConfiguration, TaskCtxError
from taskctx.cursor import check_ttl
from taskctx.errors import SourceSpecError
from taskctx.model import FrozenModel
from taskctx.sourcespec import parse_source_spec as kernel_parse_source_spec

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

__all__ = [
    "BindingConfig",
    "ConfigError",
    "ResourceSettings",
    "ServerConfig",
    "load_config",
    "parse_source_spec",
]


class ConfigError(ValueError):
    """The configuration (file or flags) is wrong; the message names what and where."""


def parse_source_spec(raw: str) -> BindingConfig:
    """``KIND[:key=value,...]`` (the ``taskctx read --source`` form, parsed by the kernel's
    :func:`taskctx.sourcespec.parse_source_spec`) into a binding; ``id`` names it."""
    try:
        spec = kernel_parse_source_spec(raw)
    except SourceSpecError as exc:
        raise ConfigError(str(exc)) from None
    return BindingConfig(kind=spec.kind, id=spec.binding_id, options=spec.options)


class BindingConfig(FrozenModel):
    """One source to attach: its kind, binding id (default: the kind) and factory options."""

    kind: str = Field(min_length=1)
    id: str | None = None
    options: Mapping[str, Any] = Field(default_factory=dict)

    @property
    def binding_id(self) -> str:
        """The binding id the source is attached under."""
        return self.id or self.kind


class ResourceSettings(FrozenModel):
    """How resources are served: page size of ``resources/list``, the characters one
    ``resources/read`` may deliver, and how often bound revisions are polled for
    update notifications (seconds; 0 turns notifications off)."""

    page_size: int = Field(default=100, ge=1, le=10_000)
    max_chars: int = Field(default=1_000_000, ge=1)
    poll_interval: float = Field(default=2.0, ge=0)


class ServerConfig(FrozenModel):
    """Everything ``taskctx mcp serve`` needs; validated, so a typo fails at start.

    ``plugins`` None loads what the environment allows (``TASKCTX_LOAD_PLUGINS``); a
    list loads only those distributions. ``configuration`` is the RunConfiguration every
    bound source is made and governed under (``allowed_hosts``, ``extensions``).
    """

    task_id: str = Field(default="mcp", min_length=1)
    name: str = "taskctx"
    bindings: tuple[BindingConfig, ...] = ()
    plugins: tuple[str, ...] | None = None
    """Distributions to load (None: what ``TASKCTX_LOAD_PLUGINS`` allows)."""
    budget: ContextBudget = Field(default_factory=ContextBudget)
    consumer: ContextConsumer = Field(default_factory=lambda: ContextConsumer(name="mcp"))
    configuration: RunConfiguration = Field(default_factory=RunConfiguration)
    resources: ResourceSettings = Field(default_factory=ResourceSettings)
    cursor_ttl: float = 3600.0
    """Seconds a read or listing cursor stays valid (the kernel's bounds)."""

    @field_validator("cursor_ttl", mode="before")
    @classmethod
    def _ttl(cls, value: object) -> float:
        try:
            return check_ttl(value)
        except TypeError as exc:  # pydantic reports ValueErrors, not TypeErrors
            raise ValueError(str(exc)) from None

    @model_validator(mode="before")
    @classmethod
    def _sources(cls, data: Any) -> Any:
        """``sources = ["KIND:k=v,..."]`` (the ``--source`` form) joins ``bindings``."""
        if isinstance(data, Mapping) and "sources" in data:
            data = dict(data)
            sources = data.pop("sources")
            if not isinstance(sources, Sequence) or isinstance(sources, str):
                raise ValueError("sources is a list of KIND:key=value,... strings")
            if not all(isinstance(raw, str) for raw in sources):
                raise ValueError("sources is a list of KIND:key=value,... strings")
            data["bindings"] = [*data.get("bindings", ()), *map(parse_source_spec, sources)]
        return data

    @field_validator("bindings", mode="before")
    @classmethod
    def _bindings(cls, value: object) -> object:
        if isinstance(value, Sequence) and not isinstance(value, str):
            return tuple(parse_source_spec(v) if isinstance(v, str) else v for v in value)
        return value

    @field_validator("configuration", mode="before")
    @classmethod
    def _configuration(cls, value: object) -> object:
        if isinstance(value, Mapping):
            return RunConfiguration.model_validate(dict(value))
        return value

    @model_validator(mode="after")
    def _unique_bindings(self) -> ServerConfig:
        seen: set[str] = set()
        for binding in self.bindings:
            if binding.binding_id in seen:
                raise ValueError(
                    f"binding id {binding.binding_id!r} is used twice; give each an id"
                )
            seen.add(binding.binding_id)
        return self

    @classmethod
    def from_flags(
        cls,
        *,
        workspace: Sequence[str] = (),
        records: Sequence[str] = (),
        sources: Sequence[str] = (),
        base: ServerConfig | None = None,
    ) -> ServerConfig:
        """``base`` (or the defaults) plus ``--workspace DIR``, ``--records DIR`` and
        ``--source KIND:k=v`` bindings (ids ``files``/``records``, numbered when repeated)."""
        bindings: list[BindingConfig] = list(base.bindings) if base else []

        def numbered(stem: str, count: int, number: int) -> str:
            return f"{stem}-{number}" if count > 1 else stem

        for n, root in enumerate(workspace, start=1):
            bindings.append(
                BindingConfig(
                    kind="task_workspace",
                    id=numbered("files", len(workspace), n),
                    options={"root": root, "mode": "read_only"},
                )
            )
        for n, root in enumerate(records, start=1):
            bindings.append(
                BindingConfig(
                    kind="record_store",
                    id=numbered("records", len(records), n),
                    options={"root": root},
                )
            )
        bindings += [parse_source_spec(raw) for raw in sources]
        data = base.model_dump() if base else {}
        data["bindings"] = [b.model_dump() for b in bindings]
        if base is not None:
            data["configuration"] = base.configuration
        return _validated(data, "flags")


def _validated(data: Mapping[str, Any], where: str) -> ServerConfig:
    try:
        return ServerConfig.model_validate(dict(data))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error['loc']) or 'config'}: {error['msg']}"
            for error in exc.errors()
        )
        raise ConfigError(f"{where}: {problems}") from None
    except (ValueError, TaskCtxError) as exc:  # RunConfiguration rules (PolicyError)
        raise ConfigError(f"{where}: {exc}") from None


def load_config(path: str | Path) -> ServerConfig:
    """Read a TOML configuration file; ConfigError names the file and what is wrong."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the configuration: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    return _validated(data, str(path))
