"""The path-race attack of issue 13, shared by test_races.py and runnable as a probe.

A real second process (:data:`SWAPPER`) renames a folder away, puts a symlink to an
outside folder in its place, removes it and renames the folder back, in a tight loop,
while this process works through the public TaskWorkspace API. :class:`Tally` records
what every operation did; an escape is outside content returned, a file created or
changed outside, or a success reported for a file that is not inside the root.

As a probe (escape counts per operation, for comparing two checkouts)::

    python tests/plugins/workspace/races.py --seconds 10
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs
from taskctx_workspace import FileRef, FileResult, StagedFile, TaskWorkspace

from taskctx import PluginHost
from taskctx.errors import TaskCtxError

INSIDE = b"inside\n"
OUTSIDE = b"OUTSIDE\n"
OPERATIONS = ("read", "write", "promote", "list", "stamps")
MIXED = ("read", "write", "read", "promote", "read", "list", "read", "stamps")
"""The default mix: reads are cheap, so they come between every other operation."""

SWAPPER = textwrap.dedent(
    """
    import os, sys, time

    seconds, ready, outside, *folders = sys.argv[1:]
    end = time.monotonic() + float(seconds)
    swaps = strays = 0

    def restore(folder):
        global strays
        away = folder + ".away"
        for _ in range(1000):
            try:
                os.rename(away, folder)
                return
            except OSError:
                pass
            try:  # the workspace made a new folder in the gap: move it aside, inside
                if os.path.islink(folder):
                    os.unlink(folder)
                else:
                    os.rename(folder, f"{folder}.stray{strays}")
                    strays += 1
            except OSError:
                pass
        raise SystemExit(f"could not restore {folder}")

    open(ready, "w").close()
    while time.monotonic() < end:
        for folder in folders:
            try:
                os.rename(folder, folder + ".away")
            except OSError:
                continue
            try:
                os.symlink(outside, folder)
                os.unlink(folder)
            except OSError:
                pass
            restore(folder)
            swaps += 1
    print(swaps, strays)
    """
)


@attrs.define
class Tally:
    """What the operations under attack did."""

    outcomes: Counter[str] = attrs.field(factory=Counter)
    escapes: list[str] = attrs.field(factory=list)
    unclear: list[str] = attrs.field(factory=list)
    written: list[tuple[str, bytes]] = attrs.field(factory=list)
    swaps: int = 0

    def run(self, name: str, operation: Callable[[], object]) -> object | None:
        """Run one operation; count it as done, refused (a TaskCtxError) or unclear."""
        try:
            result = operation()
        except TaskCtxError:
            self.outcomes[f"{name} refused"] += 1
            return None
        except Exception as exc:
            self.unclear.append(f"{name}: {type(exc).__name__}: {exc}")
            return None
        self.outcomes[f"{name} done"] += 1
        return result

    def count(self, suffix: str) -> int:
        """How many operations ended ``done`` or ``refused``."""
        return sum(n for key, n in self.outcomes.items() if key.endswith(suffix))

    def summary(self) -> str:
        """Counts, escapes and unclear errors, for a failure message."""
        return (
            f"{self.swaps} swaps, {dict(self.outcomes)}; {len(self.escapes)} escapes "
            f"{self.escapes[:5]}; {len(self.unclear)} unclear errors {self.unclear[:5]}"
        )


Work = Callable[[Tally, int], None]


@attrs.define
class Scenario:
    """A tree under attack: the folders swapped and the work done meanwhile."""

    root: Path
    outside: Path
    folders: list[Path]
    work: Work
    outside_files: dict[str, bytes]


def _outside(base: Path, extra: Sequence[str] = ()) -> Path:
    outside = base / "outside"
    outside.mkdir()
    for name in ("f.txt", "secret.txt", *extra):
        (outside / name).parent.mkdir(parents=True, exist_ok=True)
        (outside / name).write_bytes(OUTSIDE)
    return outside


def _snapshot(folder: Path) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for where, _, names in os.walk(folder, followlinks=False):
        for name in names:
            path = Path(where) / name
            files[path.relative_to(folder).as_posix()] = path.read_bytes()
    return files


def read(ws: TaskWorkspace, path: str, origin: str = "auto") -> Work:
    """Read ``path``; anything but the inside bytes is an escape."""

    def work(tally: Tally, i: int) -> None:
        result = tally.run("read", lambda: ws.read_file(path, origin=origin))  # type: ignore[arg-type]
        if isinstance(result, FileResult) and result.text != INSIDE.decode():
            tally.escapes.append(f"read {path} returned {result.text!r}")

    return work


def write(ws: TaskWorkspace, folder: str) -> Work:
    """Write a new file in ``folder``; a reported success must be inside the root."""

    def work(tally: Tally, i: int) -> None:
        data = f"written {i}\n".encode()
        if tally.run("write", lambda: ws.write_file(f"{folder}/w{i}.txt", data)) is not None:
            tally.written.append((f"w{i}.txt", data))

    return work


def promote(ws: TaskWorkspace, staged_folder: str, folder: str) -> Work:
    """Stage a candidate in ``staged_folder`` and promote it into ``folder``."""

    def work(tally: Tally, i: int) -> None:
        data = f"promoted {i}\n".encode()
        staged = tally.run("stage", lambda: ws.stage(f"{staged_folder}s{i}.txt", data))
        if not isinstance(staged, StagedFile):
            return
        target = f"{folder}/p{i}.txt"
        ref = tally.run("promote", lambda: ws.promote(staged, target, staged.sha256))
        if isinstance(ref, FileRef):
            tally.written.append((f"p{i}.txt", data))

    return work


def listing(ws: TaskWorkspace) -> Work:
    """List every file; an outside name or outside bytes listed is an escape."""
    outside_digest = hashlib.sha256(OUTSIDE).hexdigest()

    def work(tally: Tally, i: int) -> None:
        entries = tally.run("list", lambda: ws.list_files(include_hidden=True))
        for entry in entries if isinstance(entries, list) else []:
            if entry.path.endswith("secret.txt") or entry.sha256 == outside_digest:
                tally.escapes.append(f"list_files showed {entry.path}")

    return work


def stamps(ws: TaskWorkspace) -> Work:
    """The stat walk of revisions; an outside name seen is an escape."""

    def work(tally: Tally, i: int) -> None:
        found = tally.run("stamps", ws.stamps)
        for path in found if isinstance(found, dict) else {}:
            if path.endswith("secret.txt"):
                tally.escapes.append(f"stamps() saw {path}")

    return work


def _round_robin(works: Sequence[Work]) -> Work:
    def work(tally: Tally, i: int) -> None:
        works[i % len(works)](tally, i)

    return work


def root_child(base: Path, operations: Sequence[str] = MIXED) -> Scenario:
    """The issue's example: ``d`` (a folder of the root) swapped; ``d/f.txt`` read."""
    outside = _outside(base)
    root = base / "ws"
    (root / "d").mkdir(parents=True)
    (root / "d" / "f.txt").write_bytes(INSIDE)
    ws = TaskWorkspace(root, mode="read_write", host=PluginHost(allow=[]))
    table: dict[str, Work] = {
        "read": read(ws, "d/f.txt"),
        "write": write(ws, "d"),
        "promote": promote(ws, "", "d"),
        "list": listing(ws),
        "stamps": stamps(ws),
    }
    works = [table[name] for name in operations]
    return Scenario(root, outside, [root / "d"], _round_robin(works), _snapshot(outside))


