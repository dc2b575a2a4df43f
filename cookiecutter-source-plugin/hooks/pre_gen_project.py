"""Refuse a plugin name that cannot become a distribution, package and source kind name.

Cookiecutter renders this file before running it: ``NAME`` is the name the user typed.
"""

from __future__ import annotations

import json
import re
import sys

NAME: str = json.loads(r""" {{ cookiecutter.plugin_name|tojson }} """)

_ALLOWED = re.compile(r"[A-Za-z][A-Za-z0-9 _-]*")
_SEPARATORS = " _-"
MAX_LENGTH = 40


def problem_with(name: str) -> str | None:
    """Why ``name`` cannot be a plugin name, or None if it can."""
    if not name:
        return "it is empty"
    if not name[0].isascii() or not name[0].isalpha():
        return "it must start with a letter (a-z, A-Z)"
    if _ALLOWED.fullmatch(name) is None:
        bad = sorted({c for c in name if not (c.isascii() and (c.isalnum() or c in _SEPARATORS))})
        return f"it may hold only letters, digits, spaces, '-' and '_' (not {' '.join(bad)})"
    if name[-1] in _SEPARATORS:
        return "it must end with a letter or a digit"
    if re.search(r"[ _-]{2,}", name):
        return "separate words with one space, '-' or '_'"
    if len(name) > MAX_LENGTH:
        return f"it is {len(name)} characters long; keep it to {MAX_LENGTH}"
    if re.fullmatch(r"taskctx([ _-].*)?", name.lower()):
        return "leave out the 'taskctx' prefix: the template adds it ('json folder')"
    return None


def main() -> int:
    """Exit 0 for a good name; print why and exit 1 otherwise."""
    problem = problem_with(NAME)
    if problem is None:
        return 0
    print(
        f"ERROR: invalid plugin_name {NAME!r}: {problem}.\n"
        "A plugin name becomes the distribution taskctx-<name>, the package "
        "taskctx_<name> and the source kind <name>; for example 'json folder' gives "
        "taskctx-json-folder, taskctx_json_folder and json_folder.",
        file=sys.stderr,
    )
    return 1


if __name__ == "__main__":
    sys.exit(main())
