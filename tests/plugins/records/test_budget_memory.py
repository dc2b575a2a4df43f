"""The materialization budget raises in default mode only when memory is tight in a command line."""

from __future__ import annotations

import contextlib
import functools
import warnings
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from taskctx_records import MaterializationWarning, RecordStore
from taskctx_records.budget import (
    RECORD_COST_ESTIMATE,
    MaterializationBudget,
    MemoryProbe,
    available_memory,
    memory_tight,
)

from taskctx.cli import as_command, command_running, main
from taskctx.errors import MaterializationBudgetError

LIMIT = 10
OVER = 20  # records one query expands: over LIMIT


def _meminfo(folder: Path, available_kb: int | None) -> Path:
    """A real /proc/meminfo-shaped file (no MemAvailable line when None)."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["MemTotal:       16384000 kB", "MemFree:          100000 kB"]
    if available_kb is not None:
        lines.append(f"MemAvailable:   {available_kb:>8} kB")
    path = folder / "meminfo"
    path.write_text("\n".join(lines) + "\n", encoding="ascii")
    return path


def _probe(tmp_path: Path, available_bytes: int) -> MemoryProbe:
    """available_memory over files of a machine with ``available_bytes`` free, no cgroup."""
    meminfo = _meminfo(tmp_path / "proc", available_bytes // 1024)
    return functools.partial(
        available_memory,
        meminfo=meminfo,
        cgroup_root=tmp_path / "no-cgroup",
        self_cgroup=tmp_path / "no-self-cgroup",
    )


def _tight(tmp_path: Path) -> MemoryProbe:
    """Less memory left than OVER records are estimated to cost."""
    return _probe(tmp_path, OVER * RECORD_COST_ESTIMATE // 2)


def _roomy(tmp_path: Path) -> MemoryProbe:
    """Far more memory left than OVER records are estimated to cost."""
    return _probe(tmp_path, OVER * RECORD_COST_ESTIMATE * 1000)


def _store(root: Path | str, probe: MemoryProbe, *, strict: bool = False) -> RecordStore:
    store = RecordStore(root, materialization_limit=LIMIT, strict=strict, memory_probe=probe)
    store.put_many([{"content": f"r{i}", "collection": "c"} for i in range(30)])
    return store


def test_default_tight_command_line_raises(tmp_path: Path, store_root: Path | str) -> None:
    """Default mode, memory tight, a taskctx command running: MaterializationBudgetError."""
    store = _store(store_root, _tight(tmp_path))
    with as_command(), pytest.raises(MaterializationBudgetError, match="memory is tight"):
        store.query(page_size=OVER)
    with as_command(), pytest.raises(MaterializationBudgetError, match="command-line process"):
        store.iter_visible(None, None, store.revision, limit=OVER)
    assert store.materialization_events == []


def test_default_tight_library_warns(tmp_path: Path, store_root: Path | str) -> None:
    """Default mode, memory tight, no command running (a library): a warning, and results."""
    store = _store(store_root, _tight(tmp_path))
    assert not command_running()
    with pytest.warns(MaterializationWarning, match="materialization budget"):
        page = store.query(page_size=OVER)
    assert len(page.records) == OVER
    assert [event.count for event in store.materialization_events] == [OVER]


def test_default_roomy_command_line_warns(tmp_path: Path, store_root: Path | str) -> None:
    """Default mode, memory not tight, a command running: a warning, and results."""
    store = _store(store_root, _roomy(tmp_path))
    with as_command(), pytest.warns(MaterializationWarning):
        page = store.query(page_size=OVER)
    assert len(page.records) == OVER
    assert len(store.materialization_events) == 1


@pytest.mark.parametrize("command", [True, False], ids=["command-line", "library"])
@pytest.mark.parametrize("memory", ["tight", "roomy"])
def test_strict_raises_always(
    tmp_path: Path, store_root: Path | str, command: bool, memory: str
) -> None:
    """Strict mode raises whatever the memory and whoever the caller."""
    probe = _tight(tmp_path) if memory == "tight" else _roomy(tmp_path)
    store = _store(store_root, probe, strict=True)
    context = as_command() if command else contextlib.nullcontext()
    with context, pytest.raises(MaterializationBudgetError, match="strict mode"):
        store.query(page_size=OVER)


def test_within_the_limit_nothing_is_asked(tmp_path: Path) -> None:
    """Under the limit neither probe is called, even in a command with tight memory."""
    asked: list[str] = []

    def memory() -> int | None:
        asked.append("memory")
        return 0

    def command_line() -> bool:
        asked.append("command_line")
        return True

    budget = MaterializationBudget(LIMIT, memory=memory, command_line=command_line)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        budget.charge("query", LIMIT)
    assert asked == []


def test_unknown_memory_is_not_tight(tmp_path: Path, store_root: Path | str) -> None:
    """When nothing can be read (no /proc), memory is not known to be tight: it warns."""
    probe = functools.partial(
        available_memory,
        meminfo=tmp_path / "absent",
        cgroup_root=tmp_path / "absent-cgroup",
        self_cgroup=tmp_path / "absent-self",
    )
    assert probe() is None
    assert not memory_tight(10**9, None)
    store = _store(store_root, probe)
    with as_command(), pytest.warns(MaterializationWarning):
        store.query(page_size=OVER)


def test_tight_is_available_below_the_estimated_cost() -> None:
    """Tight means less memory available than count * RECORD_COST_ESTIMATE bytes."""
    cost = OVER * RECORD_COST_ESTIMATE
    assert memory_tight(OVER, cost - 1)
    assert not memory_tight(OVER, cost)
    assert RECORD_COST_ESTIMATE == 8 * 1024


def test_meminfo_available_is_read(tmp_path: Path) -> None:
    """MemAvailable (kB) is what a host without a memory cgroup has left; absent line: None."""
    meminfo = _meminfo(tmp_path / "a", 2048)
    nothing = tmp_path / "none"
    assert available_memory(meminfo=meminfo, cgroup_root=nothing, self_cgroup=nothing) == 2 << 20
    no_line = _meminfo(tmp_path / "b", None)
    assert available_memory(meminfo=no_line, cgroup_root=nothing, self_cgroup=nothing) is None
    garbage = tmp_path / "garbage"
    garbage.write_bytes(b"\xff\xfeMemAvailable: lots\n")
    assert available_memory(meminfo=garbage, cgroup_root=nothing, self_cgroup=nothing) is None


def _write(folder: Path, **files: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name.replace("_", ".", 1)).write_text(text + "\n", encoding="ascii")


def test_cgroup_v2_headroom_counts_and_the_least_wins(tmp_path: Path) -> None:
    """cgroup v2: memory.max - memory.current of the cgroup or an ancestor, when least."""
    root = tmp_path / "cgroup"
    _write(root, cgroup_controllers="memory pids")
    _write(root / "app", memory_max="max", memory_current="100")
    _write(root / "app" / "worker", memory_max=str(5 << 20), memory_current=str(1 << 20))
    self_cgroup = tmp_path / "self"
    self_cgroup.write_text("0::/app/worker\n", encoding="ascii")
    meminfo = _meminfo(tmp_path / "proc", 1 << 20)  # 1 GiB
    got = available_memory(meminfo=meminfo, cgroup_root=root, self_cgroup=self_cgroup)
    assert got == 4 << 20
    _write(root / "app", memory_max=str(3 << 20), memory_current=str(1 << 20))
    got = available_memory(meminfo=meminfo, cgroup_root=root, self_cgroup=self_cgroup)
    assert got == 2 << 20
    _write(root / "app" / "worker", memory_max=str(1 << 20), memory_current=str(2 << 20))
    got = available_memory(meminfo=meminfo, cgroup_root=root, self_cgroup=self_cgroup)
    assert got == 0  # over its limit: nothing left, never negative


def test_cgroup_v1_headroom_counts_and_unlimited_is_ignored(tmp_path: Path) -> None:
    """cgroup v1: memory.limit_in_bytes - usage_in_bytes; the 'no limit' number is ignored."""
    root = tmp_path / "cgroup"
    member = root / "memory" / "job"
    _write(member, memory_limit_in_bytes=str(8 << 20), memory_usage_in_bytes=str(2 << 20))
    _write(root / "memory", memory_limit_in_bytes="9223372036854771712", memory_usage_in_bytes="1")
    self_cgroup = tmp_path / "self"
    self_cgroup.write_text("4:memory:/job\n3:cpu,cpuacct:/\n0::/\n", encoding="ascii")
    meminfo = _meminfo(tmp_path / "proc", 1 << 20)
    got = available_memory(meminfo=meminfo, cgroup_root=root, self_cgroup=self_cgroup)
    assert got == 6 << 20
    member_unlimited = root / "memory" / "job"
    _write(member_unlimited, memory_limit_in_bytes="9223372036854771712")
    got = available_memory(meminfo=meminfo, cgroup_root=root, self_cgroup=self_cgroup)
    assert got == 1 << 30


def test_this_machine_answers_a_number_or_none() -> None:
    """On this machine the default probe reads what it can: a byte count or None."""
    got = available_memory()
    assert got is None or got >= 0


def test_the_taskctx_command_is_a_command_line_process() -> None:
    """main() marks the process as a command line while a command runs, and only then."""
    seen: list[bool] = []

    @click.command("probe-command-line")
    def probe() -> None:
        seen.append(command_running())

    main.add_command(probe)
    try:
        result = CliRunner().invoke(main, ["probe-command-line"], env={"TASKCTX_LOAD_PLUGINS": ""})
    finally:
        main.commands.pop("probe-command-line")
    assert result.exit_code == 0, result.output
    assert seen == [True]
    assert not command_running()


def test_records_command_over_budget_with_room_warns_and_answers(store_root: Path | str) -> None:
    """`taskctx records query` past the default limit with memory to spare answers (warns)."""
    store = RecordStore(store_root)
    store.put("one", collection="c")
    store.close()
    with pytest.warns(MaterializationWarning):
        result = CliRunner().invoke(
            main,
            ["records", "query", "--root", str(store_root), "--page-size", "50001"],
            env={"TASKCTX_LOAD_PLUGINS": "taskctx-records,taskctx-postgres"},
        )
    assert result.exit_code == 0, result.output
    assert '"one"' in result.output
