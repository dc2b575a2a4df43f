"""The base of every boundary value: a pydantic v2 model, frozen and strict."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from operator import itemgetter
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

__all__ = ["Builder", "FrozenModel", "Packer", "share_fields_sets"]

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


class Builder(Generic[_M]):
    """Makes models of one class from values their producer vouches for, unvalidated.

    For a first-party producer making thousands of models a read from values of the
    declared types it owns (a record store's descriptors, from its own rows): validating
    each costs several microseconds, this about one. ``given`` names the fields
    :meth:`build` takes (as keywords); the others get their defaults (a default factory
    is called per model). The model equals the validated one, with the same fields set;
    whoever uses a Builder tests that, since nothing here checks a value.
    """

    __slots__ = ("_build", "_model")

    def __init__(self, model: type[_M], given: tuple[str, ...]) -> None:
        fields = model.model_fields
        unknown = [name for name in given if name not in fields]
        if unknown or len(set(given)) != len(given):
            raise ValueError(f"{model.__name__} builds from its own fields once each: {given}")
        required = [n for n, f in fields.items() if f.is_required() and n not in given]
        if required:
            raise ValueError(f"{model.__name__} needs {required} given to be built")
        scope: dict[str, Any] = {"_NEW": _NEW, "_SET": _SET, "_model": model}
        scope["_given"] = set(given)
        items = []
        for name, field in fields.items():
            if not name.isidentifier():
                raise ValueError(f"not a field name: {name!r}")
            if name in given:
                items.append(f"{name!r}: {name}")
            elif field.default_factory is not None:
                scope[f"_factory_{name}"] = field.default_factory
                items.append(f"{name!r}: _factory_{name}()")
            else:
                scope[f"_default_{name}"] = field.default
                items.append(f"{name!r}: _default_{name}")
        source = (
            f"def build(*, {', '.join(given)}):\n"
            "    model = _NEW(_model)\n"
            f"    _SET(model, '__dict__', {{{', '.join(items)}}})\n"
            "    _SET(model, '__pydantic_fields_set__', _given)\n"
            "    _SET(model, '__pydantic_extra__', None)\n"
            "    _SET(model, '__pydantic_private__', None)\n"
            "    return model\n"
        )
        exec(source, scope)  # every name in it is a checked identifier
        self._build: Callable[..., _M] = scope["build"]
        self._model = model

    def build(self, **values: Any) -> _M:
        """A model of exactly the ``given`` fields' ``values`` and the other defaults."""
        return self._build(**values)


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
