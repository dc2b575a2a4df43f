"""The base of every boundary value: a pydantic v2 model, frozen and strict."""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict

__all__ = ["FrozenModel", "share_fields_sets"]


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
