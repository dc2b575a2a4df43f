"""``CliSource``: how a plugin tells ``taskctx read`` and ``taskctx index`` to attach its source.

A plugin registers one with the ``register_cli_sources`` hook; the CLI builds its options
from the loaded host, so ``taskctx read --help`` lists what the enabled plugins give. The
kernel's CLI names no source kind itself.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping

from pydantic import Field, field_validator, model_validator

from taskctx.model import BINDING_ID_PATTERN, FrozenModel

__all__ = ["POSITIONAL", "CliSource", "CliValue"]

POSITIONAL = "PATH"
"""The registry name of the positional arguments (``taskctx read PATH...``); one plugin
owns them."""

_FLAG = re.compile(r"--[a-z0-9][a-z0-9-]*")
_KIND = re.compile(r"[A-Za-z0-9_.-]+")
_METAVAR = re.compile(r"[A-Z][A-Z0-9_.:\[\]-]*")


class CliValue(str, enum.Enum):
    """What the command line accepts as the value of a CLI source."""

    TEXT = "text"
    """Any string."""
    DIRECTORY = "directory"
    """A path that is not a file (it may not exist yet)."""
    EXISTING_DIRECTORY = "existing_directory"
    """A directory that exists."""


class CliSource(FrozenModel):
    """One source the ``taskctx`` command line can attach: a ``--flag VALUE`` or the
    positional ``PATH...``.

    Each value given becomes ``host.source(kind, **{value_option: value, **fixed_options})``,
    attached under ``binding_id`` (the n-th of several as ``<binding_id>-<n>``). With
    ``index_binding_id``, ``taskctx index`` takes it too and binds the n-th value as
    ``<index_binding_id>-<n>``.
    """

    kind: str
    """The source kind made (registered by this plugin or another)."""
    value_option: str
    """The factory option that receives the value (``root``)."""
    flag: str | None = None
    """``--name``; None for the positional ``PATH...`` (which is always repeatable)."""
    binding_id: str
    """The binding id of a single value."""
    help: str = Field(min_length=1)
    """One line for ``taskctx read --help``."""
    metavar: str = "DIR"
    """How help names the value (upper case)."""
    multiple: bool = False
    """Whether the flag may be given more than once (the positional always may)."""
    value: CliValue = CliValue.DIRECTORY
    """What the value must be."""
    fixed_options: Mapping[str, str] = Field(default_factory=dict)
    """Further factory options, the same for every value (``{"mode": "read_only"}``)."""
    index_binding_id: str | None = None
    """Binding id stem for ``taskctx index``; None: ``taskctx index`` does not take it."""

    @property
    def name(self) -> str:
        """The registry name: the flag, or ``PATH`` for the positional arguments."""
        return self.flag or POSITIONAL

    @field_validator("kind")
    @classmethod
    def _kind(cls, value: str) -> str:
        if not _KIND.fullmatch(value):
            raise ValueError(f"kind {value!r} is not a source kind name")
        return value

    @field_validator("value_option")
    @classmethod
    def _option(cls, value: str) -> str:
        if not value.isidentifier():
            raise ValueError(f"value_option {value!r} is not a keyword argument name")
        return value

    @field_validator("flag")
    @classmethod
    def _flag(cls, value: str | None) -> str | None:
        if value is not None and not _FLAG.fullmatch(value):
            raise ValueError(f"flag {value!r} must look like --name (lower case, digits, -)")
        return value

    @field_validator("binding_id", "index_binding_id")
    @classmethod
    def _binding(cls, value: str | None) -> str | None:
        if value is not None and not BINDING_ID_PATTERN.fullmatch(value):
            raise ValueError(f"binding id {value!r} must match {BINDING_ID_PATTERN.pattern}")
        return value

    @field_validator("metavar")
    @classmethod
    def _metavar(cls, value: str) -> str:
        if not _METAVAR.fullmatch(value):
            raise ValueError(f"metavar {value!r} must be upper case with no spaces")
        return value

    @field_validator("help")
    @classmethod
    def _help(cls, value: str) -> str:
        if not value.strip() or "\n" in value:
            raise ValueError("help must be one non-blank line")
        return value

    @field_validator("fixed_options")
    @classmethod
    def _fixed(cls, value: Mapping[str, str]) -> Mapping[str, str]:
        bad = [key for key in value if not key.isidentifier()]
        if bad:
            raise ValueError(f"fixed_options keys {bad} are not keyword argument names")
        return dict(value)

    @model_validator(mode="after")
    def _shape(self) -> CliSource:
        if self.flag is None and not self.multiple:
            raise ValueError("the positional PATH... is always repeatable: set multiple=True")
        if self.value_option in self.fixed_options:
            raise ValueError(f"fixed_options sets {self.value_option!r}, the value_option")
        return self

    def binding_ids(self, count: int, index: bool = False) -> tuple[str, ...]:
        """The binding ids of ``count`` values, for ``taskctx index`` when ``index``."""
        if index:
            if self.index_binding_id is None:
                raise ValueError(f"{self.name} is not indexed by taskctx index")
            return tuple(f"{self.index_binding_id}-{n}" for n in range(1, count + 1))
        if count == 1:
            return (self.binding_id,)
        return tuple(f"{self.binding_id}-{n}" for n in range(1, count + 1))
