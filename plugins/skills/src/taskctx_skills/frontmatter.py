"""The metadata layer of ``SKILL.md`` bytes, bounded before skills-ref parses it.

skills-ref parses front matter with strictyaml, whose cost grows with the square of the
number of mapping entries (every value is looked up again by a linear scan of its
mapping: 88 KB of ``key: value`` lines take about a minute) and whose parser recurses
once per nesting level (a few hundred levels, under 1 KB of ``- - - ...``, exhaust the
interpreter's stack). So the front matter is bounded first, before any YAML is parsed,
by :class:`~taskctx_skills.limits.SkillLimits`: its bytes, its lines and an upper
estimate of its nesting. Only the front matter, through its closing ``---``, is handed
to the parser, never the body. Within the default bounds any front matter parses in a
few hundredths of a second.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from skills_ref.errors import ParseError
from skills_ref.parser import parse_frontmatter
from skills_ref.validator import validate_metadata

from taskctx_skills.limits import SkillLimits

__all__ = ["front_matter_depth", "read_metadata"]

_DELIMITER = b"---"
_BREAK = re.compile(r"\r\n|[\n\r\x85\u2028\u2029]")
"""What YAML reads as a line break."""
_COMPACT = re.compile(r"[-?:](?:[ \t]+|$)")
"""A block indicator opening a nested node on the same line: ``- ``, ``? ``, ``: ``."""


def front_matter_depth(front_matter: str) -> int:
    """An upper estimate of how deeply the block YAML ``front_matter`` nests.

    Each line opens one level at its indentation (closing the levels indented as far or
    further), and one more per compact indicator that starts its content (``- - x`` is
    two sequences deep). Blank and comment lines are skipped.
    """
    columns: list[int] = []
    deepest = 0
    for line in _BREAK.split(front_matter):
        content = line.lstrip(" ")
        if not content.strip() or content.startswith("#"):
            continue
        column = len(line) - len(content)
        while columns and columns[-1] >= column:
            columns.pop()
        columns.append(column)
        while (indicator := _COMPACT.match(line, column)) is not None:
            column = indicator.end()
            columns.append(column)
        deepest = max(deepest, len(columns))
    return deepest


def _bounded_head(data: bytes, limits: SkillLimits) -> tuple[str, list[str]]:
    """``SKILL.md`` through its closing ``---`` (what the parser needs), or the problems."""
    if not data.startswith(_DELIMITER):
        return "", []  # skills-ref says it has no front matter
    most = limits.max_front_matter_bytes
    window = len(_DELIMITER) + most + len(_DELIMITER)
    end = data.find(_DELIMITER, len(_DELIMITER), window)
    if end < 0:
        if len(data) <= window:
            return data.decode("utf-8"), []  # skills-ref says it is not closed
        return "", [
            f"SKILL.md front matter is over the {most}-byte front matter limit "
            f"(no closing --- within its first {most} bytes)"
        ]
    text = data[len(_DELIMITER) : end].decode("utf-8")
    problems = []
    lines = max(len(_BREAK.findall(text)) - 1, 0)
    if lines > limits.max_front_matter_lines:
        problems.append(
            f"SKILL.md front matter has {lines} lines, over the "
            f"{limits.max_front_matter_lines}-line front matter limit"
        )
    depth = front_matter_depth(text)
    if depth > limits.max_front_matter_depth:
        problems.append(
            f"SKILL.md front matter nests {depth} levels deep, over the "
            f"{limits.max_front_matter_depth}-level front matter limit"
        )
    return f"---{text}---", problems


def read_metadata(
    folder: Path, data: bytes, limits: SkillLimits | None = None
) -> tuple[dict[str, Any], list[str]]:
    """Front matter of ``SKILL.md`` bytes and the validator's messages (empty: valid).

    Bytes over a front matter bound are not parsed: the messages name the bound.
    """
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return {}, [f"SKILL.md is not UTF-8: {exc}"]
    head, problems = _bounded_head(data, limits or SkillLimits())
    if problems:
        return {}, problems
    try:
        metadata, _ = parse_frontmatter(head)
    except ParseError as exc:
        return {}, [str(exc)]
    except RecursionError:  # a last guard: the depth bound keeps the parser far from it
        return {}, ["SKILL.md front matter nests too deeply to parse"]
    return metadata, list(validate_metadata(metadata, folder))
