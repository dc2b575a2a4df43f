"""``SkillLimits``: the bounds on what the library reads, for discovery and binding alike."""

from __future__ import annotations

from typing import Any

import attrs

__all__ = ["SkillLimits"]


def _positive(instance: Any, attribute: attrs.Attribute[int], value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"SkillLimits.{attribute.name} must be a positive int, not {value!r}")


@attrs.define(frozen=True, slots=True)
class SkillLimits:
    """Bounds on one skill folder and on the library; more than this is refused.

    Every bound is checked before the bytes it guards are read or parsed:

    - ``max_files``, ``max_file_bytes``, ``max_total_bytes``: regular files in one skill,
      bytes of any one file (``SKILL.md`` included, and every blob the store reads back),
      bytes of all its files;
    - ``max_entries``: directory entries (files and folders, hidden ones included) one
      skill folder may hold in all, and the library root may hold;
    - ``max_depth``: how deeply folders may nest inside a skill;
    - ``max_front_matter_bytes``, ``max_front_matter_lines``, ``max_front_matter_depth``:
      the YAML between the ``---`` lines of ``SKILL.md``: its size, its lines and its
      nesting (indentation levels, each ``- `` or ``? `` of a compact entry counting as
      one), checked before the YAML parser sees it.
    """

    max_files: int = attrs.field(default=2_000, validator=_positive)
    max_file_bytes: int = attrs.field(default=16 * 1024 * 1024, validator=_positive)
    max_total_bytes: int = attrs.field(default=64 * 1024 * 1024, validator=_positive)
    max_entries: int = attrs.field(default=10_000, validator=_positive)
    max_depth: int = attrs.field(default=32, validator=_positive)
    max_front_matter_bytes: int = attrs.field(default=16 * 1024, validator=_positive)
    max_front_matter_lines: int = attrs.field(default=128, validator=_positive)
    max_front_matter_depth: int = attrs.field(default=8, validator=_positive)
