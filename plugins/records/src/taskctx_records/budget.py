"""The materialization budget: how many records one operation may expand (decode, return).

Over the limit:

- **strict mode** raises :class:`~taskctx.errors.MaterializationBudgetError` before
  expanding anything;
- **default mode** warns (:class:`MaterializationWarning`) and records the call site
  (``file:line`` of the first caller outside this package), then goes on, except when
  memory is tight *and* the caller is a command-line process: then it raises the same
  error, before expanding anything.

*Command-line process*: a ``taskctx`` command is running in this process
(:func:`taskctx.cli.command_running`, set by the ``taskctx`` console script and
``python -m taskctx`` for as long as the command runs). A library or server process is
never one, whatever its stdin is, so it never fails for memory it may still have.

*Tight*: the memory this process can still use (:func:`available_memory`: the least of
``MemAvailable`` in ``/proc/meminfo`` and the headroom ``limit - usage`` of its memory
cgroup and every ancestor, v2 ``memory.max``/``memory.current`` or v1
``memory.limit_in_bytes``/``memory.usage_in_bytes``) is less than the estimated cost of the
expansion, ``count * RECORD_COST_ESTIMATE`` (8 KiB a record). When nothing can be read (not
Linux), memory is not known to be tight and the operation warns.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from types import FrameType

from taskctx.errors import MaterializationBudgetError
from taskctx_records.values import MaterializationEvent

__all__ = [
    "DEFAULT_MATERIALIZATION_LIMIT",
    "RECORD_COST_ESTIMATE",
    "MaterializationBudget",
    "MaterializationWarning",
    "MemoryProbe",
    "available_memory",
    "memory_tight",
]

DEFAULT_MATERIALIZATION_LIMIT = 50_000
RECORD_COST_ESTIMATE = 8 * 1024
"""Bytes one expanded record is assumed to cost (a Record value and its decoded content)."""

MemoryProbe = Callable[[], "int | None"]
"""Bytes of memory this process can still use, or None when it cannot be measured."""

_PACKAGE_DIR = str(Path(__file__).resolve().parent)
_UNLIMITED = 1 << 60  # cgroup v1 writes "no limit" as a number near 2**63


class MaterializationWarning(UserWarning):
    """One operation expanded more records than the materialization budget allows."""


def _read_int(path: Path) -> int | None:
    """The integer in a small kernel file, None if absent, unreadable or ``max``."""
    try:
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


def _meminfo_available(meminfo: Path) -> int | None:
    try:
        lines = meminfo.read_text(encoding="ascii").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    for line in lines:
        name, _, rest = line.partition(":")
        fields = rest.split()
        if name == "MemAvailable" and fields and fields[0].isdigit():
            unit = fields[1].lower() if len(fields) > 1 else ""
            return int(fields[0]) * (1024 if unit == "kb" else 1)
    return None


def _cgroup_dirs(cgroup_root: Path, self_cgroup: Path) -> list[tuple[Path, str, str]]:
    """(folder, limit file, usage file) of this process's memory cgroup and its ancestors."""
    try:
        lines = self_cgroup.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    found: list[tuple[Path, str, str]] = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, member = parts
        if controllers == "":  # cgroup v2 (unified; /unified on hybrid hosts)
            base = cgroup_root
            if not (base / "cgroup.controllers").exists():
                base = cgroup_root / "unified"
            files = ("memory.max", "memory.current")
        elif "memory" in controllers.split(","):
            base, files = cgroup_root / "memory", ("memory.limit_in_bytes", "memory.usage_in_bytes")
        else:
            continue
        folder = base / member.strip("/")
        while True:
            found.append((folder, *files))
            if folder == base or base not in folder.parents:
                break
            folder = folder.parent
    return found


def available_memory(
    *,
    meminfo: Path = Path("/proc/meminfo"),
    cgroup_root: Path = Path("/sys/fs/cgroup"),
    self_cgroup: Path = Path("/proc/self/cgroup"),
) -> int | None:
    """Bytes of memory this process can still use, or None when nothing says.

    The least of ``MemAvailable`` (``meminfo``) and, for the process's memory cgroup
    (named in ``self_cgroup``) and each ancestor that sets a limit, ``limit - usage``
    (v2 ``memory.max - memory.current``, v1 ``memory.limit_in_bytes -
    memory.usage_in_bytes``). The paths are parameters so another system's files can be
    read, as the tests do.
    """
    known = [_meminfo_available(meminfo)]
    for folder, limit_file, usage_file in _cgroup_dirs(cgroup_root, self_cgroup):
        limit = _read_int(folder / limit_file)
        usage = _read_int(folder / usage_file)
        if limit is not None and usage is not None and limit < _UNLIMITED:
            known.append(max(0, limit - usage))
    values = [value for value in known if value is not None]
    return min(values) if values else None


def memory_tight(count: int, available: int | None) -> bool:
    """Whether expanding ``count`` records is estimated to cost more than is ``available``."""
    return available is not None and available < count * RECORD_COST_ESTIMATE


def _command_running() -> bool:
    from taskctx.cli import command_running

    return command_running()


def _call_site() -> tuple[str, int]:
    """File and line of the nearest frame outside taskctx_records."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(_PACKAGE_DIR):
            return filename, frame.f_lineno
        frame = frame.f_back
    return "<unknown>", 0


class MaterializationBudget:
    """Checks each operation's expansion count against ``limit``; keeps the overruns.

    ``memory`` measures what memory is left (default :func:`available_memory`);
    ``command_line`` says whether this is a command-line process (default: a ``taskctx``
    command is running). Both are asked only when an operation is over the limit.
    """

    __slots__ = ("command_line", "events", "limit", "memory", "strict")

    def __init__(
        self,
        limit: int = DEFAULT_MATERIALIZATION_LIMIT,
        *,
        strict: bool = False,
        memory: MemoryProbe | None = None,
        command_line: Callable[[], bool] | None = None,
    ):
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise TypeError(f"materialization_limit is an int, not {type(limit).__name__}")
        if limit < 1:
            raise ValueError("materialization_limit must be at least 1")
        self.limit = limit
        self.strict = strict
        self.memory: MemoryProbe = memory or available_memory
        self.command_line: Callable[[], bool] = command_line or _command_running
        self.events: list[MaterializationEvent] = []

    def charge(self, operation: str, count: int) -> None:
        """Account for one operation about to expand ``count`` records."""
        if count <= self.limit:
            return
        filename, lineno = _call_site()
        site = f"{filename}:{lineno}"
        message = (
            f"{operation} expands {count} records, over the materialization budget of "
            f"{self.limit} (called from {site}); page the query or raise the limit"
        )
        if self.strict:
            raise MaterializationBudgetError(message + " (strict mode)")
        if self.command_line():
            available = self.memory()
            if memory_tight(count, available):
                raise MaterializationBudgetError(
                    f"{message}: memory is tight ({available:,} bytes available, the "
                    f"expansion is estimated at {count * RECORD_COST_ESTIMATE:,}) and this "
                    "is a command-line process"
                )
        self.events.append(
            MaterializationEvent(operation=operation, count=count, limit=self.limit, call_site=site)
        )
        warnings.warn_explicit(message, MaterializationWarning, filename, lineno)
