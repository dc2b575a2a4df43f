"""The base of every boundary value: a pydantic v2 model, frozen and strict."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from operator import itemgetter
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

__all__ = ["FrozenModel", "Packer", "share_fields_sets", "share_value"]

_M = TypeVar("_M", bound="FrozenModel")
_NEW = object.__new__
_SET = object.__setattr__


class FrozenModel(BaseModel):
    """Base of every boundary value: immutable, strict about unknown fields."""

    model_config = ConfigDict(
        frozen=True, extra="forbid", ser_json_bytes="base64", val_json_bytes="base64"
    )


_FIELDS_SETS: dict[frozenset[str], set[str]] = {}
_MAX_FIELDS_SETS = 1024


def share_fields_sets(models: Iterable[FrozenModel]) -> None:
    """Let frozen models given the same fields share one set of those names.

    pydantic keeps a set per instance of the fields its caller gave (``model_fields_set``):
    728 bytes for a descriptor's nine, a third of what a descriptor holds, and an index
    keeps every descriptor of a source. A frozen model never adds to it (no field can be
    set) and ``model_copy`` copies it first, so models with equal sets can share one.
    """
    shared_sets = _FIELDS_SETS
    for model in models:
        names = model.__pydantic_fields_set__
        key = frozenset(names)
        shared = shared_sets.get(key)
        if shared is None:
            if len(shared_sets) >= _MAX_FIELDS_SETS:
                shared_sets.clear()
            shared = shared_sets[key] = set(names)
        if names is not shared:
            object.__setattr__(model, "__pydantic_fields_set__", shared)


def share_value(model: FrozenModel, name: str, value: Any) -> None:
    """Let ``model`` hold ``value`` itself as field ``name``, where it holds an equal copy.

    pydantic gives each model its own copy of a dict it was given, so a source that hands
    thousands of descriptors the same metadata still costs a dict each (184 bytes for a
    record's four keys) in an index that keeps them all. A source that keeps one dict per
    distinct metadata, and never changes it, shares it back after validation. Only an
    equal value is accepted: what the model says never changes.
    """
    held = model.__dict__[name]
    if held is value:
        return
    if type(held) is not type(value) or held != value:
        raise ValueError(f"{name!r} of {type(model).__name__} is not equal to the value shared")
    model.__dict__[name] = value


class Packer(Generic[_M]):
    """Packs frozen models of one class into tuples of their values, and back.

    A model keeps its values in a dict of its own (464 bytes for a descriptor's 17
    fields); a tuple of the same values costs 176. Whoever keeps many models of one
    class (an index keeps every descriptor of a source) keeps them packed and unpacks
    the few it hands out. Unpacking does not validate: a row is only ever made by
    ``pack`` from a model that was validated, so it builds the same model again (equal,
    with the same fields set), not a copy checked twice.
    """

    __slots__ = ("_dict_of", "_model", "_names", "_values")

    def __init__(self, model: type[_M]) -> None:
        self._model = model
        self._names = tuple(model.model_fields)
        self._values = itemgetter(*self._names)
        self._dict_of = _dict_maker(self._names)

    def pack(self, model: _M) -> tuple[Any, ...]:
        """The values of ``model`` in field order, then its fields set."""
        if type(model) is not self._model:
            raise TypeError(f"packs {self._model.__name__}, not {type(model).__name__}")
        return (*self._values(model.__dict__), model.__pydantic_fields_set__)

    def unpack(self, row: tuple[Any, ...]) -> _M:
        """The model ``pack`` made ``row`` from (a new instance, equal to it)."""
        model = _NEW(self._model)
        _SET(model, "__dict__", self._dict_of(row))
        _SET(model, "__pydantic_fields_set__", row[-1])
        _SET(model, "__pydantic_extra__", None)
        _SET(model, "__pydantic_private__", None)
        return model


def _dict_maker(names: tuple[str, ...]) -> Callable[[tuple[Any, ...]], dict[str, Any]]:
    """A function making ``{names[0]: row[0], ...}`` from a row, as one dict display:
    a third faster than ``dict(zip(names, row))`` (measured), and unpacking is what a
    read pays for each descriptor it is handed."""
    if not all(name.isidentifier() for name in names):
        raise ValueError(f"not field names: {names!r}")
    items = ", ".join(f"{name!r}: row[{i}]" for i, name in enumerate(names))
    namespace: dict[str, Any] = {}
    exec(f"def dict_of(row):\n    return {{{items}}}", namespace)  # the names are checked
    return namespace["dict_of"]  # type: ignore[no-any-return]
