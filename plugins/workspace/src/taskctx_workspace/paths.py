"""Path confinement, the lexical layer: every caller path is checked here before any I/O.

:func:`normalize_relative` is pure: it refuses what can never name a file inside a
workspace (absolute paths, ``..``, NUL bytes, drive letters, backslashes, the empty path,
the workspace's own ``.taskctx/`` state, reserved temporary names) and returns the
canonical POSIX form. What a path meets on disk (symlinks, folders swapped for symlinks,
special files) is the business of :mod:`taskctx_workspace.beneath`, which opens every
component without following links; the rules on file kinds it applies live here.

Every refusal is a :class:`~taskctx.errors.PolicyError` naming the path and the rule.
"""

from __future__ import annotations

import os
import re
import stat
import sys
from pathlib import Path, PurePath

from taskctx.errors import PolicyError
from taskctx.nofollow import describe_mode

__all__ = [
    "STATE_DIR_NAME",
    "TEMP_MARKER",
    "default_agent_root",
    "is_state_name",
    "normalize_prefix",
    "normalize_relative",
    "require_regular",
    "require_single_link",
    "safe_name",
]

STATE_DIR_NAME = ".taskctx"
"""The workspace's own state folder at its root; never addressable by a caller's path."""
TEMP_MARKER = ".taskctx-tmp-"
"""Marks the hidden temporary siblings of atomic writes; such names are reserved."""

_DRIVE = re.compile(r"[A-Za-z]:")
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


def _refuse(path: object, rule: str) -> PolicyError:
    return PolicyError(f"path {path!r} refused: {rule}")


def _as_text(path: str | os.PathLike[str], what: str) -> str:
    if isinstance(path, PurePath):
        return path.as_posix()
    raw = os.fspath(path)
    if not isinstance(raw, str):
        raise _refuse(raw, f"a {what} must be text, not {type(raw).__name__}")
    return raw


def is_state_name(name: str) -> bool:
    """Whether ``name`` (a first path component) is the workspace state folder, any case."""
    return name.casefold() == STATE_DIR_NAME


def _check_lexical(text: str, what: str) -> list[str]:
    """Shared rules of paths and prefixes; return the components without ``.``/empty."""
    if "\x00" in text:
        raise _refuse(text, f"a {what} must not contain NUL bytes")
    if "\\" in text:
        raise _refuse(text, f"a {what} must use '/' separators; backslashes are not allowed")
    if _DRIVE.match(text):
        raise _refuse(text, f"a {what} must not start with a drive letter")
    if text.startswith("/"):
        raise _refuse(text, f"a {what} must be relative to the workspace root, not absolute")
    parts = [part for part in text.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise _refuse(text, f"a {what} must not contain '..' components")
    for part in parts:
        if TEMP_MARKER in part:
            raise _refuse(text, f"names containing {TEMP_MARKER!r} are reserved for atomic writes")
    if parts and is_state_name(parts[0]):
        raise _refuse(text, f"{STATE_DIR_NAME}/ holds the workspace's own state")
    return parts


def normalize_relative(path: str | os.PathLike[str]) -> str:
    """The canonical relative POSIX form of a caller's path, or PolicyError naming the rule.

    ``./a//b/`` becomes ``a/b``. Refused: non-text, empty (or only ``.``), NUL bytes,
    backslashes, drive letters (``C:x``, ``C:\\x``), absolute paths, ``..`` components,
    reserved temporary names and anything under ``.taskctx/`` (any case).
    """
    text = _as_text(path, "path")
    if not text:
        raise _refuse(text, "the path is empty")
    parts = _check_lexical(text, "path")
    if not parts:
        raise _refuse(text, "the path names the workspace root, not a file")
    return "/".join(parts)


def normalize_prefix(prefix: str | os.PathLike[str]) -> str:
    """A listing prefix (a plain string prefix of relative paths); ``""`` means everything.

    The rules of :func:`normalize_relative` apply; the last component may be partial
    (``src/ap`` matches ``src/app.py``, ``.`` matches hidden names) and a trailing ``/``
    is kept, so ``src/`` matches only what is inside ``src``.
    """
    text = _as_text(prefix, "prefix")
    if not text:
        return ""
    _check_lexical(text, "prefix")
    head, _, last = text.rpartition("/")
    folders = [part for part in head.split("/") if part not in ("", ".")]
    return "/".join(folders) + "/" + last if folders else last


def safe_name(value: str, what: str) -> str:
    """``value`` if it is a safe single path component (letters, digits, ``_.-``)."""
    if not isinstance(value, str) or not _SAFE_NAME.fullmatch(value):
        raise PolicyError(
            f"{what} {value!r} refused: use 1-128 letters, digits, '_', '.' or '-', "
            "starting with a letter or digit"
        )
    return value


def require_regular(rel: str, st: os.stat_result) -> None:
    """PolicyError unless ``st`` is a regular file (directories and special files refused)."""
    if not stat.S_ISREG(st.st_mode):
        kind = describe_mode(st.st_mode)
        raise _refuse(rel, f"it is {kind}; only regular files are read or written")


def require_single_link(rel: str, st: os.stat_result) -> None:
    """PolicyError if the regular file ``st`` has other names (``st_nlink > 1``).

    Writes and promotion targets are refused: the other names may be outside the root,
    and an atomic replace would silently detach this name from them.
    """
    if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
        raise _refuse(
            rel,
            f"it is a hard link ({st.st_nlink} names share the file, and the others may be "
            "outside the workspace); writes to hard-linked files are refused",
        )


def default_agent_root(agent_id: str, entry_dir: str | os.PathLike[str] | None = None) -> Path:
    """``<entry dir>/.taskctx/task_workspaces/<agent-id>``: one workspace per agent id.

    The entry dir defaults to the folder of the running script (``sys.argv[0]``), or the
    current directory when there is none (``python -c``, a REPL). ``agent_id`` must be a
    safe name, so two agents never share a root by accident of spelling.
    """
    name = safe_name(agent_id, "agent id")
    base = Path(entry_dir) if entry_dir is not None else _entry_dir()
    return base.resolve() / STATE_DIR_NAME / "task_workspaces" / name


def _entry_dir() -> Path:
    script = sys.argv[0] if sys.argv else ""
    if script and script not in ("-c", "-m", "-") and os.path.isfile(script):
        return Path(script).resolve().parent
    return Path.cwd()
