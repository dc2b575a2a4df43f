"""Authorised path globs: ``*`` and ``?`` inside one path segment, ``**`` across segments."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable

import attrs

__all__ = ["PathRules"]


def _compile(glob: str) -> re.Pattern[str]:
    if not glob or glob.startswith("/") or "\\" in glob or ".." in glob.split("/"):
        raise ValueError(f"invalid path glob {glob!r}: relative, '/'-separated, no '..'")
    out = []
    index = 0
    while index < len(glob):
        char = glob[index]
        if glob.startswith("**/", index):
            out.append("(?:[^/]+/)*")
            index += 3
            continue
        if glob.startswith("**", index):
            out.append(".*")
            index += 2
            continue
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        else:
            out.append(re.escape(char))
        index += 1
    return re.compile("".join(out))


@attrs.define(frozen=True, slots=True, init=False)
class PathRules:
    """Which paths of the tree may be enumerated or read: any glob matching the whole path."""

    globs: tuple[str, ...]
    _patterns: tuple[re.Pattern[str], ...]

    def __init__(self, globs: Iterable[str]) -> None:
        cleaned = tuple(dict.fromkeys(g.strip() for g in globs))
        if not cleaned:
            raise ValueError("paths= must name at least one glob (use '**' for the whole tree)")
        object.__setattr__(self, "globs", cleaned)
        object.__setattr__(self, "_patterns", tuple(_compile(g) for g in cleaned))

    def allows(self, path: str) -> bool:
        """Whether ``path`` (relative, '/'-separated) is authorised."""
        return any(p.fullmatch(path) for p in self._patterns)

    @property
    def digest(self) -> str:
        """A short digest of the sorted globs: part of the source's revision and identity."""
        raw = json.dumps(sorted(self.globs)).encode()
        return hashlib.sha256(raw).hexdigest()[:12]
