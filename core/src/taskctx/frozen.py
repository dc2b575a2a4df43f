"""The base of every boundary value: a pydantic v2 model, frozen and strict."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["FrozenModel"]


class FrozenModel(BaseModel):
    """Base of every boundary value: immutable, strict about unknown fields."""

    model_config = ConfigDict(
        frozen=True, extra="forbid", ser_json_bytes="base64", val_json_bytes="base64"
    )
