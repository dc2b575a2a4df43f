"""Replacing parts of a request's turns without touching the stored ones.

Filters find the parts they change by :class:`PartLocation` (turn, part and, for a
tool result's top-level image, its index) and hand :func:`replace_parts` what each
becomes; every other turn and part stays the very same object.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import NamedTuple

from taskctx_conversation.history import Turn
from taskctx_conversation.parts import ImagePart, Part, TextPart, ToolResultPart

__all__ = ["PartLocation", "iter_parts", "replace_parts"]


class PartLocation(NamedTuple):
    """Where a part is: its turn, its place in the turn and, for an image inside a tool
    result's ``images``, its index there."""

    turn: int
    part: int
    image: int | None = None


def iter_parts(turns: Sequence[Turn]) -> Iterator[tuple[PartLocation, Part]]:
    """Every part in order, a tool result's top-level images right after the result."""
    for t, turn in enumerate(turns):
        for p, part in enumerate(turn.parts):
            yield PartLocation(t, p), part
            if isinstance(part, ToolResultPart):
                for i, image in enumerate(part.images):
                    yield PartLocation(t, p, i), image


def _result_images(
    result: ToolResultPart, replaced: Mapping[int, Sequence[Part]]
) -> tuple[ToolResultPart, list[Part]]:
    """A tool result's images after replacement; text replacements move after the result
    (a tool result's ``images`` hold images only)."""
    images: list[ImagePart] = []
    texts: list[Part] = []
    for i, image in enumerate(result.images):
        for part in replaced.get(i, (image,)):
            if isinstance(part, ImagePart):
                images.append(part)
            else:
                texts.append(part)
    return result.model_copy(update={"images": tuple(images)}), texts


def replace_parts(
    turns: Sequence[Turn], replacements: Mapping[PartLocation, Sequence[Part]]
) -> tuple[Turn, ...]:
    """``turns`` with the part at each location replaced by its sequence of parts.

    A location's sequence may be empty (the part is removed); a turn left with no part
    at all keeps one text part saying so, since a turn cannot be empty.
    """
    if not replacements:
        return tuple(turns)
    by_turn: dict[int, dict[PartLocation, Sequence[Part]]] = {}
    for location, parts in replacements.items():
        by_turn.setdefault(location.turn, {})[location] = parts
    out = list(turns)
    for t, mine in by_turn.items():
        out[t] = _rebuilt(t, turns[t], mine)
    return tuple(out)


def _rebuilt(t: int, turn: Turn, replacements: Mapping[PartLocation, Sequence[Part]]) -> Turn:
    parts: list[Part] = []
    for p, part in enumerate(turn.parts):
        whole = PartLocation(t, p)
        if whole in replacements:
            parts.extend(replacements[whole])
            continue
        if isinstance(part, ToolResultPart):
            images = {
                loc.image: new
                for loc, new in replacements.items()
                if loc.part == p and loc.image is not None
            }
            if images:
                result, texts = _result_images(part, images)
                parts.append(result)
                parts.extend(texts)
                continue
        parts.append(part)
    if not parts:
        parts.append(TextPart(text="[every part of this turn was removed from this request]"))
    return turn.model_copy(update={"parts": tuple(parts)})
