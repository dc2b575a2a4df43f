"""File context: selected files, loaded once per logical run and pinned to their route.

The first request of a run (``run_id``) reads each selected file through the
:class:`~taskctx_workspace.TaskWorkspace` (confined) and pins it: the route it was
loaded from (workspace root, relative path, origin, resolved location), its sha256 and
the text delivered. Every later request of the same run delivers exactly that block,
even if the file changed or the workspace now resolves the path elsewhere; a new
``run_id`` loads afresh. :meth:`FileContext.release` forgets a finished run.

Bounds: ``max_files`` (a selection over it is refused when the capability is made:
explicitly selected files are never dropped), ``max_lines_per_file`` and ``max_chars``
for the whole block as the model reads it (escaped). A file over a bound is delivered
cut, with an explicit ``<truncated>`` element stating the lines and characters omitted;
never silently. The characters are shared fairly: small files whole, the rest split
what remains. Non-text files (images, binaries, documents without a handler) are named
with their media type, size and sha256, never their contents. A missing file is
reported missing. Each file is one ``<file>`` element whose facts are attributes and
whose text is escaped content, so no file can close its element or fake another::

    Selected files (loaded at the first request of this run):
    <file path="log.txt" media_type="text/plain" bytes="790" sha256="..." lines="100" ...>
    step 0
    <truncated lines_omitted="99" chars_omitted="783"/>
    </file>
    <file path="shot.png" media_type="image/png" ... status="reference_only" reason="..."/>
    <file path="gone.txt" status="not_found"/>
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Literal

from pydantic import Field
from taskctx_workspace import TaskWorkspace, WorkspaceNotFoundError
from taskctx_workspace.paths import normalize_relative

from taskctx.markup import attrs, element, escape_text
from taskctx.model import FrozenModel
from taskctx_memory.request import (
    CapabilityLimitError,
    CapabilityLimits,
    ContextSection,
    Placement,
    RequestTurn,
)

__all__ = ["FileContext", "FileContextLimits", "PinnedFile"]

HEADER = "Selected files (loaded at the first request of this run):"
PinStatus = Literal["text", "reference_only", "not_found"]


class FileContextLimits(CapabilityLimits):
    """Limits of the file block: characters, files, lines delivered per file."""

    max_chars: int = Field(default=24_000, ge=1)
    max_files: int = Field(default=8, ge=1)
    max_lines_per_file: int = Field(default=400, ge=1)


class PinnedFile(FrozenModel):
    """One selected file as pinned for a run: its route, digest and what was delivered.

    ``location`` is the resolved real path the bytes came from (``root`` + ``path``, or
    this execution's fallback copy when ``origin`` is ``fallback``). ``text`` is the
    delivered (possibly cut) text; None for reference-only and missing files.
    """

    path: str
    root: str
    status: PinStatus
    origin: str | None = None
    location: str | None = None
    sha256: str | None = None
    media_type: str | None = None
    size: int | None = None
    text: str | None = None
    lines_total: int = 0
    chars_total: int = 0
    lines_omitted: int = 0
    chars_omitted: int = 0
    reason: str | None = None


def _line_count(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def _head_lines(text: str, count: int) -> str:
    """The first ``count`` lines of ``text`` (``\\n``-terminated), with their newlines."""
    end = -1
    for _ in range(count):
        end = text.find("\n", end + 1)
        if end < 0:
            return text
    return text[: end + 1]


def _split_lf(text: str) -> list[str]:
    """``text`` split after each LF (escaping is additive over such pieces)."""
    pieces = text.split("\n")
    return [piece + "\n" for piece in pieces[:-1]] + ([pieces[-1]] if pieces[-1] else [])


def _cut(text: str, allowance: int) -> str:
    """The longest start of ``text`` whose escaped form fits ``allowance`` characters.

    Cut at a line end when a whole line fits, else inside the first line.
    """
    if len(escape_text(text)) <= allowance:
        return text
    kept = size = 0
    for line in _split_lf(text):
        cost = len(escape_text(line))
        if size + cost > allowance:
            break
        size += cost
        kept += len(line)
    if kept:
        return text[:kept]
    first = text.partition("\n")[0]
    low, high = 0, len(first)  # escaped length only grows with the prefix of one line
    while low < high:
        middle = (low + high + 1) // 2
        if len(escape_text(first[:middle])) <= allowance:
            low = middle
        else:
            high = middle - 1
    return first[:low]


def _truncated(lines_omitted: int, chars_omitted: int) -> str:
    return element("truncated", None, lines_omitted=lines_omitted, chars_omitted=chars_omitted)


_CLOSE = "</file>"


def _open(pin: PinnedFile) -> str:
    """The ``<file>`` tag of ``pin``: self-closing unless it delivers text."""
    if pin.status == "not_found":
        return f"<file {attrs(path=pin.path, status='not_found')}/>"
    facts = attrs(path=pin.path, media_type=pin.media_type, bytes=pin.size, sha256=pin.sha256)
    if pin.status == "reference_only":
        return f"<file {facts} {attrs(status='reference_only', reason=pin.reason)}/>"
    return f"<file {facts} {attrs(lines=pin.lines_total, chars=pin.chars_total)}>"


def _fair_shares(needs: list[int], available: int) -> list[int]:
    """Characters per file: small needs whole, the rest split what remains evenly."""
    shares = [0] * len(needs)
    remaining = available
    order = sorted(range(len(needs)), key=lambda i: (needs[i], i))
    for position, index in enumerate(order):
        share = remaining // (len(order) - position)
        shares[index] = min(needs[index], share)
        remaining -= shares[index]
    return shares


def _measure(loaded: tuple[PinnedFile, ...], limit: int) -> tuple[list[str], int]:
    """Each pin's text cut to ``limit`` lines, and the characters of the block's header,
    headings and markers: what the text may not use."""
    bodies: list[str] = []
    overhead = len(HEADER)
    for pin in loaded:
        overhead += 1 + len(_open(pin))
        body = _head_lines(pin.text or "", limit)
        bodies.append(body)
        if pin.status == "text":
            # a newline after a cut body, the longest <truncated> this file can have
            # with its newline, and the closing tag with its newline
            worst = _truncated(pin.lines_total, pin.chars_total)
            overhead += 1 + 1 + len(worst) + 1 + len(_CLOSE)
    return bodies, overhead


def _deliver(pin: PinnedFile, body: str, share: int, parts: list[str]) -> PinnedFile:
    """Append ``pin``'s heading, its body cut to ``share`` characters, its marker and
    closing tag to ``parts``; the pin as delivered."""
    parts.append(_open(pin))
    if pin.status != "text":
        return pin
    delivered = _cut(body, share)
    lines_omitted = pin.lines_total - _line_count(delivered)
    chars_omitted = pin.chars_total - len(delivered)
    if delivered:  # the join's newline stands for the last line's own
        shown = escape_text(delivered)
        parts.append(shown[:-1] if shown.endswith("\n") else shown)
    if chars_omitted:
        parts.append(_truncated(lines_omitted, chars_omitted))
    parts.append(_CLOSE)
    return pin.model_copy(
        update={
            "text": delivered,
            "lines_omitted": lines_omitted,
            "chars_omitted": chars_omitted,
        }
    )


class FileContext:
    """Selected workspace files, pinned per run (see the module doc for the rules)."""

    __slots__ = ("_lock", "_pins", "limits", "name", "paths", "workspace")
    placement: Placement = "in_order"

    def __init__(
        self,
        workspace: TaskWorkspace,
        paths: Sequence[str],
        limits: FileContextLimits | None = None,
        *,
        name: str = "files",
    ) -> None:
        if isinstance(paths, str):
            raise TypeError("paths must be a sequence of paths, not one string")
        self.workspace = workspace
        self.limits: FileContextLimits = limits if limits is not None else FileContextLimits()
        self.name = name
        selected = tuple(normalize_relative(path) for path in paths)  # PolicyError on escape
        if len(set(selected)) != len(selected):
            raise ValueError(f"a file is selected twice: {selected}")
        if len(selected) > self.limits.max_files:
            raise CapabilityLimitError(
                name, "max_files", self.limits.max_files, len(selected), "too many selected files"
            )
        self.paths: tuple[str, ...] = selected
        self._pins: dict[str, tuple[tuple[PinnedFile, ...], ContextSection | None]] = {}
        self._lock = threading.Lock()

    def pinned(self, run_id: str) -> tuple[PinnedFile, ...] | None:
        """The files pinned for ``run_id``, or None before its first request."""
        entry = self._pins.get(run_id)
        return None if entry is None else entry[0]

    def release(self, run_id: str) -> None:
        """Forget ``run_id``'s pins (a finished run); its id would then load afresh."""
        with self._lock:
            self._pins.pop(run_id, None)

    def contribute(self, turn: RequestTurn) -> ContextSection | None:
        """The pinned block of ``turn.run_id``, loading it on the run's first request."""
        with self._lock:
            entry = self._pins.get(turn.run_id)
            if entry is None:
                loaded = tuple(self._load(path) for path in self.paths)
                entry = self._render(loaded)
                self._pins[turn.run_id] = entry
            return entry[1]

    def _load(self, path: str) -> PinnedFile:
        """Read ``path`` once through the workspace and record its route and digest."""
        root = os.fspath(self.workspace.root)
        try:
            result = self.workspace.read_file(path)
        except WorkspaceNotFoundError:
            return PinnedFile(path=path, root=root, status="not_found", reason="not found")
        if result.origin == "external":
            where = os.path.join(root, path)
        else:
            where = os.path.join(
                os.fspath(self.workspace.areas_dir), "files", self.workspace.execution_id, path
            )
        facts = {
            "path": path,
            "root": root,
            "origin": result.origin,
            "location": os.path.realpath(where),
            "sha256": result.sha256,
            "media_type": result.media_type,
            "size": result.size,
        }
        if result.text is None:
            reason = result.problem.message if result.problem else str(result.representation)
            return PinnedFile(status="reference_only", reason=reason, **facts)
        text = result.text
        return PinnedFile(
            status="text",
            text=text,
            lines_total=_line_count(text),
            chars_total=len(text),
            **facts,
        )

    def _render(
        self, loaded: tuple[PinnedFile, ...]
    ) -> tuple[tuple[PinnedFile, ...], ContextSection | None]:
        """The delivered pins (cut to the bounds, with markers) and the block."""
        if not loaded:
            return loaded, None
        bodies, overhead = _measure(loaded, self.limits.max_lines_per_file)
        available = self.limits.max_chars - overhead
        if available < 0:
            raise CapabilityLimitError(
                self.name,
                "max_chars",
                self.limits.max_chars,
                overhead,
                "the headings and markers of the selected files alone do not fit",
            )
        shares = _fair_shares([len(escape_text(body)) for body in bodies], available)
        pins: list[PinnedFile] = []
        parts = [HEADER]
        for pin, body, share in zip(loaded, bodies, shares, strict=True):
            pins.append(_deliver(pin, body, share, parts))
        text = "\n".join(parts)
        widest = max((_line_count(p.text or "") for p in pins), default=0)
        return tuple(pins), ContextSection.of(
            self.name,
            text,
            self.limits,
            used={"files": len(pins), "lines_per_file": widest},
            omitted={
                "lines": sum(p.lines_omitted for p in pins),
                "chars": sum(p.chars_omitted for p in pins),
                "files_truncated": sum(p.chars_omitted > 0 for p in pins),
            },
            notes=tuple(f"{p.path}: {p.status}" for p in pins if p.status != "text"),
        )
