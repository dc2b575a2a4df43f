"""``CliSource``: how a plugin tells ``taskctx read`` and ``taskctx index`` to attach its source.

A plugin registers one with the ``register_cli_sources`` hook; the CLI builds its options
from the loaded host, so ``taskctx read --help`` lists what the enabled plugins give. The
kernel's CLI names no source kind itself.
"""

from __future__ import annotations

import enum
import os
import re
from collections.abc import Mapping, Sequence
from typing import Annotated

from pydantic import AfterValidator, Field, field_validator, model_validator

from taskctx.model import BINDING_ID_PATTERN, FrozenModel

__all__ = ["POSITIONAL", "CliOption", "CliSource", "CliValue"]

POSITIONAL = "PATH"
"""The registry name of the positional arguments (``taskctx read PATH...``); one plugin
owns them."""

_FLAG = re.compile(r"--[a-z0-9][a-z0-9-]*")
_KIND = re.compile(r"[A-Za-z0-9_.-]+")
_METAVAR = re.compile(r"[A-Z][A-Z0-9_.:\[\]-]*")
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


def _flag(value: str) -> str:
    if not _FLAG.fullmatch(value):
        raise ValueError(f"flag {value!r} must look like --name (lower case, digits, -)")
    return value


def _metavar(value: str) -> str:
    if not _METAVAR.fullmatch(value):
        raise ValueError(f"metavar {value!r} must be upper case with no spaces")
    return value


def _help(value: str) -> str:
    if not value.strip() or "\n" in value:
        raise ValueError("help must be one non-blank line")
    return value


def _keyword(value: str) -> str:
    if not value.isidentifier():
        raise ValueError(f"{value!r} is not a keyword argument name")
    return value


Flag = Annotated[str, AfterValidator(_flag)]
Metavar = Annotated[str, AfterValidator(_metavar)]
HelpLine = Annotated[str, Field(min_length=1), AfterValidator(_help)]
Keyword = Annotated[str, AfterValidator(_keyword)]


class CliValue(str, enum.Enum):
    """What the command line accepts as the value of a CLI source."""

    TEXT = "text"
    """Any string."""
    DIRECTORY = "directory"
    """A path that is not a file (it may not exist yet)."""
    EXISTING_DIRECTORY = "existing_directory"
    """A directory that exists."""
    POSITIVE_INTEGER = "positive_integer"
    """A whole number of at least 1 (given to the factory as its decimal string)."""


class CliOption(FrozenModel):
    """A further ``--flag VALUE`` of a CLI source: one factory option, the same for every
    value of that source (``--chunk-chars 1500`` for each ``PATH``).

    Given, it reaches the factory as ``option=VALUE`` (a string); not given, the factory's
    default holds.
    """

    flag: Flag
    """``--name`` (lower case, digits, ``-``)."""
    option: Keyword
    """The factory option that receives the value (``chunk_chars``)."""
    help: HelpLine
    """One line for ``--help``."""
    metavar: Metavar = "VALUE"
    """How help names the value (upper case)."""
    value: CliValue = CliValue.TEXT
    """What the value must be."""


class CliSource(FrozenModel):
    """One source the ``taskctx`` command line can attach: a ``--flag VALUE`` or the
    positional ``PATH...``.

    Each value given becomes ``host.source(kind, **{value_option: value, **fixed_options})``,
    attached under ``binding_id`` (several under :meth:`bindings_for`'s names). With
    ``index_binding_id`` set, ``taskctx index`` takes it too and binds each value as
    ``taskctx read`` does, so the index it builds is the one a later read uses.
    """

    kind: str
    """The source kind made (registered by this plugin or another)."""
    value_option: Keyword
    """The factory option that receives the value (``root``)."""
    flag: Flag | None = None
    """``--name``; None for the positional ``PATH...`` (which is always repeatable)."""
    binding_id: str
    """The binding id of a single value."""
    help: HelpLine
    """One line for ``taskctx read --help``."""
    metavar: Metavar = "DIR"
    """How help names the value (upper case)."""
    multiple: bool = False
    """Whether the flag may be given more than once (the positional always may)."""
    value: CliValue = CliValue.DIRECTORY
    """What the value must be."""
    fixed_options: Mapping[str, str] = Field(default_factory=dict)
    """Further factory options, the same for every value (``{"mode": "read_only"}``)."""
    index_binding_id: str | None = None
    """Set: ``taskctx index`` takes this source too (binding its values as ``taskctx read``
    does; the stem itself named them before 0.2); None: it does not."""
    options: tuple[CliOption, ...] = ()
    """Further flags that set a factory option for every value of this source."""

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

    @field_validator("binding_id", "index_binding_id")
    @classmethod
    def _binding(cls, value: str | None) -> str | None:
        if value is not None and not BINDING_ID_PATTERN.fullmatch(value):
            raise ValueError(f"binding id {value!r} must match {BINDING_ID_PATTERN.pattern}")
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
        named = [self.value_option, *self.fixed_options]
        for option in self.options:
            if option.option in named:
                raise ValueError(f"options sets {option.option!r}, which is already given")
            if option.flag == self.flag:
                raise ValueError(f"options reuses this source's flag {option.flag}")
            named.append(option.option)
        return self

    def bindings_for(self, values: Sequence[str]) -> tuple[str, ...]:
        """The binding ids of ``values`` given on one command line (``taskctx read`` and
        ``taskctx index`` alike, so an index built by one serves the other).

        One value binds ``binding_id``; several folders bind ``<binding_id>-<folder name>``
        (``files-docs``, ``files-src``; a name given twice numbered on: ``files-docs-2``),
        several other values ``<binding_id>-<n>``.
        """
        if len(values) == 1:
            return (self.binding_id,)
        if self.value is not CliValue.DIRECTORY and self.value is not CliValue.EXISTING_DIRECTORY:
            return tuple(f"{self.binding_id}-{n}" for n in range(1, len(values) + 1))
        ids: list[str] = []
        for n, value in enumerate(values, start=1):
            name = _UNSAFE_NAME.sub("-", os.path.basename(os.path.normpath(value))).strip("-.")
            stem = f"{self.binding_id}-{name or n}"[:120]
            chosen, again = stem, 1
            while chosen in ids:
                again += 1
                chosen = f"{stem}-{again}"
            ids.append(chosen)
        return tuple(ids)

    def binding_ids(self, count: int, index: bool = False) -> tuple[str, ...]:
        """The binding ids of ``count`` values as the command line named them before 0.2
        (``<binding_id>-<n>``; ``<index_binding_id>-<n>`` for ``taskctx index`` when
        ``index``). The commands now bind with :meth:`bindings_for`; this stays for the
        callers of this method."""
        if index:
            if self.index_binding_id is None:
                raise ValueError(f"{self.name} is not indexed by taskctx index")
            return tuple(f"{self.index_binding_id}-{n}" for n in range(1, count + 1))
        if count == 1:
            return (self.binding_id,)
        return tuple(f"{self.binding_id}-{n}" for n in range(1, count + 1))