def middle_folder(base: Path, operations: Sequence[str] = MIXED) -> Scenario:
    """``a/b`` swapped while ``a/b/c/f.txt`` is read and ``a/b/c/`` written."""
    outside = _outside(base, ["c/f.txt"])
    root = base / "ws"
    (root / "a" / "b" / "c").mkdir(parents=True)
    (root / "a" / "b" / "c" / "f.txt").write_bytes(INSIDE)
    ws = TaskWorkspace(root, mode="read_write", host=PluginHost(allow=[]))
    table: dict[str, Work] = {
        "read": read(ws, "a/b/c/f.txt"),
        "write": write(ws, "a/b/c"),
        "promote": promote(ws, "", "a/b/c"),
        "list": listing(ws),
        "stamps": stamps(ws),
    }
    works = [table[name] for name in operations]
    return Scenario(root, outside, [root / "a" / "b"], _round_robin(works), _snapshot(outside))


def state_areas(
    base: Path, operations: Sequence[str] = ("read", "write", "read", "promote")
) -> Scenario:
    """Read-only mode: ``d`` in this execution's fallback and staging areas swapped."""
    outside = _outside(base)
    root = base / "ws"
    root.mkdir()
    ws = TaskWorkspace(root, execution_id="run", host=PluginHost(allow=[]))
    ws.write_file("d/f.txt", INSIDE)  # .taskctx/files/run/d/f.txt
    ws.stage("d/first.txt", b"first")  # .taskctx/staged/run/d/
    state = root / ".taskctx"
    table: dict[str, Work] = {
        "read": read(ws, "d/f.txt", origin="fallback"),
        "write": write(ws, "d"),
        "promote": promote(ws, "d/", "d"),
    }
    works = [table[name] for name in operations]
    folders = [state / "files" / "run" / "d", state / "staged" / "run" / "d"]
    return Scenario(root, outside, folders, _round_robin(works), _snapshot(outside))


def attack(scenario: Scenario, seconds: float) -> Tally:
    """Run the scenario's work while the swapper attacks for ``seconds``; check the result."""
    tally = Tally()
    ready = scenario.root.parent / "swapper-ready"
    folders = [str(folder) for folder in scenario.folders]
    swapper = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, str(seconds), str(ready), str(scenario.outside), *folders],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.005)
    i = 0
    while swapper.poll() is None:
        scenario.work(tally, i)
        i += 1
    out, err = swapper.communicate(timeout=30)
    if swapper.returncode != 0:
        raise RuntimeError(f"the swapper failed: {err.decode()}")
    tally.swaps = int(out.split()[0])
    inside = _snapshot(scenario.root)
    by_name: dict[str, set[bytes]] = {}
    for path, data in inside.items():
        by_name.setdefault(path.rsplit("/", 1)[-1], set()).add(data)
    for name, data in tally.written:
        if data not in by_name.get(name, set()):
            tally.escapes.append(f"{name} reported written but is not inside the root")
    after = _snapshot(scenario.outside)
    for path in sorted(set(after) | set(scenario.outside_files)):
        if after.get(path) != scenario.outside_files.get(path):
            tally.escapes.append(f"outside file {path} created or changed")
    return tally


def main(argv: Sequence[str] | None = None) -> None:
    """Print, per scenario and operation, how many operations escaped the root."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args(argv)
    scenarios = {"root_child": root_child, "middle_folder": middle_folder, "state": state_areas}
    for label, make in scenarios.items():
        operations = ("read", "write", "promote") if label == "state" else OPERATIONS
        for operation in operations:
            with tempfile.TemporaryDirectory() as folder:
                tally = attack(make(Path(folder), [operation]), args.seconds)
            done, refused = tally.count("done"), tally.count("refused")
            print(
                f"{label:13} {operation:8} {done + refused + len(tally.unclear):6} ops "
                f"({done} done, {refused} refused, {len(tally.unclear)} unclear errors): "
                f"{len(tally.escapes)} escapes",
                flush=True,
            )


if __name__ == "__main__":
    main()
